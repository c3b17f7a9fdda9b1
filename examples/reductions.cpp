// examples/reductions.cpp — reductions, contractions and what the planner launches for them.
//
// The seed's per-example function is `dot(x, w) + sin(x)`; over a batch x of shape (B, D) with
// w of shape (D, 1) NumPy broadcasting gives the same (B, D) result.  Evaluating the dot once per
// output element would cost O(B·D²); kax computes it once (a matrix-vector product into a
// temporary of B floats) and fuses the rest into one kernel: O(B·D).
#include <cmath>
#include <cstdio>

#include "kax/kax.hpp"

int main(int argc, char* argv[]) {
  kax::ScopeGuard guard(argc, argv);

  // Reductions: all axes, some axes, keepdims, argmax.
  auto grid = kax::reshape(kax::arange<double>(12.0), {3, 4});  // [[0..3], [4..7], [8..11]]
  kax::Array<double, 0> total = kax::sum(grid);
  kax::Array<double, 1> col_means = kax::mean(grid, 0);
  kax::Array<double, 2> row_max = kax::max(grid, -1, kax::keepdims);
  kax::Array<std::int64_t, 1> where_max = kax::argmax(grid * kax::cos(grid), 1);
  std::printf("sum = %g; column means = [%g %g %g %g]; row max shape (%zu, %zu), last = %g\n",
              total(), col_means(0), col_means(1), col_means(2), col_means(3), row_max.extent(0),
              row_max.extent(1), row_max(2, 0));
  std::printf("argmax of x*cos(x) per row = [%lld %lld %lld]\n", static_cast<long long>(where_max(0)),
              static_cast<long long>(where_max(1)), static_cast<long long>(where_max(2)));

  // Centering rows: the mean is computed once (one reduction kernel), then one fused kernel.
  auto centered = grid - kax::mean(grid, 1, kax::keepdims);
  std::printf("\nplan of grid - mean(grid, 1, keepdims):\n%s\n", kax::plan_of(centered).c_str());

  // The seed's workload.
  const std::size_t B = 10000, D = 256;
  kax::Array<float, 2> x(B, D), w(D, 1);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t d = 0; d < D; ++d) x(b, d) = std::sin(0.001f * static_cast<float>(b * D + d));
  for (std::size_t d = 0; d < D; ++d) w(d, 0) = 1.0f / static_cast<float>(d + 1);
  auto y_expr = kax::dot(x, w) + kax::sin(x);
  std::printf("\nplan of dot(x, w) + sin(x), x (%zu, %zu):\n%s\n", B, D, kax::plan_of(y_expr).c_str());
  kax::Array<float, 2> y = y_expr;
  double s = 0;
  for (std::size_t d = 0; d < D; ++d) s += double(x(1234, d)) * w(d, 0);
  const double by_hand = s + std::sin(double(x(1234, 7)));
  std::printf("y(1234, 7) = %.6f (by hand: %.6f)\n", y(1234, 7), by_hand);
  bool ok = std::abs(y(1234, 7) - by_hand) < 1e-4 * (1 + std::abs(by_hand));
  ok = ok && total() == 66.0 && col_means(3) == 7.0 && row_max(2, 0) == 11.0 && where_max(1) == 2;

  // einsum with a compile-time subscript string.
  kax::Array<float, 2> gram = kax::einsum<"bi,bj->ij">(x, x);
  std::printf("\ngram = einsum<\"bi,bj->ij\">(x, x): shape (%zu, %zu), trace = %.3f\n", gram.extent(0),
              gram.extent(1), static_cast<double>(kax::Array<float, 0>(kax::einsum<"ii->">(gram))()));
  return ok ? 0 : 1;
}
