// examples/pmap_collectives.cpp — the seed's pmap workloads: one program per device, talking
// through named-axis collectives.
//
// 1. The seed's parallel_with_communication (JAX):
//        @partial(jax.pmap, axis_name="devices")
//        def parallel_with_communication(x):
//            local_sum = jnp.sum(x)
//            global_sum = jax.lax.psum(local_sum, "devices")
//            return x / global_sum
// 2. A ring: every device passes its block to the next one (lax.ppermute), and gathers all blocks
//    (lax.all_gather) to check the ring against them.
// 3. Data-parallel training of a linear model: every device holds a shard of the data, computes
//    its gradient, and the devices average the gradients with pmean before the identical update.
// 4. pmap of vmap: devices × examples, with a collective over each axis.
// Devices are host devices (KAX_HOST_DEVICES=N, default 1) and, built with MPI
// (built with MPI where it is found, run under mpirun), the devices of every process.  The example checks its
// results against plain loops and exits non-zero on a mismatch.
#include <cmath>
#include <cstdio>
#include <vector>

#include "kax/kax.hpp"

namespace {

bool report(const char* what, double err, double tol) {
  const bool ok = err <= tol;
  if (kax::process_index() == 0) std::printf("  %-58s max error %.2e  %s\n", what, err, ok ? "ok" : "MISMATCH");
  return ok;
}

}  // namespace

