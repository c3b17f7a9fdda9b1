// examples/monte_carlo.cpp — the seed's parallel Monte Carlo: many Metropolis chains at once, with
// kax::vmap over the chains and kax::random's JAX-compatible keys.
//
// One chain's step, written for ONE chain as in JAX:
//     def step(key, x):
//         kp, ku = jax.random.split(key)
//         proposal = x + scale * jax.random.normal(kp, x.shape)
//         log_ratio = log_prob(proposal) - log_prob(x)
//         accept = jnp.log(jax.random.uniform(ku)) < log_ratio
//         return jnp.where(accept, proposal, x), accept
//     keys = jax.random.split(jax.random.fold_in(key, t), n_chains)
//     x, accepted = jax.vmap(step)(keys, x)
// The target is a Gaussian with mean mu and unit variance in D dimensions, so the chains' average
// state must approach mu.  Every random number is generated inside the fused kernels (no random
// arrays in memory); the example prints the acceptance rate and the average state, checks both,
// and exits non-zero when they are off.  (pmap over devices comes with kax::pmap.)
#include <chrono>
#include <cmath>
#include <cstdio>
#include <tuple>
#include <vector>

#include "kax/kax.hpp"

int main(int argc, char* argv[]) {
  kax::ScopeGuard guard(argc, argv);
  namespace random = kax::random;
  constexpr std::size_t chains = 4096, dims = 4, steps = 400, burn_in = 100;
  const std::vector<float> mu_values = {1.0f, -2.0f, 0.5f, 3.0f};
  const kax::Array<float, 1> mu = kax::from<float, 1>(mu_values, {dims});
  const float scale = 0.8f;

  auto log_prob = [mu](auto x) { return -0.5f * kax::sum(kax::square(x - mu)); };
  auto step = [&](auto key, auto x) {
    const auto [kp, ku] = random::split<2>(key);
    const auto proposal = x + scale * random::normal<float>(kp, {dims});
    const auto log_ratio = log_prob(proposal) - log_prob(x);
    const auto accept = kax::log(random::uniform<float>(ku)) < log_ratio;
    return std::make_tuple(kax::where(accept, proposal, x), accept);
  };
  const auto step_all = kax::vmap(step);

  const random::Key key = random::key(0);
  kax::Array<float, 2> x = kax::zeros<float>(chains, dims);  // every chain starts at the origin
  kax::Array<float, 2> next(chains, dims);
  kax::Array<bool, 1> accepted(chains);
  kax::Array<float, 1> state_sum = kax::zeros<float>(dims);
  std::size_t accepts = 0;

  std::printf("plan of one vmapped step (%zu chains, %zu dims):\n%s\n", chains, dims,
              kax::plan_of(std::get<0>(step_all(random::split(key, chains), x))).c_str());
  const auto t0 = std::chrono::steady_clock::now();
  for (std::size_t t = 0; t < steps; ++t) {
    const auto keys = random::split(random::fold_in(key, static_cast<std::uint32_t>(t)), chains);
    const auto [new_x, acc] = step_all(keys, x);
    accepted = acc;
    next = new_x;
    std::swap(x, next);
    if (t >= burn_in) {
      state_sum = state_sum + kax::sum(x, 0);
      accepts += static_cast<std::size_t>(kax::Array<std::int64_t, 0>(kax::sum(kax::where(accepted, 1, 0)))());
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  const double samples = double(chains) * double(steps - burn_in);
  const double rate = double(accepts) / samples;
  std::printf("%zu chains x %zu steps in %.3f s (%.1f M chain-steps/s)\n", chains, steps, seconds,
              double(chains) * steps / seconds * 1e-6);
  std::printf("accept rate %.3f\n", rate);
  bool ok = rate > 0.2 && rate < 0.9;
  std::printf("average state:");
  for (std::size_t d = 0; d < dims; ++d) {
    const double avg = state_sum(d) / samples;
    std::printf(" %.3f (target %.1f)", avg, mu_values[d]);
    // Autocorrelated chains: a loose bound, still far tighter than any bug would give.
    ok = ok && std::abs(avg - mu_values[d]) < 0.05;
  }
  std::printf("\n%s\n", ok ? "ok" : "WRONG: acceptance rate or average state off");
  return ok ? 0 : 1;
}
