// bench/bench_training.cpp — one training step of an MLP with kax::value_and_grad and
// kax::optim::sgd beside the same step written by hand with Eigen; per-example gradients with
// vmap(grad) beside a loop of grad.
//
// Two cases, each written several ways in this one binary so that every ratio comes from one run
// on one machine state:
//   step         one SGD step of a 3-layer MLP, float32: x (256, 512) -> gelu(x W1 + b1) (512)
//                -> gelu(h1 W2 + b2) (512) -> h2 W3 + b3 (512), loss = mean((out - y)^2), lr 1e-3
//                (gelu is the tanh approximation, JAX's default).  8 GEMMs of 256x512x512: 1.07
//                GFLOP a step.
//   per_example  the gradients of each of 128 examples separately, small MLP: x (32,) ->
//                gelu(x W1 + b1) (64) -> h W2 + b2 (1), loss = (out - y)^2
// Variants (the name after the slash; the report pairs them by that name):
//   kax        step: `auto [loss, g] = kax::value_and_grad(loss_fn)(params, x, y);` then
//              `sgd.step(g, state, params, kax::donate_argnums<1, 2>)` (in place), both inside
//              the timing loop, as users write them
//   eigen      step: the same step by hand with Eigen: row-major MatrixXf, preallocated buffers,
//              noalias() GEMMs (Eigen::setNbThreads = the bench's thread count; Eigen's GEMM runs
//              on OpenMP), the elementwise passes (bias + gelu, gelu', SGD) under `omp parallel`
//              on row chunks, bias gradients as colwise sums
//   vmap_grad  per_example: kax::vmap(kax::grad(loss_one), kax::in_axes(kax::none, 0, 0))
//   loop_grad  per_example: kax::grad(loss_one) per example (rows as zero-copy ArrayViews),
//              each gradient assigned into its slot of the per-example arrays
// The thread count comes from Kokkos (--kokkos-threads); OpenMP and Eigen use the same.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "bench_main.hpp"
#include "kax/kax.hpp"
#include "kax/optim.hpp"
#include "seed_baselines.hpp"  // per_thread_chunk

namespace {

using namespace kax_bench;

// ---- the models ----------------------------------------------------------------------------------
constexpr std::size_t mlp_b = 256, mlp_d = 512;  // batch; every layer's width (in, hidden, out)
constexpr float mlp_lr = 1e-3f;
constexpr std::size_t pe_b = 128, pe_in = 32, pe_h = 64;  // per_example: batch, D_in, hidden (D_out 1)

// The loss users write: built lazily from its arguments so that gradients flow.
constexpr auto mlp_loss = [](const auto& p, const auto& x, const auto& y) {
  const auto& [w1, b1, w2, b2, w3, b3] = p;
  auto h1 = kax::nn::gelu(kax::matmul(x, w1) + b1);
  auto h2 = kax::nn::gelu(kax::matmul(h1, w2) + b2);
  return kax::mean(kax::square(kax::matmul(h2, w3) + b3 - y));
};

// One example: x (32,), y (1,).
constexpr auto loss_one = [](const auto& p, const auto& x, const auto& y) {
  const auto& [w1, b1, w2, b2] = p;
  auto h = kax::nn::gelu(kax::matmul(x, w1) + b1);
  return kax::sum(kax::square(kax::matmul(h, w2) + b2 - y));
};

using mat = kax::Array<float, 2>;
using vec = kax::Array<float, 1>;
using mlp_params = std::tuple<mat, vec, mat, vec, mat, vec>;
using pe_params = std::tuple<mat, vec, mat, vec>;
using pe_grads =
    std::tuple<kax::Array<float, 3>, kax::Array<float, 2>, kax::Array<float, 3>, kax::Array<float, 2>>;
using eigen_rm = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using eigen_row = Eigen::Matrix<float, 1, Eigen::Dynamic>;

// Weights ~ N(0, 1/fan_in) (LeCun normal), biases small and nonzero so that their gradients are
// exercised; data ~ N(0, 1).
mat normal_mat(std::uint32_t seed, std::size_t m, std::size_t n, float scale) {
  return kax::random::normal<float>(kax::random::key(seed), kax::shape<2>{m, n}) * scale;
}
vec normal_vec(std::uint32_t seed, std::size_t n, float scale) {
  return kax::random::normal<float>(kax::random::key(seed), kax::shape<1>{n}) * scale;
}

mlp_params make_mlp_params() {
  const float s = 1.0f / std::sqrt(float(mlp_d));
  return {normal_mat(1, mlp_d, mlp_d, s), normal_vec(2, mlp_d, 0.1f), normal_mat(3, mlp_d, mlp_d, s),
          normal_vec(4, mlp_d, 0.1f),     normal_mat(5, mlp_d, mlp_d, s), normal_vec(6, mlp_d, 0.1f)};
}

// ---- the hand-written Eigen step -------------------------------------------------------------------
// gelu's tanh approximation and its derivative, as Eigen array expressions over a block.
constexpr float gelu_c = 0.79788456080286535588f, gelu_a = 0.044715f;

template <class Z>
auto gelu_of(const Z& z) {
  return 0.5f * z * (1.0f + (gelu_c * (z + gelu_a * z.cube())).tanh());
}
// d/dz [z/2 (1 + tanh u)], u = c (z + a z^3): (1 + t)/2 + z/2 (1 - t^2) c (1 + 3 a z^2).
template <class Z, class T>
auto gelu_grad_of(const Z& z, const T& t) {
  return 0.5f * (1.0f + t) + 0.5f * z * (1.0f - t.square()) * (gelu_c * (1.0f + 3.0f * gelu_a * z.square()));
}

struct eigen_mlp {
  eigen_rm x, y, w1, w2, w3;
  eigen_row b1, b2, b3;
  // Forward residuals and backward buffers, allocated once.
  eigen_rm z1, h1, z2, h2, out, d, dh, gw1, gw2, gw3;
  eigen_row gb1, gb2, gb3;
  float loss = 0;

