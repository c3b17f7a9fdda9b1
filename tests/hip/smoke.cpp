// tests/hip/smoke.cpp — a small self-checking kax program for device backends (HIP, CUDA) that
// also runs on the OpenMP build.  It never reads an element of a device array on the host: every
// result goes through kax::to_vector (a copy to host memory) and is compared with a naive host loop.
// Compiled (not run: no AMD GPU in CI) by scripts/hip-check.  Prints one line per check and exits
// non-zero when a check fails.
//
//   elementwise   sin(x) * 2 + 1 on arange(n)
//   sum           sum(x) of the same arange
//   matmul        (m, k) @ (k, n) of small matrices
//   vmap          vmap(dot(x, w) + sin(x), in_axes(0, none)) over the rows of a matrix
//   random        uniform<float>(key(0), {n}): values in [0, 1), mean near 1/2, same key same values
#include <cmath>
#include <cstdio>
#include <vector>

#include "kax/kax.hpp"

namespace {

int failures = 0;

void check(const char* name, bool ok, double err) {
  std::printf("%-12s %s (largest error %.2e)\n", name, ok ? "ok" : "FAILED", err);
  if (!ok) ++failures;
}

// The largest |got - want| / (1 + |want|); the sizes must match (a mismatch counts as infinite).
double worst_error(const std::vector<float>& got, const std::vector<double>& want) {
  if (got.size() != want.size()) return INFINITY;
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double e = std::abs(double(got[i]) - want[i]) / (1 + std::abs(want[i]));
    if (!(e <= worst)) worst = e;  // also catches NaN
  }
  return worst;
}

}  // namespace

int main(int argc, char* argv[]) {
  kax::ScopeGuard guard(argc, argv);
  std::printf("default execution space: %s\n", Kokkos::DefaultExecutionSpace::name());

  // Elementwise: one fused kernel on the device.
  {
    const std::size_t n = 1000;
    const kax::Array<float, 1> x = kax::arange<float>(float(n));
    kax::Array<float, 1> y = kax::sin(x) * 2.0f + 1.0f;
    std::vector<double> want(n);
    for (std::size_t i = 0; i < n; ++i) want[i] = std::sin(double(i)) * 2.0 + 1.0;
    const double err = worst_error(kax::to_vector(y), want);
    check("elementwise", err < 1e-5, err);
  }

  // Sum reduction: 0 + 1 + ... + (n - 1), exact in float for this n.
  {
    const std::size_t n = 4096;
    const kax::Array<float, 1> x = kax::arange<float>(float(n));
    const kax::Array<float, 0> s = kax::sum(x);
    const double err = worst_error(kax::to_vector(s), {double(n) * double(n - 1) / 2});
    check("sum", err < 1e-6, err);
  }

  // Matmul of small matrices made on the device.
  {
    const long m = 7, k = 5, n = 3;
    const kax::Array<float, 2> a = kax::sin(kax::reshape(kax::arange<float>(float(m * k)), {m, k}) * 0.3f);
    const kax::Array<float, 2> b = kax::cos(kax::reshape(kax::arange<float>(float(k * n)), {k, n}) * 0.2f);
    kax::Array<float, 2> c = kax::matmul(a, b);
    const std::vector<float> ha = kax::to_vector(a), hb = kax::to_vector(b);
    std::vector<double> want(std::size_t(m * n));
    for (long i = 0; i < m; ++i)
      for (long j = 0; j < n; ++j) {
        double s = 0;
        for (long l = 0; l < k; ++l) s += double(ha[std::size_t(i * k + l)]) * hb[std::size_t(l * n + j)];
        want[std::size_t(i * n + j)] = s;
      }
    const double err = worst_error(kax::to_vector(c), want);
    check("matmul", err < 1e-5, err);
  }

  // vmap of the seed's per-example function over the rows of X, w shared.
  {
    const long B = 64, D = 32;
    auto process = [](auto x, auto w) { return kax::dot(x, w) + kax::sin(x); };
    auto batched = kax::vmap(process, kax::in_axes(0, kax::none));
    const kax::Array<float, 2> X = kax::sin(kax::reshape(kax::arange<float>(float(B * D)), {B, D}) * 0.01f);
    const kax::Array<float, 1> w = kax::cos(kax::arange<float>(float(D)) * 0.1f) * 0.4f;
    kax::Array<float, 2> Y = batched(X, w);
    const std::vector<float> hx = kax::to_vector(X), hw = kax::to_vector(w);
    std::vector<double> want(std::size_t(B * D));
    for (long b = 0; b < B; ++b) {
      double s = 0;
      for (long d = 0; d < D; ++d) s += double(hx[std::size_t(b * D + d)]) * hw[std::size_t(d)];
      for (long d = 0; d < D; ++d) want[std::size_t(b * D + d)] = s + std::sin(double(hx[std::size_t(b * D + d)]));
    }
    const double err = worst_error(kax::to_vector(Y), want);
    check("vmap", err < 1e-5, err);
  }

  // Random: uniform floats generated on the device.
  {
    const std::size_t n = 100000;
    const auto key = kax::random::key(0);
    kax::Array<float, 1> u = kax::random::uniform<float>(key, {n});
    kax::Array<float, 1> again = kax::random::uniform<float>(key, {n});
    const std::vector<float> hu = kax::to_vector(u), hagain = kax::to_vector(again);
    bool ok = hu.size() == n && hu == hagain;
    double mean = 0;
    for (const float v : hu) {
      ok = ok && v >= 0.0f && v < 1.0f;
      mean += v;
    }
    mean /= double(n);
    const double err = std::abs(mean - 0.5);  // the standard error of the mean is 1/sqrt(12 n) < 1e-3
    check("random", ok && err < 5e-3, err);
  }

  std::printf("%s\n", failures ? "smoke: FAILED" : "smoke: all checks passed");
  return failures ? 1 : 0;
}
