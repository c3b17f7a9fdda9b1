// kax/optim/adam.hpp — kax::optim::adam: optax.adam (optax.scale_by_adam, then scaling by
// -learning_rate).
//
//   auto opt = kax::optim::adam(1e-3);                         // b1 0.9, b2 0.999, eps 1e-8
//   auto state = opt.init(params);                             // count 0, mu = nu = 0
//   auto [updates, state2] = opt.update(grads, state, params);  // what to add to params
//   auto [params2, state3] = opt.step(grads, state, params);    // update and apply, fused
//   std::tie(params, state) = opt.step(grads, state, params, kax::donate_argnums<1, 2>);
//
// Per leaf and element, as optax:  mu = (1 - b1) g + b1 mu;  nu = (1 - b2) g^2 + b2 nu;
// count += 1;  update = -lr (mu / (1 - b1^count)) / (sqrt(nu / (1 - b2^count) + eps_root) + eps).
// The bias corrections are computed once per step on the host in double (optax computes them in
// the moment's dtype) and enter the kernel as scalars of the leaf's dtype.
//
// step is update + apply_updates in one kernel per leaf: it reads g, mu, nu and params once and
// writes mu, nu and params, where update + apply_updates launch two kernels and write the updates
// in between.  Donation (jax.jit's donate_argnums; kax::donate_argnums comes from
// kax/transform/pmap.hpp or kax/kax.hpp): index 1 donates the state, 2 the params.  A donated
// argument's buffers receive the new values and the returned Arrays share them, so a training loop
// `std::tie(params, state) = opt.step(grads, state, params, kax::donate_argnums<1, 2>)` allocates
// nothing.  As JAX invalidates donated buffers, every other handle to them sees the new values.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "kax/optim/detail/optimizer.hpp"
#include "kax/optim/tree.hpp"

namespace kax::optim {

// optax.ScaleByAdamState: the step count (on the host) and the first and second moments.
template <pytree P>
struct AdamState {
  std::int64_t count = 0;
  P mu;
  P nu;
};

namespace detail {

template <class S>
struct is_adam_state : std::false_type {};
template <class P>
struct is_adam_state<AdamState<P>> : std::true_type {};

// One leaf of adam: writes mu, nu, and the update or params + update (Apply).  Reads and writes
// of one element happen in the same iteration, so mu_out may be mu_in (donation) and out may be p.
template <class T, bool Apply>
struct adam_kernel {
  const T* g;
  const T* mu_in;
  T* mu_out;
  const T* nu_in;
  T* nu_out;
  const T* p;
  T* out;
  T b1, one_minus_b1, b2, one_minus_b2;
  T bias1, bias2;  // 1 - b1^count, 1 - b2^count
  T eps, eps_root, neg_lr;

  KOKKOS_INLINE_FUNCTION void operator()(const std::size_t i) const {
    const T gi = g[i];
    // optax.tree_utils.tree_update_moment(_per_elem_norm): (1 - decay) * g^order + decay * t.
    const T m = one_minus_b1 * gi + b1 * mu_in[i];
    const T v = one_minus_b2 * (gi * gi) + b2 * nu_in[i];
    mu_out[i] = m;
    nu_out[i] = v;
    const T u = neg_lr * ((m / bias1) / (kmath::sqrt(v / bias2 + eps_root) + eps));
    if constexpr (Apply) out[i] = p[i] + u;
    else out[i] = u;
  }
};

}  // namespace detail

// optax.adam's GradientTransformation; hyperparameters are public so that a schedule may change
// them between steps.  update and step come from detail::optimizer.
struct Adam : detail::optimizer<Adam> {
  double learning_rate = 0.0;
  double b1 = 0.9;
  double b2 = 0.999;
  double eps = 1e-8;
  double eps_root = 0.0;

  // optax.adam(...).init(params): count 0 and zero moments shaped like params.
  template <pytree P>
  AdamState<P> init(const P& params) const {
    static_assert(floating_pytree<P>,
                  "kax::optim::adam: parameters must be float or double arrays");
    return AdamState<P>{0, tree_zeros_like(params), tree_zeros_like(params)};
  }

 private:
  friend detail::optimizer<Adam>;

  static constexpr const char* name = "kax::optim::adam";