  eigen_mlp(const mlp_params& p, const mat& xs, const mat& ys) {
    const auto n = Eigen::Index(mlp_d), b = Eigen::Index(mlp_b);
    auto load = [](const auto& a, Eigen::Index r, Eigen::Index c) {
      return eigen_rm(Eigen::Map<const eigen_rm>(a.data(), r, c));
    };
    x = load(xs, b, n);
    y = load(ys, b, n);
    w1 = load(std::get<0>(p), n, n);
    w2 = load(std::get<2>(p), n, n);
    w3 = load(std::get<4>(p), n, n);
    b1 = load(std::get<1>(p), 1, n);
    b2 = load(std::get<3>(p), 1, n);
    b3 = load(std::get<5>(p), 1, n);
    for (auto* m : {&z1, &h1, &z2, &h2, &out, &d, &dh}) m->resize(b, n);
    for (auto* m : {&gw1, &gw2, &gw3}) m->resize(n, n);
    for (auto* v : {&gb1, &gb2, &gb3}) v->resize(n);
  }

  // Rows [lo, lo + len) of a (mlp_b, mlp_d) buffer.
  static auto rows(eigen_rm& m, std::size_t lo, std::size_t len) {
    return m.middleRows(Eigen::Index(lo), Eigen::Index(len)).array();
  }

  // z = z + b (in place), h = gelu(z), on every thread's rows.
  static void bias_gelu(eigen_rm& z, eigen_rm& h, const eigen_row& b) {
    per_thread_chunk(mlp_b, [&](std::size_t lo, std::size_t len) {
      auto zz = rows(z, lo, len);
      zz.rowwise() += b.array();
      rows(h, lo, len) = gelu_of(zz);
    });
  }
  // dh *= gelu'(z), on every thread's rows.
  static void gelu_backward(eigen_rm& dh, const eigen_rm& z) {
    per_thread_chunk(mlp_b, [&](std::size_t lo, std::size_t len) {
      const auto zz = z.middleRows(Eigen::Index(lo), Eigen::Index(len)).array();
      rows(dh, lo, len) *= gelu_grad_of(zz, (gelu_c * (zz + gelu_a * zz.cube())).tanh());
    });
  }

