// kax/exec/host_gemm.hpp — batched GEMM on host memory through Eigen's GEMM.
//
// Eigen's GEMM (cache-blocked, packed, vectorized, OpenMP-parallel when compiled with -fopenmp)
// is what kax's host contractions call; kax depends on Eigen anyway.  Every batch is
// C = A * B with C column-major (rows M contiguous); A and B may be column- or row-major.  Many
// small batches run in parallel, one Eigen call per batch (Eigen then stays single-threaded
// inside the parallel region); few large ones run one after another, each multithreaded, except
// on a host device's thread (pmap, shard_map, jit), where Kokkos runs kernels inline on that one
// thread and the GEMM stays on it too (Eigen would open an OpenMP team of its own per device,
// oversubscribing the cores).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include <Eigen/Core>
#include <Kokkos_Core.hpp>

#include "kax/core/config.hpp"
#include "kax/core/extents.hpp"
#include "kax/core/detail/simd_warnings_off.hpp"  // after every other include

namespace kax::detail {

inline constexpr std::size_t gemm_max_batch_rank = 16;

// One strided matrix per batch: element (r, c) at data[batch_offset + r * rs + c * cs].
template <class T>
struct gemm_matrix {
  const T* data = nullptr;
  std::ptrdiff_t rs = 0, cs = 0;
  std::ptrdiff_t batch_stride[gemm_max_batch_rank]{};
};

template <class T>
struct gemm_problem {
  gemm_matrix<T> a, b;       // a: M x K, b: K x N
  T* c = nullptr;            // M x N, c[m * c_rs + n * c_cs], c_rs == 1 (column-major)
  std::ptrdiff_t c_cs = 0;
  std::ptrdiff_t c_batch_stride[gemm_max_batch_rank]{};
  std::size_t m = 1, n = 1, k = 1;
  std::size_t batch_rank = 0;
  std::size_t batch_ext[gemm_max_batch_rank]{};
  std::size_t batches = 1;
};

// True when a matrix can be handed to Eigen in place: one of its strides is 1.
template <class T>
bool gemm_direct(const gemm_matrix<T>& x, std::size_t rows, std::size_t cols) {
  return x.cs == 1 || x.rs == 1 || rows == 1 || cols == 1;
}

template <class T>
using eigen_col_map = Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>, 0, Eigen::OuterStride<>>;

// Calls f with `x` as an Eigen expression of shape rows x cols (a map or a transposed map).
template <class T, class F>
void with_eigen_matrix(const T* p, std::ptrdiff_t rs, std::ptrdiff_t cs, std::size_t rows,
                       std::size_t cols, F&& f) {
  const auto r = static_cast<Eigen::Index>(rows), c = static_cast<Eigen::Index>(cols);
  if (rs == 1 || rows == 1) {
    f(eigen_col_map<T>(p, r, c, Eigen::OuterStride<>(cols == 1 ? std::max<std::ptrdiff_t>(r, 1) : cs)));
  } else {
    // Row-major: its transpose is column-major with outer stride rs.
    f(eigen_col_map<T>(p, c, r, Eigen::OuterStride<>(rows == 1 ? std::max<std::ptrdiff_t>(c, 1) : rs)).transpose());
  }
}

// Matrices this small (vmap of an 8x8 matmul) lose most of their time in a dynamic-size Eigen
// GEMM call's setup (blocking, packing); a direct loop is 3-5x faster there.
inline constexpr std::size_t gemm_small_extent = 16;

// C = A B for one small batch with M (<= gemm_small_extent) rows known at compile time: each
// column of C accumulates in registers over the columns of A (a load-add-store of C per term
// would chain every term through memory).
template <std::size_t M, bool UnitRows, class T>
void small_gemm_columns(const T* a, std::ptrdiff_t a_rs, std::ptrdiff_t a_cs, const T* b, std::ptrdiff_t b_rs,
                        std::ptrdiff_t b_cs, T* c, std::ptrdiff_t c_cs, std::size_t n, std::size_t k) {
  for (std::size_t j = 0; j < n; ++j) {
    T acc[M] = {};
    const T* bj = b + static_cast<std::ptrdiff_t>(j) * b_cs;
    for (std::size_t l = 0; l < k; ++l) {
      const T blj = bj[static_cast<std::ptrdiff_t>(l) * b_rs];
      const T* al = a + static_cast<std::ptrdiff_t>(l) * a_cs;
#pragma omp simd
      for (std::size_t i = 0; i < M; ++i) acc[i] += al[UnitRows ? i : static_cast<std::ptrdiff_t>(i) * a_rs] * blj;
    }
    T* cj = c + static_cast<std::ptrdiff_t>(j) * c_cs;
#pragma omp simd
    for (std::size_t i = 0; i < M; ++i) cj[i] = acc[i];
  }
}

// The same for a square M x M x M product with A's columns contiguous (vmap of an 8x8 matmul):
// with every extent known the loops unroll completely, so the M columns of C are independent
// accumulation chains the core overlaps, where the runtime-extent loop above runs them one after
// another (with the runs of batches below, bench_vmap's bmm case went from 0.5x to 1.1x a
// hand-written loop; docs/performance.md).
template <std::size_t M, class T>
void small_gemm_square(const T* __restrict__ a, std::ptrdiff_t a_cs, const T* __restrict__ b, std::ptrdiff_t b_rs,
                       std::ptrdiff_t b_cs, T* __restrict__ c, std::ptrdiff_t c_cs) {
  T acc[M][M] = {};
  for (std::size_t l = 0; l < M; ++l) {
    const T* al = a + static_cast<std::ptrdiff_t>(l) * a_cs;
    for (std::size_t j = 0; j < M; ++j) {
      const T blj = b[static_cast<std::ptrdiff_t>(l) * b_rs + static_cast<std::ptrdiff_t>(j) * b_cs];
#pragma omp simd
      for (std::size_t i = 0; i < M; ++i) acc[j][i] += al[i] * blj;
    }
  }
  for (std::size_t j = 0; j < M; ++j) {
    T* cj = c + static_cast<std::ptrdiff_t>(j) * c_cs;
#pragma omp simd
    for (std::size_t i = 0; i < M; ++i) cj[i] = acc[j][i];
  }
}

template <std::size_t M, class T>
void small_gemm(const T* a, std::ptrdiff_t a_rs, std::ptrdiff_t a_cs, const T* b, std::ptrdiff_t b_rs,
                std::ptrdiff_t b_cs, T* c, std::ptrdiff_t c_cs, std::size_t n, std::size_t k) {
  if (a_rs == 1 && n == M && k == M) small_gemm_square<M>(a, a_cs, b, b_rs, b_cs, c, c_cs);
  else if (a_rs == 1) small_gemm_columns<M, true>(a, a_rs, a_cs, b, b_rs, b_cs, c, c_cs, n, k);
  else small_gemm_columns<M, false>(a, a_rs, a_cs, b, b_rs, b_cs, c, c_cs, n, k);
}

template <class T>
using small_gemm_fn = void (*)(const T*, std::ptrdiff_t, std::ptrdiff_t, const T*, std::ptrdiff_t, std::ptrdiff_t,
                               T*, std::ptrdiff_t, std::size_t, std::size_t);

// Whether g runs through small_gemm (callers return first when m == 0: nothing to compute).
template <class T>
bool gemm_is_small(const gemm_problem<T>& g) {
  return g.m <= gemm_small_extent && g.n <= gemm_small_extent && g.k <= gemm_small_extent;
}

// small_gemm<M> for M = 1 .. gemm_small_extent, indexed by M - 1.
template <class T, std::size_t... I>
constexpr std::array<small_gemm_fn<T>, sizeof...(I)> small_gemm_table(std::index_sequence<I...>) {
  return {&small_gemm<I + 1, T>...};
}

// Batches [b0, b1) of a small GEMM with one batch axis, small_gemm<M> inlined into the loop (one
// indirect call per run of batches, not per batch: at 8x8 a batch is ~80 cycles).
template <std::size_t M, class T>
void small_gemm_batches(const gemm_problem<T>& g, std::size_t b0, std::size_t b1) {
  const std::ptrdiff_t sa = g.a.batch_stride[0], sb = g.b.batch_stride[0], sc = g.c_batch_stride[0];
  for (std::size_t b = b0; b < b1; ++b) {
    const auto i = static_cast<std::ptrdiff_t>(b);
    small_gemm<M>(g.a.data + i * sa, g.a.rs, g.a.cs, g.b.data + i * sb, g.b.rs, g.b.cs, g.c + i * sc, g.c_cs, g.n, g.k);
  }
}

template <class T>
using small_gemm_batches_fn = void (*)(const gemm_problem<T>&, std::size_t, std::size_t);

template <class T, std::size_t... I>
constexpr std::array<small_gemm_batches_fn<T>, sizeof...(I)> small_gemm_batches_table(std::index_sequence<I...>) {
  return {&small_gemm_batches<I + 1, T>...};
}

// C = A B on the calling thread alone, whatever Eigen::nbThreads() says: Eigen's GEMM kernel, as
// its product runs it on one thread (Eigen::internal: parallelize_gemm would open an OpenMP team).
// The kernel's signature is Eigen 3.4's; older Eigens take the Map path, which may open a team.
#if EIGEN_VERSION_AT_LEAST(3, 4, 0)
inline constexpr bool eigen_single_thread_kernel = true;
#else
inline constexpr bool eigen_single_thread_kernel = false;
#endif

// C = 0 for a column-major C with leading dimension ldc: a memset per column, where Eigen's
// setZero on a Map with an outer stride runs its generic assignment loop (2.5x the time in the
// training bench's GEMMs; Eigen's own products zero a plain matrix with memset).
template <class T>
void zero_columns(T* c, std::ptrdiff_t ldc, std::ptrdiff_t m, std::ptrdiff_t n) {
  if (ldc == m) std::fill_n(c, m * n, T(0));
  else
    for (std::ptrdiff_t j = 0; j < n; ++j) std::fill_n(c + j * ldc, m, T(0));
}

template <int LhsOrder, int RhsOrder, class T>
void eigen_gemm_one_thread(const T* a, std::ptrdiff_t lda, const T* b, std::ptrdiff_t ldb, T* c, std::ptrdiff_t ldc,
                           Eigen::Index m, Eigen::Index n, Eigen::Index k) {
#if EIGEN_VERSION_AT_LEAST(3, 4, 0)
  namespace ei = Eigen::internal;
  zero_columns(c, ldc, m, n);  // run() accumulates: C += A B
  ei::gemm_blocking_space<Eigen::ColMajor, T, T, Eigen::Dynamic, Eigen::Dynamic, Eigen::Dynamic> blocking(m, n, k, 1, true);
  ei::general_matrix_matrix_product<Eigen::Index, T, LhsOrder, false, T, RhsOrder, false, Eigen::ColMajor, 1>::run(
      m, n, k, a, lda, b, ldb, c, 1, ldc, T(1), blocking, nullptr);
#else
  (void)a, (void)lda, (void)b, (void)ldb, (void)c, (void)ldc, (void)m, (void)n, (void)k;
#endif
}

// Offsets of batch `batch`'s A, B and C from their data pointers.
template <class T>
std::array<std::ptrdiff_t, 3> gemm_batch_offsets(const gemm_problem<T>& g, std::size_t batch) {
  std::array<std::ptrdiff_t, 3> o{};
  for (std::size_t d = g.batch_rank; d-- > 0;) {
    const auto i = static_cast<std::ptrdiff_t>(batch % g.batch_ext[d]);
    batch /= g.batch_ext[d];
    o[0] += i * g.a.batch_stride[d];
    o[1] += i * g.b.batch_stride[d];
    o[2] += i * g.c_batch_stride[d];
  }
  return o;
}

// C = A B for one batch.  one_thread: Eigen's single-thread kernel where it applies (inside a
// parallel region, or inline on a host device's thread); c_zeroed: C is zero already.
template <class T>
void gemm_batch(const gemm_problem<T>& g, std::size_t batch, bool one_thread = false, bool c_zeroed = false) {
  // Plain variables, not a structured binding: the lambdas below capture them (clang before 16
  // rejects capturing a binding).
  const std::array<std::ptrdiff_t, 3> off = gemm_batch_offsets(g, batch);
  const std::ptrdiff_t oa = off[0], ob = off[1], oc = off[2];
  if (g.m == 0) return;
  if (gemm_is_small(g)) {
    static constexpr auto table = small_gemm_table<T>(std::make_index_sequence<gemm_small_extent>{});
    table[g.m - 1](g.a.data + oa, g.a.rs, g.a.cs, g.b.data + ob, g.b.rs, g.b.cs, g.c + oc, g.c_cs, g.n, g.k);
    return;
  }
  const auto m = static_cast<Eigen::Index>(g.m), n = static_cast<Eigen::Index>(g.n);
  if (eigen_single_thread_kernel && one_thread && g.k > 0 && g.m > 1 && g.n > 1 && (g.a.rs == 1 || g.a.cs == 1) && (g.b.rs == 1 || g.b.cs == 1)) {
    const auto k = static_cast<Eigen::Index>(g.k);
    const T* pa = g.a.data + oa;
    const T* pb = g.b.data + ob;
    const bool ac = g.a.rs == 1, bc = g.b.rs == 1;
    if (ac && bc) eigen_gemm_one_thread<Eigen::ColMajor, Eigen::ColMajor>(pa, g.a.cs, pb, g.b.cs, g.c + oc, g.c_cs, m, n, k);
    else if (ac) eigen_gemm_one_thread<Eigen::ColMajor, Eigen::RowMajor>(pa, g.a.cs, pb, g.b.rs, g.c + oc, g.c_cs, m, n, k);
    else if (bc) eigen_gemm_one_thread<Eigen::RowMajor, Eigen::ColMajor>(pa, g.a.rs, pb, g.b.cs, g.c + oc, g.c_cs, m, n, k);
    else eigen_gemm_one_thread<Eigen::RowMajor, Eigen::RowMajor>(pa, g.a.rs, pb, g.b.rs, g.c + oc, g.c_cs, m, n, k);
    return;
  }
  Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>, 0, Eigen::OuterStride<>> c(
      g.c + oc, m, n, Eigen::OuterStride<>(g.n == 1 ? std::max<Eigen::Index>(m, 1) : g.c_cs));
  with_eigen_matrix(g.a.data + oa, g.a.rs, g.a.cs, g.m, g.k, [&](const auto& a) {
    with_eigen_matrix(g.b.data + ob, g.b.rs, g.b.cs, g.k, g.n, [&](const auto& b) {
      if (!c_zeroed) zero_columns(c.data(), c.outerStride(), m, n);
      if (g.k > 0) c.noalias() += a * b;
    });
  });
}

// Work item i: batches [i * per_item, (i + 1) * per_item).  Small GEMMs with one batch axis run
// through `small` (a run of batches per call); other batches one at a time, each on the thread
// that runs it: inside Kokkos' parallel region Eigen sees a team and stays on its thread anyway,
// but where the kernel runs inline (a host device's program) it would open a team per batch.
template <class T>
struct gemm_batch_kernel {
  gemm_problem<T> g;
  std::size_t per_item = 1;
  small_gemm_batches_fn<T> small = nullptr;