  template <class G, class S, class P>
  static constexpr bool check() {
    static_assert(detail::is_adam_state<S>::value,
                  "kax::optim::adam: the state must come from kax::optim::adam(...).init(params)");
    static_assert(floating_pytree<P>,
                  "kax::optim::adam: parameters must be float or double arrays");
    static_assert(same_structure_v<G, P>,
                  "kax::optim::adam: grads and params must have the same structure (nesting, "
                  "and leaf for leaf the same dtype and rank)");
    if constexpr (detail::is_adam_state<S>::value) {
      static_assert(same_structure_v<decltype(S::mu), P>,
                    "kax::optim::adam: the state's structure differs from the params' (was it "
                    "initialized from other params?)");
      return floating_pytree<P> && same_structure_v<G, P> &&
             same_structure_v<decltype(S::mu), P>;
    } else {
      return false;
    }
  }

  template <std::size_t... I>
  static constexpr bool check_donation() {
    static_assert(detail::valid_step_donation<I...>,
                  "kax::optim::adam: step's donate_argnums indices are 1 (state) and 2 (params)");
    return detail::valid_step_donation<I...>;
  }

  template <class S, class P>
  static void check_state_extents(const S& state, const P& params, const char* params_name) {
    detail::check_extents(name, "state.mu", state.mu, params_name, params);
    detail::check_extents(name, "state.nu", state.nu, params_name, params);
  }

  // update once check() has passed: fresh arrays for the updates and the state.
  template <class G, class S>
  std::pair<G, S> update_impl(const G& grads, const S& state) const {
    check_state_extents(state, grads, "grads");
    G updates = detail::tree_empty_like(grads);
    S out{state.count + 1, detail::tree_empty_like(state.mu), detail::tree_empty_like(state.nu)};
    tree_for_each(
        [&](const auto& g, const auto& mu, const auto& nu, const auto& mu2, const auto& nu2,
            const auto& u) {
          launch<false>("kax::optim::adam::update", out.count, g, mu, nu, mu2, nu2, g, u);
        },
        grads, state.mu, state.nu, out.mu, out.nu, updates);
    return {std::move(updates), std::move(out)};
  }

  // step once check() has passed; donated outputs share the inputs' buffers.
  template <bool DonateState, bool DonateParams, class G, class S, class P>
  std::pair<P, S> step_impl(const G& grads, const S& state, const P& params) const {
    detail::check_extents(name, "grads", grads, "params", params);
    check_state_extents(state, params, "params");
    P new_params = DonateParams ? params : detail::tree_empty_like(params);
    S out = DonateState ? S{state.count + 1, state.mu, state.nu}
                        : S{state.count + 1, detail::tree_empty_like(state.mu),
                            detail::tree_empty_like(state.nu)};
    tree_for_each(
        [&](const auto& g, const auto& mu, const auto& nu, const auto& p, const auto& mu2,
            const auto& nu2, const auto& p2) {
          launch<true>("kax::optim::adam", out.count, g, mu, nu, mu2, nu2, p, p2);
        },
        grads, state.mu, state.nu, params, out.mu, out.nu, new_params);
    return {std::move(new_params), std::move(out)};
  }

  // One kernel for one leaf at step `count` (already incremented).
  template <bool Apply, class A>
  void launch(const char* label, std::int64_t count, const A& g, const A& mu, const A& nu,
              const A& mu_out, const A& nu_out, const A& p, const A& out) const {
    using T = typename A::value_type;
    const double c = static_cast<double>(count);
    const detail::adam_kernel<T, Apply> k{
        g.data(),
        mu.data(),
        mu_out.data(),
        nu.data(),
        nu_out.data(),
        p.data(),
        out.data(),
        static_cast<T>(b1),
        static_cast<T>(1.0 - b1),
        static_cast<T>(b2),
        static_cast<T>(1.0 - b2),
        static_cast<T>(1.0 - std::pow(b1, c)),
        static_cast<T>(1.0 - std::pow(b2, c)),
        static_cast<T>(eps),
        static_cast<T>(eps_root),
        static_cast<T>(-learning_rate)};
    detail::for_each_element<typename A::memory_space>(label, g.size(), k);
  }
};

// optax.adam(learning_rate, b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0).
inline Adam adam(double learning_rate, double b1 = 0.9, double b2 = 0.999, double eps = 1e-8,
                 double eps_root = 0.0) {
  return Adam{{}, learning_rate, b1, b2, eps, eps_root};
}

}  // namespace kax::optim