  // Forward (storing z1, h1, z2, h2, out), loss, backward into gw*, gb*.
  void grads() {
    z1.noalias() = x * w1;
    bias_gelu(z1, h1, b1);
    z2.noalias() = h1 * w2;
    bias_gelu(z2, h2, b2);
    out.noalias() = h2 * w3;
    // d = dL/dout = 2/(B D) (out + b3 - y); the loss sums per thread.
    const float scale = 2.0f / float(mlp_b * mlp_d);
    double total = 0;
#pragma omp parallel reduction(+ : total)
    {
      const auto t = std::size_t(omp_get_thread_num()), nt = std::size_t(omp_get_num_threads());
      const std::size_t lo = mlp_b * t / nt, len = mlp_b * (t + 1) / nt - lo;
      auto o = rows(out, lo, len);
      o.rowwise() += b3.array();
      auto r = rows(d, lo, len);
      r = o - rows(y, lo, len);
      total += double(r.square().sum());
      r *= scale;
    }
    loss = float(total / double(mlp_b * mlp_d));
    gw3.noalias() = h2.transpose() * d;
    gb3.noalias() = d.colwise().sum();
    dh.noalias() = d * w3.transpose();
    gelu_backward(dh, z2);
    gw2.noalias() = h1.transpose() * dh;
    gb2.noalias() = dh.colwise().sum();
    d.noalias() = dh * w2.transpose();  // d is free again: it becomes dL/dh1
    gelu_backward(d, z1);
    gw1.noalias() = x.transpose() * d;
    gb1.noalias() = d.colwise().sum();
  }

  // p -= lr g over the six leaves, every thread its contiguous chunk.
  static void sgd(float* p, const float* g, std::size_t n) {
    per_thread_chunk(n, [&](std::size_t lo, std::size_t len) {
      Eigen::Map<Eigen::ArrayXf>(p + lo, Eigen::Index(len)) -=
          mlp_lr * Eigen::Map<const Eigen::ArrayXf>(g + lo, Eigen::Index(len));
    });
  }
  void update() {
    sgd(w1.data(), gw1.data(), mlp_d * mlp_d);
    sgd(w2.data(), gw2.data(), mlp_d * mlp_d);
    sgd(w3.data(), gw3.data(), mlp_d * mlp_d);
    sgd(b1.data(), gb1.data(), mlp_d);
    sgd(b2.data(), gb2.data(), mlp_d);
    sgd(b3.data(), gb3.data(), mlp_d);
  }
};

// ---- operands --------------------------------------------------------------------------------------
struct operands {
  mat x = normal_mat(7, mlp_b, mlp_d, 1.0f), y = normal_mat(8, mlp_b, mlp_d, 1.0f);
  mlp_params params = make_mlp_params();
  kax::optim::Sgd opt = kax::optim::sgd(mlp_lr);
  kax::optim::SgdState<mlp_params> state = opt.init(params);
  eigen_mlp eig{params, x, y};