  void operator()(const std::int64_t i) const {
    const std::size_t b0 = static_cast<std::size_t>(i) * per_item, b1 = std::min(g.batches, b0 + per_item);
    if (small) small(g, b0, b1);
    else
      for (std::size_t b = b0; b < b1; ++b) gemm_batch(g, b, true);
  }
};

// Eigen's GEMM accumulates into C (C += A B), so C is zeroed first.  Eigen's own products zero it
// on the calling thread alone while the rest of the team waits: in the training bench (8 GEMMs of
// 256 x 512 x 512 a step) that memset was 2.9 % of all samples, every one on the calling thread,
// its partner spinning meanwhile.  kax zeroes a large C with the whole team instead, part t about
// the columns that Eigen's parallel GEMM then gives thread t (it splits C's columns evenly); the
// step went from 0.96x the hand-written Eigen step, which zeroes on one thread, to 1.02-1.04x
// (docs/performance.md).  A C smaller than gemm_parallel_zero_bytes is zeroed by the GEMM's
// caller: a kernel launch costs more than its memset.
inline constexpr std::size_t gemm_parallel_zero_bytes = std::size_t{128} << 10;

// Work item i zeroes part i % parts of batch i / parts's C: a contiguous C in equal runs of
// elements, a strided one in runs of columns.
template <class T>
struct gemm_zero_kernel {
  gemm_problem<T> g;
  std::size_t parts;