int main(int argc, char* argv[]) {
  kax::ScopeGuard guard(argc, argv);
  const std::size_t n = static_cast<std::size_t>(kax::local_device_count());
  const int first = kax::process_index() * static_cast<int>(n);  // global index of local device 0
  const int total = kax::device_count();
  bool ok = true;
  if (kax::process_index() == 0) {
    std::printf("%d process(es), %zu device(s) each:", kax::process_count(), n);
    for (const auto& d : kax::devices()) std::printf(" %s", d.to_string().c_str());
    std::printf("\n");
  }

  // 1. parallel_with_communication on (devices, 1000): x[d, j] = global device index + j / 1000.
  constexpr std::size_t width = 1000;
  kax::Array<float, 2> x(n, width);
  for (std::size_t d = 0; d < n; ++d)
    for (std::size_t j = 0; j < width; ++j) x(d, j) = static_cast<float>(first + static_cast<int>(d)) + static_cast<float>(j) / width;
  auto parallel_with_communication = [](auto xs) {
    auto local_sum = kax::sum(xs);
    auto global_sum = kax::psum<"devices">(local_sum);
    return xs / global_sum;
  };
  const kax::Array<float, 2> y = kax::pmap<"devices">(parallel_with_communication)(x);
  double global = 0;
  for (int g = 0; g < total; ++g)
    for (std::size_t j = 0; j < width; ++j) global += g + static_cast<double>(j) / width;
  double err = 0;
  for (std::size_t d = 0; d < n; ++d)
    for (std::size_t j = 0; j < width; ++j) err = std::fmax(err, std::fabs(y(d, j) - x(d, j) / global) * global);
  ok &= report("parallel_with_communication: x / psum(sum(x))", err, 1e-3);

  // 2. The ring: device g receives the block of g - 1; all_gather sees every block.
  std::vector<std::pair<int, int>> ring;
  for (int g = 0; g < total; ++g) ring.push_back({g, (g + 1) % total});
  auto pass_on = [&ring](auto block) {
    return std::make_tuple(kax::ppermute<"ring">(block, ring), kax::all_gather<"ring">(block));
  };
  const auto [received, everything] = kax::pmap<"ring">(pass_on)(x);
  err = 0;
  for (std::size_t d = 0; d < n; ++d) {
    const int g = first + static_cast<int>(d);
    const int from = (g + total - 1) % total;
    for (std::size_t j = 0; j < width; j += 37) {
      err = std::fmax(err, std::fabs(received(d, j) - everything(d, static_cast<std::size_t>(from), j)));
      err = std::fmax(err, std::fabs(everything(d, static_cast<std::size_t>(from), j) - (from + static_cast<float>(j) / width)));
    }
  }
  ok &= report("ring: ppermute to the next device == all_gather's block", err, 0);

  // 3. Data-parallel least squares: y = X w_true, each device m rows of X.  The gradient of the
  //    mean squared error 2/m X^T (X w - y), averaged over devices (pmean), is the full-batch one.
  constexpr std::size_t m = 256, features = 8;
  kax::Array<float, 3> data(n, m, features);
  kax::Array<float, 2> target(n, m);
  const float w_true[features] = {0.5f, -1.0f, 2.0f, 0.0f, 1.5f, -0.5f, 0.25f, 1.0f};
  for (std::size_t d = 0; d < n; ++d)
    for (std::size_t i = 0; i < m; ++i) {
      float t = 0;
      for (std::size_t k = 0; k < features; ++k) {
        // a fixed pseudo-random feature in [-1, 1) (the fractional part of a scaled sine)
        const double r = std::sin(12.9898 * static_cast<double>((first + static_cast<int>(d)) * m + i) + 78.233 * static_cast<double>(k)) * 43758.5453;
        const float v = static_cast<float>(2.0 * (r - std::floor(r)) - 1.0);
        data(d, i, k) = v;
        t += v * w_true[k];
      }
      target(d, i) = t;
    }
  auto sgd_step = [](auto xs, auto ys, auto w) {
    auto residual = kax::matmul(xs, w) - ys;
    auto grad = kax::matmul(kax::transpose(xs), residual) * (2.0f / static_cast<float>(m));
    auto loss = kax::pmean<"data">(kax::mean(residual * residual));
    return std::make_tuple(w - 0.2f * kax::pmean<"data">(grad), loss);
  };
  auto train = kax::pmap<"data">(sgd_step, kax::in_axes(0, 0, kax::none), kax::out_axes(kax::none));
  kax::Array<float, 1> w(features);
  float first_loss = 0, loss = 0;
  for (int step = 0; step < 300; ++step) {
    auto [w_next, l] = train(data, target, w);
    w = w_next;
    loss = l();
    if (step == 0) first_loss = loss;
  }
  err = 0;
  for (std::size_t k = 0; k < features; ++k) err = std::fmax(err, std::fabs(w(k) - w_true[k]));
  if (kax::process_index() == 0)
    std::printf("  data-parallel SGD over %d devices: loss %.3g -> %.3g after 300 steps\n", total, first_loss, loss);
  ok &= report("data-parallel SGD: |w - w_true|", err, 2e-2);

  // 4. pmap of vmap: (devices, 4 examples, 3); centre each example on the mean over devices and
  //    add the sum over the batch.
  kax::Array<double, 3> z(n, 4, 3);
  auto value = [](int g, std::size_t b, std::size_t j) { return 100.0 * g + 10.0 * static_cast<double>(b) + static_cast<double>(j); };
  for (std::size_t d = 0; d < n; ++d)
    for (std::size_t b = 0; b < 4; ++b)
      for (std::size_t j = 0; j < 3; ++j) z(d, b, j) = value(first + static_cast<int>(d), b, j);
  auto per_example = [](auto v) { return v - kax::pmean<"devices">(v) + kax::psum<"batch">(v); };
  const kax::Array<double, 3> out = kax::pmap<"devices">(kax::vmap(per_example, kax::axis_name<"batch">))(z);
  err = 0;
  for (std::size_t d = 0; d < n; ++d)
    for (std::size_t b = 0; b < 4; ++b)
      for (std::size_t j = 0; j < 3; ++j) {
        double mean = 0, batch = 0;
        for (int g = 0; g < total; ++g) mean += value(g, b, j) / total;
        for (std::size_t c = 0; c < 4; ++c) batch += value(first + static_cast<int>(d), c, j);
        err = std::fmax(err, std::fabs(out(d, b, j) - (z(d, b, j) - mean + batch)));
      }
  ok &= report("pmap(vmap(f)): pmean over devices + psum over the batch", err, 1e-9);

  if (kax::process_index() == 0) std::printf("%s\n", ok ? "all checks passed" : "SOME CHECKS FAILED");
  return ok ? 0 : 1;
}