  pe_params pp{normal_mat(11, pe_in, pe_h, 1.0f / std::sqrt(float(pe_in))), normal_vec(12, pe_h, 0.1f),
               normal_mat(13, pe_h, 1, 1.0f / std::sqrt(float(pe_h))), normal_vec(14, 1, 0.1f)};
  mat px = normal_mat(15, pe_b, pe_in, 1.0f), py = normal_mat(16, pe_b, 1, 1.0f);
  pe_grads pg{kax::zeros<float>(pe_b, pe_in, pe_h), kax::zeros<float>(pe_b, pe_h),
              kax::zeros<float>(pe_b, pe_h, 1), kax::zeros<float>(pe_b, 1)};
};

std::unique_ptr<operands> data;

operands& ops() {
  if (!data) data = std::make_unique<operands>();
  return *data;
}

void finish(benchmark::State& state, double flops, const void* out) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * double(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
  benchmark::DoNotOptimize(out);
  benchmark::ClobberMemory();
}

// 3 forward GEMMs, 5 backward (no gradient for x): 2 B D^2 flops each.
constexpr double step_flops = 8.0 * 2.0 * double(mlp_b) * mlp_d * mlp_d;

// ---- step --------------------------------------------------------------------------------------------
void kax_step(operands& o) {
  auto [loss, g] = kax::value_and_grad(mlp_loss)(o.params, o.x, o.y);
  o.opt.step(g, o.state, o.params, kax::donate_argnums<1, 2>);
  benchmark::DoNotOptimize(loss.data());
}

void step_kax(benchmark::State& state) {
  auto& o = ops();
  for (auto _ : state) kax_step(o);
  finish(state, step_flops, std::get<0>(o.params).data());
}
void step_eigen(benchmark::State& state) {
  auto& o = ops();
  for (auto _ : state) {
    o.eig.grads();
    o.eig.update();
  }
  finish(state, step_flops, o.eig.w1.data());
}

// ---- per_example ---------------------------------------------------------------------------------------
auto pe_vmap(const operands& o) {
  return kax::vmap(kax::grad(loss_one), kax::in_axes(kax::none, 0, 0))(o.pp, o.px, o.py);
}

// One kax::grad per example; gradient b goes into slot b of each per-example array.
void pe_loop(operands& o) {
  auto& [g1, gb1, g2, gb2] = o.pg;
  for (std::size_t b = 0; b < pe_b; ++b) {
    const kax::ArrayView<float, 1> xb(o.px.data() + b * pe_in, {pe_in}), yb(o.py.data() + b, {1});
    const auto [d1, db1, d2, db2] = kax::grad(loss_one)(o.pp, xb, yb);
    kax::ArrayView<float, 2>(g1.data() + b * pe_in * pe_h, {pe_in, pe_h}) = d1;
    kax::ArrayView<float, 1>(gb1.data() + b * pe_h, {pe_h}) = db1;
    kax::ArrayView<float, 2>(g2.data() + b * pe_h, {pe_h, 1}) = d2;
    kax::ArrayView<float, 1>(gb2.data() + b, {1}) = db2;
  }
}

void per_example_vmap_grad(benchmark::State& state) {
  auto& o = ops();
  for (auto _ : state) o.pg = pe_vmap(o);
  finish(state, 0, std::get<0>(o.pg).data());
}
void per_example_loop_grad(benchmark::State& state) {
  auto& o = ops();
  for (auto _ : state) pe_loop(o);
  finish(state, 0, std::get<0>(o.pg).data());
}

// ---- checks (outside timing) --------------------------------------------------------------------------
// max |a - b| / max(max |b|, tiny): the error relative to the reference's magnitude.
double rel_err(const float* a, const float* b, std::size_t n) {
  double worst = 0, mag = 1e-30;
  for (std::size_t i = 0; i < n; ++i) {
    worst = std::max(worst, std::abs(double(a[i]) - b[i]));
    mag = std::max(mag, std::abs(double(b[i])));
  }
  return worst / mag;
}

bool check_all() {
  auto& o = ops();
  bool ok = true;
  auto report = [&](const std::string& name, double err, double tol) {
    std::fprintf(stderr, "check %s: relative error %.3g (tolerance %.1g)\n", name.c_str(), err, tol);
    if (!(err <= tol)) ok = false;
  };

  // step: kax's gradients against the Eigen step's, both from the same params; then one full
  // step of each, and the updated params against each other.
  {
    const auto [loss, g] = kax::value_and_grad(mlp_loss)(o.params, o.x, o.y);
    o.eig.grads();
    report("step loss (kax vs eigen)", std::abs(loss() - o.eig.loss) / std::abs(o.eig.loss), 1e-4);
    const float* ref[] = {o.eig.gw1.data(), o.eig.gb1.data(), o.eig.gw2.data(),
                          o.eig.gb2.data(), o.eig.gw3.data(), o.eig.gb3.data()};
    const char* names[] = {"W1", "b1", "W2", "b2", "W3", "b3"};
    int k = 0;
    std::apply([&](const auto&... leaf) {
      ((report(std::string("step grad ") + names[k] + " (kax vs eigen)",
               rel_err(leaf.data(), ref[k], leaf.size()), 1e-3),
        ++k),
       ...);
    }, g);
    kax_step(o);
    o.eig.update();
    const float* par[] = {o.eig.w1.data(), o.eig.b1.data(), o.eig.w2.data(),
                          o.eig.b2.data(), o.eig.w3.data(), o.eig.b3.data()};
    k = 0;
    std::apply([&](const auto&... leaf) {
      ((report(std::string("step params ") + names[k] + " after one step",
               rel_err(leaf.data(), par[k], leaf.size()), 1e-5),
        ++k),
       ...);
    }, o.params);
  }

  // per_example: both variants against a scalar reference in double.
  {
    const auto& [w1, b1, w2, b2] = o.pp;
    std::vector<double> r1(pe_b * pe_in * pe_h), rb1(pe_b * pe_h), r2(pe_b * pe_h), rb2(pe_b);
    for (std::size_t b = 0; b < pe_b; ++b) {
      const float* xb = o.px.data() + b * pe_in;
      std::vector<double> z(pe_h), t(pe_h);
      double out = b2.data()[0];
      for (std::size_t j = 0; j < pe_h; ++j) {
        z[j] = b1.data()[j];
        for (std::size_t i = 0; i < pe_in; ++i) z[j] += double(xb[i]) * w1.data()[i * pe_h + j];
        t[j] = std::tanh(double(gelu_c) * (z[j] + double(gelu_a) * z[j] * z[j] * z[j]));
        out += 0.5 * z[j] * (1 + t[j]) * w2.data()[j];
      }
      const double dout = 2 * (out - o.py.data()[b]);
      rb2[b] = dout;
      for (std::size_t j = 0; j < pe_h; ++j) {
        r2[b * pe_h + j] = dout * 0.5 * z[j] * (1 + t[j]);
        const double dz = dout * w2.data()[j] *
                          (0.5 * (1 + t[j]) + 0.5 * z[j] * (1 - t[j] * t[j]) * double(gelu_c) *
                                                  (1 + 3 * double(gelu_a) * z[j] * z[j]));
        rb1[b * pe_h + j] = dz;
        for (std::size_t i = 0; i < pe_in; ++i) r1[(b * pe_in + i) * pe_h + j] = double(xb[i]) * dz;
      }
    }
    auto compare = [&](const std::string& name) {
      auto err = [](const auto& a, const std::vector<double>& ref) {
        double worst = 0, mag = 1e-30;
        for (std::size_t i = 0; i < ref.size(); ++i) {
          worst = std::max(worst, std::abs(double(a.data()[i]) - ref[i]));
          mag = std::max(mag, std::abs(ref[i]));
        }
        return worst / mag;
      };
      const auto& [g1, gb1, g2, gb2] = o.pg;
      const double e = std::max({err(g1, r1), err(gb1, rb1), err(g2, r2), err(gb2, rb2)});
      report("per_example/" + name + " (vs double reference)", e, 1e-4);
      for (auto* a : {std::get<0>(o.pg).data(), std::get<1>(o.pg).data(), std::get<2>(o.pg).data(),
                      std::get<3>(o.pg).data()})
        a[0] = std::nanf("");  // the next variant must write every slot (at least the first)
    };
    o.pg = pe_vmap(o);
    compare("vmap_grad");
    pe_loop(o);
    compare("loop_grad");
  }
  return ok;
}

// Where a kax step's time goes, once, outside Google Benchmark: value_and_grad against the SGD
// update, and the forward alone (the loss as an evaluation, no gradient), the mean of 20 runs each.
void phase_times() {
  auto& o = ops();
  using clock = std::chrono::steady_clock;
  auto ms = [](auto d) { return std::chrono::duration<double, std::milli>(d).count(); };
  constexpr int n = 20;
  double vg = 0, upd = 0, fwd = 0, eg = 0, eu = 0;
  for (int i = 0; i < n + 2; ++i) {  // two warm-up rounds
    const auto t0 = clock::now();
    auto [loss, g] = kax::value_and_grad(mlp_loss)(o.params, o.x, o.y);
    const auto t1 = clock::now();
    o.opt.step(g, o.state, o.params, kax::donate_argnums<1, 2>);
    const auto t2 = clock::now();
    kax::Array<float, 0> l = mlp_loss(o.params, o.x, o.y);
    const auto t3 = clock::now();
    o.eig.grads();
    const auto t4 = clock::now();
    o.eig.update();
    const auto t5 = clock::now();
    if (i < 2) continue;
    vg += ms(t1 - t0), upd += ms(t2 - t1), fwd += ms(t3 - t2), eg += ms(t4 - t3), eu += ms(t5 - t4);
  }
  std::fprintf(stderr,
               "phases (mean of %d, ms): kax value_and_grad %.3f, sgd step %.3f, forward only %.3f; "
               "eigen forward+backward %.3f, sgd %.3f\n",
               n, vg / n, upd / n, fwd / n, eg / n, eu / n);
}

}  // namespace

int main(int argc, char** argv) {
  kax::ScopeGuard guard(argc, argv);  // strips --kokkos-* flags before Google Benchmark sees argv
  {
    if (!kax_bench::start(argc, argv, "training")) return 1;
    // Eigen's GEMM threads: the bench's count (its default would be OpenMP's, the same here, but
    // say it), recorded for the report.
    Eigen::setNbThreads(Kokkos::DefaultExecutionSpace::concurrency());
    benchmark::AddCustomContext("eigen_threads", std::to_string(Eigen::nbThreads()));
    if (!check_all()) {
      std::fprintf(stderr, "bench_training: a variant computes wrong values\n");
      return 2;
    }
    phase_times();
    const kax_bench::bench_case cases[] = {
        {"step/kax", step_kax},
        {"step/eigen", step_eigen},
        {"per_example/vmap_grad", per_example_vmap_grad},
        {"per_example/loop_grad", per_example_loop_grad},
    };
    kax_bench::run(cases);
    data.reset();  // Views must go before Kokkos::finalize
  }
  return 0;
}