  void operator()(const std::int64_t i) const {
    const std::size_t batch = static_cast<std::size_t>(i) / parts, p = static_cast<std::size_t>(i) % parts;
    T* c = g.c + gemm_batch_offsets(g, batch)[2];
    const auto m = static_cast<std::ptrdiff_t>(g.m);
    if (g.n == 1 || g.c_cs == m) {
      const std::size_t total = g.m * g.n, lo = total * p / parts, hi = total * (p + 1) / parts;
      std::fill(c + lo, c + hi, T(0));
    } else {
      const std::size_t lo = g.n * p / parts, hi = g.n * (p + 1) / parts;
      zero_columns(c + static_cast<std::ptrdiff_t>(lo) * g.c_cs, g.c_cs, m, static_cast<std::ptrdiff_t>(hi - lo));
    }
  }
};

// Runs every batch of `g` on the host execution space `space`.
template <class ExecSpace, class T>
void run_gemm(const ExecSpace& space, const gemm_problem<T>& g) {
  if (g.batches == 0 || g.m == 0 || g.n == 0) return;
  const std::size_t flops = g.m * g.n * g.k;
  const auto conc = static_cast<std::size_t>(ExecSpace::concurrency());
  if (g.batches > 1 && (g.batches >= 4 * conc || flops < 64 * 64 * 64)) {
    gemm_batch_kernel<T> kernel{g};
    if (g.batch_rank == 1 && gemm_is_small(g)) {
      static constexpr auto table = small_gemm_batches_table<T>(std::make_index_sequence<gemm_small_extent>{});
      kernel.small = table[g.m - 1];
      // Runs of ~4096 output elements, at least four items per thread.
      kernel.per_item = std::clamp<std::size_t>(4096 / (g.m * g.n), 1, std::max<std::size_t>(1, g.batches / (4 * conc)));
    }
    const std::size_t items = (g.batches + kernel.per_item - 1) / kernel.per_item;
    Kokkos::parallel_for("kax::gemm<batched>",
                         Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(
                             space, 0, static_cast<std::int64_t>(items)),
                         kernel);
  } else {
    // Where Kokkos runs this thread's kernels inline on it alone (a host device's program under
    // pmap or shard_map, exec/host_tasks.hpp), the GEMM stays on it too.
    bool inline_here = false;
#if defined(KOKKOS_ENABLE_OPENMP)
    if constexpr (std::is_same_v<ExecSpace, Kokkos::OpenMP>) inline_here = Kokkos::OpenMP::in_parallel();
#endif
    const bool zero_here = !inline_here && conc > 1 && !gemm_is_small(g) &&
                           g.m * g.n * sizeof(T) >= gemm_parallel_zero_bytes;
    if (zero_here)
      Kokkos::parallel_for("kax::gemm<zero C>",
                           Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(
                               space, 0, static_cast<std::int64_t>(g.batches * conc)),
                           gemm_zero_kernel<T>{g, conc});
    for (std::size_t i = 0; i < g.batches; ++i) gemm_batch(g, i, inline_here, zero_here);
  }
}

// acc[l] += acc[l + S] for l < S, then S/2, ..., 1: the sum of 2S lanes in acc[0].
template <std::size_t S, class T>
[[gnu::always_inline]] inline void fold_lanes(T* acc) {
#pragma omp simd
  for (std::size_t l = 0; l < S; ++l) acc[l] += acc[l + S];
  if constexpr (S > 1) fold_lanes<S / 2>(acc);
}

// y[r * y_stride] = sum_j a[r * a_rs + j] * x[j] for r < m: a matrix-vector product whose matrix
// rows and vector are contiguous.  Rows are grouped ~4096 elements per work item; each row is
// reduced in L fixed lanes folded pairwise, then its tail, so the result does not depend on
// the thread count.
template <class T>
struct gemv_kernel {
  static constexpr std::size_t L = 128 / sizeof(T);  // two 64-byte vectors of accumulators
  const T* a;
  std::ptrdiff_t a_rs;
  const T* x;
  T* y;
  std::ptrdiff_t y_stride;
  std::size_t m, k, rows_per_item;

