// examples/elementwise.cpp — lazy, fused elementwise expressions.
//
// Builds a few expressions (broadcasting, math, where, layout ops), shows that building them does
// no work, evaluates each as one fused Kokkos kernel, and checks a couple of values by hand.
#include <cmath>
#include <cstdio>

#include "kax/kax.hpp"

int main(int argc, char* argv[]) {
  kax::ScopeGuard guard(argc, argv);

  // A 2-d grid from two 1-d coordinate vectors, NumPy-style broadcasting: (N, 1) op (1, M).
  const std::size_t n = 512, m = 256;
  auto x = kax::arange<double>(0.0, 1.0, 1.0 / n);  // (N,)
  auto y = kax::arange<double>(0.0, 1.0, 1.0 / m);  // (M,)
  auto xs = kax::expand_dims(x, 1);                 // (N, 1): a view, no copy
  auto ys = kax::expand_dims(y, 0);                 // (1, M)

  // Nothing is computed here: `wave` is an expression object (a compile-time graph).
  auto wave = kax::sin(2 * M_PI * xs) * kax::cos(2 * M_PI * ys);
  std::printf("plan: %s\n", kax::plan_of(wave).c_str());

  // One kernel evaluates the whole graph into a new array.
  kax::Array<double, 2> grid = wave;
  std::printf("grid %zux%zu, grid(128, 0) = %.6f (expected %.6f)\n", grid.extent(0),
              grid.extent(1), grid(128, 0), std::sin(2 * M_PI * 128.0 / n));

  // Clip negative values with where, then rescale; assigned in place (no allocation).
  grid = kax::where(grid < 0, 0.0, grid) * 10.0;
  std::printf("after clipping: grid(384, 0) = %.6f (expected 0)\n", grid(384, 0));

  // Layout ops fuse too: the transpose of every other column, plus a broadcast row.
  auto every_other = kax::slice(grid, {kax::colon, kax::range(0, std::nullopt, 2)});  // (N, M/2)
  kax::Array<double, 2> t = kax::transpose(every_other) + kax::reshape(x, {1, -1});
  std::printf("t is %zux%zu, t(3, 5) = %.6f (expected %.6f)\n", t.extent(0), t.extent(1),
              t(3, 5), grid(5, 6) + 5.0 / n);

  // Mixed dtypes promote like JAX: int32 * float -> float; int32 / int32 -> double.
  auto i = kax::arange<std::int32_t>(5);
  kax::Array<double, 1> half = i / 2;
  std::printf("arange(5) / 2 = [%g %g %g %g %g]\n", half(0), half(1), half(2), half(3), half(4));

  // Shape errors say which shapes disagree.
  try {
    kax::Array<double, 1> bad = x + y;
    (void)bad;
  } catch (const kax::shape_error& e) {
    std::printf("caught: %s\n", e.what());
  }
  return 0;
}
