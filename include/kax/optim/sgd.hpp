// kax/optim/sgd.hpp — kax::optim::sgd: optax.sgd (optax.trace, then scaling by -learning_rate).
//
//   auto opt = kax::optim::sgd(0.1, 0.9);                      // lr, momentum, nesterov = false
//   auto state = opt.init(params);
//   auto [updates, state2] = opt.update(grads, state, params);  // what to add to params
//   auto [params2, state3] = opt.step(grads, state, params);    // update and apply, fused
//
// With momentum the state is optax's TraceState: trace = g + momentum * trace (it starts at zero,
// so the first trace is g) and the update is -lr * trace, or -lr * (g + momentum * trace) with
// nesterov.  Without momentum (momentum == 0, as optax's momentum=None) the update is -lr * g and
// the trace leaves are empty arrays.  step(..., kax::donate_argnums<1, 2>) writes the new state
// and params into the donated buffers (see adam.hpp for the rules).
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>

#include "kax/optim/detail/optimizer.hpp"
#include "kax/optim/tree.hpp"

namespace kax::optim {

// optax.TraceState: the momentum buffer (empty arrays when the optimizer has no momentum).
template <pytree P>
struct SgdState {
  P trace;
};

namespace detail {

template <class S>
struct is_sgd_state : std::false_type {};
template <class P>
struct is_sgd_state<SgdState<P>> : std::true_type {};

// One leaf of sgd: writes the new trace (Momentum) and the update, or params + update (Apply).
template <class T, bool Momentum, bool Apply>
struct sgd_kernel {
  const T* g;
  const T* trace_in;
  T* trace_out;
  const T* p;
  T* out;
  T neg_lr;
  T momentum;
  bool nesterov;

  KOKKOS_INLINE_FUNCTION void operator()(const std::size_t i) const {
    const T gi = g[i];
    T u;
    if constexpr (Momentum) {
      // optax.trace: f(g, t) = g + decay * t, applied again to the new trace for nesterov.
      const T t = gi + momentum * trace_in[i];
      trace_out[i] = t;
      u = neg_lr * (nesterov ? gi + momentum * t : t);
    } else {
      u = neg_lr * gi;
    }
    if constexpr (Apply) out[i] = p[i] + u;
    else out[i] = u;
  }
};

}  // namespace detail

// optax.sgd's GradientTransformation; hyperparameters are public so that a schedule may change
// them between steps.  update and step come from detail::optimizer.
struct Sgd : detail::optimizer<Sgd> {
  double learning_rate = 0.0;
  double momentum = 0.0;
  bool nesterov = false;

  bool has_momentum() const { return momentum != 0.0; }

  // optax.sgd(...).init(params): a zero trace per leaf, or empty leaves without momentum.
  template <pytree P>
  SgdState<P> init(const P& params) const {
    static_assert(floating_pytree<P>, "kax::optim::sgd: parameters must be float or double arrays");
    if (has_momentum()) return SgdState<P>{tree_zeros_like(params)};
    return SgdState<P>{P{}};
  }

 private:
  friend detail::optimizer<Sgd>;

  static constexpr const char* name = "kax::optim::sgd";

  template <class G, class S, class P>
  static constexpr bool check() {
    static_assert(detail::is_sgd_state<S>::value,
                  "kax::optim::sgd: the state must come from kax::optim::sgd(...).init(params)");
    static_assert(floating_pytree<P>,
                  "kax::optim::sgd: parameters must be float or double arrays");
    static_assert(same_structure_v<G, P>,
                  "kax::optim::sgd: grads and params must have the same structure (nesting, "
                  "and leaf for leaf the same dtype and rank)");
    if constexpr (detail::is_sgd_state<S>::value) {
      static_assert(same_structure_v<decltype(S::trace), P>,
                    "kax::optim::sgd: the state's structure differs from the params' (was it "
                    "initialized from other params?)");
      return floating_pytree<P> && same_structure_v<G, P> &&
             same_structure_v<decltype(S::trace), P>;
    } else {
      return false;
    }
  }

  template <std::size_t... I>
  static constexpr bool check_donation() {
    static_assert(detail::valid_step_donation<I...>,
                  "kax::optim::sgd: step's donate_argnums indices are 1 (state) and 2 (params)");
    return detail::valid_step_donation<I...>;
  }

  // update once check() has passed: fresh arrays for the updates and the state.
  template <class G, class S>
  std::pair<G, S> update_impl(const G& grads, const S& state) const {
    if (has_momentum())
      detail::check_extents(name, "state.trace", state.trace, "grads", grads);
    G updates = detail::tree_empty_like(grads);
    S out{has_momentum() ? detail::tree_empty_like(state.trace) : state.trace};
    tree_for_each(
        [&](const auto& g, const auto& t, const auto& t_out, const auto& u) {
          launch<false>("kax::optim::sgd::update", g, t, t_out, g, u);
        },
        grads, state.trace, out.trace, updates);
    return {std::move(updates), std::move(out)};
  }

  // step once check() has passed; donated outputs share the inputs' buffers.
  template <bool DonateState, bool DonateParams, class G, class S, class P>
  std::pair<P, S> step_impl(const G& grads, const S& state, const P& params) const {
    detail::check_extents(name, "grads", grads, "params", params);
    if (has_momentum())
      detail::check_extents(name, "state.trace", state.trace, "params", params);
    P new_params = DonateParams ? params : detail::tree_empty_like(params);
    S out{(DonateState || !has_momentum()) ? state.trace : detail::tree_empty_like(state.trace)};
    tree_for_each(
        [&](const auto& g, const auto& t, const auto& t_out, const auto& p, const auto& p_out) {
          launch<true>("kax::optim::sgd", g, t, t_out, p, p_out);
        },
        grads, state.trace, out.trace, params, new_params);
    return {std::move(new_params), std::move(out)};
  }

  // One kernel for one leaf; `out` receives the update, or p + update when Apply.
  template <bool Apply, class A>
  void launch(const char* label, const A& g, const A& t, const A& t_out, const A& p,
              const A& out) const {
    using T = typename A::value_type;
    using M = typename A::memory_space;
    const T neg_lr = static_cast<T>(-learning_rate);
    const T mom = static_cast<T>(momentum);
    if (has_momentum())
      detail::for_each_element<M>(label, g.size(),
                                  detail::sgd_kernel<T, true, Apply>{g.data(), t.data(),
                                                                     t_out.data(), p.data(),
                                                                     out.data(), neg_lr, mom,
                                                                     nesterov});
    else
      detail::for_each_element<M>(label, g.size(),
                                  detail::sgd_kernel<T, false, Apply>{g.data(), nullptr, nullptr,
                                                                      p.data(), out.data(), neg_lr,
                                                                      mom, nesterov});
  }
};

// optax.sgd(learning_rate, momentum=None, nesterov=False); momentum 0 means no trace.
inline Sgd sgd(double learning_rate, double momentum = 0.0, bool nesterov = false) {
  return Sgd{{}, learning_rate, momentum, nesterov};
}

}  // namespace kax::optim
