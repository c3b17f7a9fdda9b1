// examples/data_parallel_training.cpp — the seed's data-parallel training: an MLP with dropout,
// trained on every device at once with pmap, gradients averaged with pmean, then Adam.
//
// The seed's JAX program (left) and the kax lines that mirror it (right):
//   def loss_fn(params, x, y, key):              [](const auto& params, const auto& x,
//                                                    const auto& y, random::Key key) {
//     w1, b1, w2, b2, w3, b3 = params              const auto& [w1, b1, w2, b2, w3, b3] = params;
//     k1, k2 = jax.random.split(key)               const auto [k1, k2] = random::split<2>(key);
//     h = dropout(k1, jax.nn.gelu(x @ w1 + b1))    auto h = dropout(k1, gelu(matmul(x, w1) + b1));
//     h = dropout(k2, jax.nn.gelu(h @ w2 + b2))    auto h2 = dropout(k2, gelu(matmul(h, w2) + b2));
//     return jnp.mean((h @ w3 + b3 - y) ** 2)      return mean(square(matmul(h2, w3) + b3 - y)); }
//   # dropout: jnp.where(bernoulli(k, keep, h.shape), h / keep, 0), as flax.linen.Dropout
//
//   @partial(jax.pmap, axis_name="i",            kax::pmap<"i">(
//            in_axes=(None, 0, 0, None),           [&step_key](const auto& params,
//            out_axes=None)                                    const auto& xs, const auto& ys) {
//   def grad_step(params, xs, ys, step_key):
//     i = lax.axis_index("i")                        const Array<int32_t, 0> i = axis_index<"i">();
//     key = jax.random.fold_in(step_key, i)          auto key = random::fold_in(step_key, i());
//     loss, grads = jax.value_and_grad(loss_fn)(     auto [loss, g] = value_and_grad(loss_fn)(
//         params, xs, ys, key)                           params, xs, ys, key);
//     return (lax.pmean(loss, "i"),                  return make_tuple(pmean<"i">(loss),
//             lax.pmean(grads, "i"))                                  pmean<"i">(leaf of g)...); },
//                                                  in_axes(none, 0, 0), out_axes(none));
//   opt = optax.adam(3e-3)                       auto opt = kax::optim::adam(3e-3);
//   state = opt.init(params)                     auto state = opt.init(params);
//   for step in range(steps):                    for (int step = 0; step < steps; ++step) {
//     step_key = fold_in(dropout_key, step)        step_key = fold_in(dropout_key, step);
//     loss, grads = grad_step(params, X, Y,        auto [loss, g...] = grad_step(params, X, Y);
//                             step_key)
//     updates, state = opt.update(grads, state)    std::tie(params, state) = opt.step(g, state,
//     params = optax.apply_updates(params,                       params, donate_argnums<1, 2>);
//                                  updates)      }
//
// Two differences from JAX, both kax limitations: pmap's arguments must be arrays (a
// random::Key is not accepted, even with in_axes none), so the step's key is captured by
// reference; and random::fold_in takes a host integer, not an expression, so the device index is
// first evaluated into a rank-0 Array (jax.random.fold_in takes the traced axis_index).
//
// The data: a fixed random teacher y = sin(x A) B on 1024 examples split evenly over all devices
// (KAX_HOST_DEVICES=N host devices; with MPI the devices of every process).  Each device runs
// value_and_grad on its shard with its own dropout masks; pmean makes the loss and every gradient
// leaf the full-batch mean on every device, so the Adam update that follows keeps the parameters
// replicated.  The example checks that the dropout-free loss ends below 10% of its initial value
// and that every device (of every process) holds the same parameters; otherwise it exits non-zero.
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <tuple>

#include "kax/kax.hpp"