  void operator()(const std::int64_t w) const {
    const std::size_t r0 = static_cast<std::size_t>(w) * rows_per_item;
    const std::size_t r1 = std::min(m, r0 + rows_per_item);
    for (std::size_t r = r0; r < r1; ++r) row(r);
  }

  // The bytes of A one row reads.
  std::size_t row_bytes() const { return k * sizeof(T); }

  // Row r alone: also the batched row-dot stage of the row-fused plan (exec/batch_rows.hpp),
  // inlined into its kernel just before the row's output.
  [[gnu::always_inline]] inline void row(const std::size_t r) const {
    const T* __restrict__ xv = x;
    const T* __restrict__ ar = a + static_cast<std::ptrdiff_t>(r) * a_rs;
    T acc[L] = {};
    std::size_t j = 0;
    // Unrolled: each step issues the loads of four 128-byte blocks at once.  Same lanes, same
    // order of additions (the result does not change); the row-dots of the seed workload
    // (10000 x 256 float) ran 10-25 % faster.  nvcc's front end does not know the pragma.
#if !defined(__CUDACC__) && !defined(__HIPCC__)
#pragma GCC unroll 4
#endif
    for (; j + L <= k; j += L) {
#pragma omp simd
      for (std::size_t l = 0; l < L; ++l) acc[l] += ar[j + l] * xv[j + l];
    }
    // The lanes fold pairwise and the tail (k % L elements) sums apart, all with constant
    // indices: indexing acc by a run-time lane would keep it in memory, a store and reload per
    // step of the main loop.
    fold_lanes<L / 2>(acc);
    T sum = acc[0];
    if (j < k) {
#pragma omp simd reduction(+ : sum)
      for (std::size_t t = j; t < k; ++t) sum += ar[t] * xv[t];
    }
    y[static_cast<std::ptrdiff_t>(r) * y_stride] = sum;
  }
};

template <class ExecSpace, class T>
void run_gemv(const ExecSpace& space, const gemv_kernel<T>& kernel) {
  if (kernel.m == 0) return;
  const std::size_t items = (kernel.m + kernel.rows_per_item - 1) / kernel.rows_per_item;
  Kokkos::parallel_for("kax::gemv", Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(
                                        space, 0, static_cast<std::int64_t>(items)),
                       kernel);
}

}  // namespace kax::detail

#include "kax/core/detail/simd_warnings_on.hpp"
