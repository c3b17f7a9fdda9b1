// examples/vmap_batching.cpp — the seed's batched workload with kax::vmap.
//
// The function is written for ONE example (a vector x of D features and shared weights w):
//     process(x, w) = dot(x, w) + sin(x)
// and kax::vmap turns it into the batched function over X of shape (B, D), as jax.vmap does:
//     process_batch_vmap = vmap(process, in_axes=(0, None))
// vmap calls `process` once, on placeholders, and rewrites its expression graph with the batch
// axis in front: the batch runs as one matrix-vector stage and one fused elementwise kernel.
// The example also checks the result against the "manual batching" JAX users compare with (the
// same function, evaluated row by row) and against plain loops, and exits non-zero on a mismatch.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <tuple>

#include "kax/kax.hpp"

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char* argv[]) {
  kax::ScopeGuard guard(argc, argv);
  const std::size_t B = 10000, D = 256;

  // One example: x of shape (D,), w of shape (D,).
  auto process = [](auto x, auto w) { return kax::dot(x, w) + kax::sin(x); };
  auto process_batch_vmap = kax::vmap(process, kax::in_axes(0, kax::none));

  kax::Array<float, 2> X(B, D);
  kax::Array<float, 1> w(D);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t d = 0; d < D; ++d) X(b, d) = std::sin(0.001f * static_cast<float>(b * D + d));
  for (std::size_t d = 0; d < D; ++d) w(d) = 1.0f / static_cast<float>(d + 1);

  std::printf("plan of vmap(process, in_axes(0, none))(X, w), X (%zu, %zu):\n%s\n", B, D,
              kax::plan_of(process_batch_vmap(X, w)).c_str());

  kax::Array<float, 2> Y(B, D);
  Y = process_batch_vmap(X, w);  // warm-up (first touch of Y, thread pool)
  auto t0 = std::chrono::steady_clock::now();
  Y = process_batch_vmap(X, w);
  const double t_vmap = seconds_since(t0);

  // Manual batching: the same function, one row at a time (every 10th row; each evaluation is a
  // separate small launch, so this is slow: it is what vmap replaces).
  const std::size_t stride = 10;
  kax::Array<float, 2> Y_rows(B, D);
  t0 = std::chrono::steady_clock::now();
  for (std::size_t b = 0; b < B; b += stride) {
    const long r = static_cast<long>(b);
    kax::Array<float, 1> row = kax::reshape(kax::slice(X, {kax::range(r, r + 1), kax::colon}), {-1});
    kax::Array<float, 1> out = process(row, w);
    for (std::size_t d = 0; d < D; ++d) Y_rows(b, d) = out(d);
  }
  const double t_rows = seconds_since(t0) * static_cast<double>(stride);
  std::printf("vmap: %.2f ms; row-by-row loop: %.0f ms for all rows, extrapolated from every %zuth (%.0fx)\n",
              1e3 * t_vmap, 1e3 * t_rows, stride, t_rows / t_vmap);

  // Check against plain loops (double accumulation) and against the row-by-row result.
  double worst = 0;
  for (std::size_t b = 0; b < B; b += 10 * stride + 3 * stride) {
    double s = 0;
    for (std::size_t d = 0; d < D; ++d) s += double(X(b, d)) * w(d);
    for (std::size_t d = 0; d < D; ++d) {
      const double want = s + std::sin(double(X(b, d)));
      worst = std::fmax(worst, std::abs(Y(b, d) - want) / (1 + std::abs(want)));
      worst = std::fmax(worst, std::abs(Y(b, d) - Y_rows(b, d)) / (1 + std::abs(want)));
    }
  }
  std::printf("largest relative difference from the loops: %.2e\n", worst);

  // vmap composes: per-example statistics returned as a tuple, and a nested vmap (all pairwise
  // dot products of the first 4 rows, vmap(vmap(dot, (None, 0)), (0, None))).
  auto [row_norm, row_max] = kax::vmap([](auto x) { return std::make_tuple(kax::sqrt(kax::sum(x * x)), kax::max(x)); })(X);
  kax::Array<float, 1> norms = row_norm;
  kax::Array<float, 1> maxima = row_max;
  auto first4 = kax::slice(X, {kax::range(0, 4), kax::colon});
  auto pairwise = kax::vmap(kax::vmap([](auto a, auto b) { return kax::dot(a, b); }, kax::in_axes(kax::none, 0)),
                            kax::in_axes(0, kax::none));
  kax::Array<float, 2> gram = pairwise(first4, first4);
  std::printf("row 0: norm %.4f, max %.4f; gram(1, 2) = %.4f\n", norms(0), maxima(0), gram(1, 2));
  double g12 = 0, n0 = 0;
  for (std::size_t d = 0; d < D; ++d) {
    g12 += double(X(1, d)) * X(2, d);
    n0 += double(X(0, d)) * X(0, d);
  }

  // Centering each example: one batched reduction over rows of D >= 256 elements, which the
  // planner fuses with the subtraction into one kernel over blocks of batch rows.
  auto centered = kax::vmap([](auto x) { return x - kax::mean(x); })(X);
  std::printf("plan of vmap(x - mean(x))(X):\n%s\n", kax::plan_of(centered).c_str());
  kax::Array<float, 2> C = centered;
  double m7 = 0;
  for (std::size_t d = 0; d < D; ++d) m7 += X(7, d);
  m7 /= double(D);
  const bool centered_ok = std::abs(C(7, 3) - (X(7, 3) - m7)) < 1e-5;
  const bool ok = worst < 1e-5 && std::abs(gram(1, 2) - g12) < 1e-4 * (1 + std::abs(g12)) &&
                  std::abs(norms(0) - std::sqrt(n0)) < 1e-4 && centered_ok;
  std::printf("%s\n", ok ? "OK" : "MISMATCH");
  return ok ? 0 : 1;
}