namespace {

namespace random = kax::random;

constexpr std::size_t examples = 1024, d_in = 16, hidden = 64, d_out = 4, teacher_hidden = 32;
constexpr int steps = 200, print_every = 50;
constexpr float keep = 0.9f;  // dropout keeps 90% of the hidden units
constexpr double learning_rate = 3e-3;

// (W1, b1, W2, b2, W3, b3): a pytree for grad and the optimizer.
using Params = std::tuple<kax::Array<float, 2>, kax::Array<float, 1>, kax::Array<float, 2>,
                          kax::Array<float, 1>, kax::Array<float, 2>, kax::Array<float, 1>>;

// LeCun-normal weights (variance 1 / fan_in), zero biases: flax's default for Dense.
Params init_params(random::Key key) {
  const auto k = random::split<3>(key);
  auto dense = [](random::Key kw, std::size_t fan_in, std::size_t fan_out) {
    return kax::Array<float, 2>(random::normal<float>(kw, kax::shape<2>{fan_in, fan_out}) *
                                (1.0f / std::sqrt(static_cast<float>(fan_in))));
  };
  return Params{dense(k[0], d_in, hidden),  kax::zeros<float>(hidden),
                dense(k[1], hidden, hidden), kax::zeros<float>(hidden),
                dense(k[2], hidden, d_out),  kax::zeros<float>(d_out)};
}

// The MLP on a batch, with inverted dropout when a key is given (training) and without it
// (evaluation).  Everything stays a lazy expression so that kax::grad sees the whole graph; the
// dropout masks are generated inside the kernels that use them.
template <bool Train>
auto forward(const auto& params, const auto& x, random::Key key) {
  const auto& [w1, b1, w2, b2, w3, b3] = params;
  const std::size_t m = x.extents()[0];
  const auto [k1, k2] = random::split<2>(key);
  auto dropout = [m](random::Key k, const auto& h) {
    if constexpr (Train) {
      return kax::where(random::bernoulli(k, keep, kax::shape<2>{m, hidden}), h * (1.0f / keep),
                        0.0f);
    } else {
      return h;
    }
  };
  auto h1 = dropout(k1, kax::nn::gelu(kax::matmul(x, w1) + b1));
  auto h2 = dropout(k2, kax::nn::gelu(kax::matmul(h1, w2) + b2));
  return kax::matmul(h2, w3) + b3;
}

auto train_loss = [](const auto& params, const auto& x, const auto& y, random::Key key) {
  return kax::mean(kax::square(forward<true>(params, x, key) - y));
};

}  // namespace

