// bench/seed_baselines.hpp — the hand-written baselines of the "seed" workload, shared by
// bench_reductions.cpp and bench_vmap.cpp so both time the very same code:
//   y[b, :] = dot(x[b, :], w) + sin(x[b, :]),  x (seed_b, seed_d) float row-major, w (seed_d,)
// It holds the libmvec sinf alias, the Eigen row-major typedefs, per_thread_chunk, the two-phase
// OpenMP loop (seed_loops_2phase) and the Eigen row-block version (seed_eigen_rows, and
// seed_eigen_rows_omp over threads).
// Compile with -fopenmp and link libmvec (bench/meson.build does).
#pragma once

#include <omp.h>

#include <Eigen/Core>
#include <cstddef>

// glibc's libmvec sinf.  glibc declares its SIMD variants only under __FAST_MATH__; an alias of the
// same assembler symbol lets `omp simd` call _ZGVeN16v_sinf (IEEE-correct to 4 ulp) without
// -ffast-math — what a skilled engineer writes on this machine.
#pragma omp declare simd notinbranch
extern "C" float bench_mvec_sinf(float) noexcept __asm__("sinf");

namespace kax_bench {

inline constexpr std::size_t seed_b = 10000, seed_d = 256;

using eigen_rows_f = Eigen::Array<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using eigen_rows_map = Eigen::Map<eigen_rows_f>;
using eigen_rows_cmap = Eigen::Map<const eigen_rows_f>;
using eigen_mat_f = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Runs f(lo, len) on each OpenMP thread's contiguous chunk of [0, n).
template <class F>
void per_thread_chunk(std::size_t n, F&& f) {
#pragma omp parallel
  {
    const auto t = static_cast<std::size_t>(omp_get_thread_num());
    const auto nt = static_cast<std::size_t>(omp_get_num_threads());
    const std::size_t lo = n * t / nt;
    f(lo, n * (t + 1) / nt - lo);
  }
}

// Two phases: all row dots into s, a barrier, then all rows of y.
inline void seed_loops_2phase(const float* __restrict x, const float* __restrict w, float* __restrict s,
                              float* __restrict y) {
#pragma omp parallel
  {
#pragma omp for schedule(static)
    for (std::size_t b = 0; b < seed_b; ++b) {
      float acc = 0;
#pragma omp simd reduction(+ : acc)
      for (std::size_t d = 0; d < seed_d; ++d) acc += x[b * seed_d + d] * w[d];
      s[b] = acc;
    }
    // The implicit barrier above ends phase 1; the same static schedule gives each thread its own
    // rows again, so phase 2 reads rows that are still in its cache.
#pragma omp for schedule(static)
    for (std::size_t b = 0; b < seed_b; ++b) {
      const float sb = s[b];
#pragma omp simd
      for (std::size_t d = 0; d < seed_d; ++d) y[b * seed_d + d] = sb + bench_mvec_sinf(x[b * seed_d + d]);
    }
  }
}

// Eigen on `rows` rows starting at x / s / y: the matvec into s, then sin + column broadcast into y.
inline void seed_eigen_rows(const float* x, const float* w, float* s, float* y, std::size_t rows) {
  const auto r = static_cast<Eigen::Index>(rows), d = static_cast<Eigen::Index>(seed_d);
  const Eigen::Map<const eigen_mat_f> xx(x, r, d);
  const Eigen::Map<const Eigen::VectorXf> ww(w, d);
  Eigen::Map<Eigen::VectorXf> ss(s, r);
  ss.noalias() = xx * ww;
  eigen_rows_map(y, r, d) = xx.array().sin().colwise() + ss.array();
}

// seed_eigen_rows on every OpenMP thread's chunk of the seed_b rows.
inline void seed_eigen_rows_omp(const float* x, const float* w, float* s, float* y) {
  per_thread_chunk(seed_b, [&](std::size_t lo, std::size_t len) {
    seed_eigen_rows(x + lo * seed_d, w, s + lo, y + lo * seed_d, len);
  });
}

}  // namespace kax_bench