int main(int argc, char* argv[]) {
  kax::ScopeGuard guard(argc, argv);
  const bool root = kax::process_index() == 0;
  const auto n = static_cast<std::size_t>(kax::local_device_count());
  const auto total = static_cast<std::size_t>(kax::device_count());
  const long first = kax::process_index() * static_cast<long>(n);  // global index of device 0
  if (examples % total != 0) {
    if (root) std::printf("%zu examples do not split over %zu devices\n", examples, total);
    return 1;
  }
  const std::size_t m = examples / total;  // examples per device

  // The data, laid out (device, example, feature) over all devices: every process draws the same
  // numbers from the same keys, and generates (fused into the slice) only its own devices' rows.
  const auto [data_key, teacher_key, init_key, dropout_key] = random::split<4>(random::key(0));
  const auto [ka, kb] = random::split<2>(teacher_key);
  const kax::Array<float, 2> a = random::normal<float>(ka, kax::shape<2>{d_in, teacher_hidden}) *
                                 (1.0f / std::sqrt(static_cast<float>(d_in)));
  const kax::Array<float, 2> b = random::normal<float>(kb, kax::shape<2>{teacher_hidden, d_out}) *
                                 (1.0f / std::sqrt(static_cast<float>(teacher_hidden)));
  const kax::Array<float, 3> x =
      kax::slice(random::normal<float>(data_key, kax::shape<3>{total, m, d_in}),
                 {kax::range(first, first + static_cast<long>(n)), kax::colon, kax::colon});
  const kax::Array<float, 3> y =
      kax::einsum<"dmh,ho->dmo">(kax::sin(kax::einsum<"dmi,ih->dmh">(x, a)), b);

  // The gradient step on every device: the loss and gradients of the device's shard, averaged
  // over the devices.  out_axes(none) returns one copy: every device holds the same pmean.
  random::Key step_key{};  // set before each step (pmap takes arrays, not keys, as arguments)
  auto grad_step = kax::pmap<"i">(
      [&step_key](const auto& params, const auto& xs, const auto& ys) {
        // A different dropout mask on every device, as fold_in(key, lax.axis_index("i")).
        const kax::Array<std::int32_t, 0> i = kax::axis_index<"i">();
        const random::Key key = random::fold_in(step_key, static_cast<std::uint32_t>(i()));
        const auto loss_and_grads = kax::value_and_grad(train_loss)(params, xs, ys, key);
        const auto& loss = loss_and_grads.first;  // a named variable: clang 14 cannot capture
                                                  // a structured binding in the lambda below
        return std::apply(
            [&](const auto&... leaf) {
              return std::make_tuple(kax::pmean<"i">(loss), kax::pmean<"i">(leaf)...);
            },
            loss_and_grads.second);
      },
      kax::in_axes(kax::none, 0, 0), kax::out_axes(kax::none));
  // The dropout-free loss on the whole data set, to judge the training by.
  auto eval_loss = kax::pmap<"i">(
      [](const auto& params, const auto& xs, const auto& ys) {
        auto prediction = forward<false>(params, xs, random::Key{});
        return kax::pmean<"i">(kax::mean(kax::square(prediction - ys)));
      },
      kax::in_axes(kax::none, 0, 0), kax::out_axes(kax::none));

  Params params = init_params(init_key);
  const auto opt = kax::optim::adam(learning_rate);
  auto state = opt.init(params);

  if (root)
    std::printf("MLP %zu-%zu-%zu-%zu (gelu, dropout keep %.2f), adam %g; %zu examples over %zu "
                "device(s) in %d process(es), %zu per device\n",
                d_in, hidden, hidden, d_out, keep, learning_rate, examples, total,
                kax::process_count(), m);
  const auto start = std::chrono::steady_clock::now();
  const float initial = eval_loss(params, x, y)();
  if (root) std::printf("  step %4d  eval loss %.5f\n", 0, initial);
  for (int step = 0; step < steps; ++step) {
    step_key = random::fold_in(dropout_key, static_cast<std::uint32_t>(step));
    const auto out = grad_step(params, x, y);  // (loss, dW1, db1, dW2, db2, dW3, db3)
    const auto grads = std::apply([](const auto&, const auto&... g) { return Params{g...}; }, out);
    std::tie(params, state) = opt.step(grads, state, params, kax::donate_argnums<1, 2>);
    if (root && (step + 1) % print_every == 0)
      std::printf("  step %4d  train loss %.5f (with dropout)\n", step + 1, std::get<0>(out)());
  }
  const float final_loss = eval_loss(params, x, y)();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  // Replicated parameters: the largest spread of any parameter over all devices (and processes,
  // whose Adam steps ran separately) must be zero.  The mapped dummy sets the device count.
  auto spread_of = kax::pmap<"i">(
      [](const auto& w, const auto& /*dummy*/) {
        return kax::max(kax::pmax<"i">(w) - kax::pmin<"i">(w));
      },
      kax::in_axes(kax::none, 0), kax::out_axes(kax::none));
  float spread = 0;
  const kax::Array<float, 1> dummy = kax::zeros<float>(n);
  std::apply([&](const auto&... w) { ((spread = std::fmax(spread, spread_of(w, dummy)())), ...); },
             params);

  const bool learned = final_loss < 0.1f * initial;
  const bool replicated = spread == 0.0f;
  if (root) {
    std::printf("  step %4d  eval loss %.5f (%.1f%% of the initial loss) in %.2f s\n", steps,
                final_loss, 100.0 * final_loss / initial, seconds);
    std::printf("  parameters identical on every device: %s\n", replicated ? "yes" : "NO");
    std::printf("%s\n", learned && replicated ? "training converged" : "TRAINING CHECK FAILED");
  }
  return learned && replicated ? 0 : 1;
}
