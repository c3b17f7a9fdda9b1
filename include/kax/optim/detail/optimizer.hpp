// kax/optim/detail/optimizer.hpp — kax::optim::detail::optimizer<Derived>: the public entry points
// every optimizer shares (update with and without params, step with and without donation), over
// what each optimizer provides itself:
//
//   name                        "kax::optim::adam": the prefix of its run-time error messages
//   check<G, S, P>()            static_asserts on the argument types; true when they passed
//   check_donation<I...>()      static_assert on step's donate_argnums indices; true when valid
//   update_impl(grads, state)   the updates and the new state, once check() has passed
//   step_impl<DonateState, DonateParams>(grads, state, params)
//   init(params)                optax's init
//
// The checks that name the optimizer stay in Derived because static_assert messages must be
// string literals.  Derived may keep these members private and befriend optimizer<Derived>.
#pragma once

#include <cstddef>
#include <utility>

#include "kax/optim/tree.hpp"
#include "kax/transform/donate.hpp"

namespace kax::optim::detail {

// The donate_argnums indices an optimizer's step accepts: 1 (state) and 2 (params).
template <std::size_t... I>
inline constexpr bool valid_step_donation = ((I == 1 || I == 2) && ...);
template <std::size_t... I>
inline constexpr bool donates_state = ((I == 1) || ...);
template <std::size_t... I>
inline constexpr bool donates_params = ((I == 2) || ...);

// The base of an optax GradientTransformation with a fused step (CRTP).  It has no members, so
// Derived stays an aggregate; its initializer starts with {} for this base.
template <class Derived>
struct optimizer {
  // optax's update(grads, state, params): the updates to add to params, and the new state.
  template <pytree G, class S, pytree P>
  std::pair<G, S> update(const G& grads, const S& state, const P& params) const {
    if constexpr (Derived::template check<G, S, P>()) {
      check_extents(Derived::name, "grads", grads, "params", params);
      return derived().update_impl(grads, state);
    } else {
      return {};  // the static_assert in check() has reported the error
    }
  }

  // update without params (sgd and adam do not read them), as optax's params=None.
  template <pytree G, class S>
  std::pair<G, S> update(const G& grads, const S& state) const {
    if constexpr (Derived::template check<G, S, G>()) return derived().update_impl(grads, state);
    else return {};
  }

  // update and apply_updates fused: one kernel per leaf; fresh arrays for params and state.
  template <pytree G, class S, pytree P>
  std::pair<P, S> step(const G& grads, const S& state, const P& params) const {
    if constexpr (Derived::template check<G, S, P>())
      return derived().template step_impl<false, false>(grads, state, params);
    else
      return {};
  }

  // step with donation: kax::donate_argnums<1> (state), <2> (params) or <1, 2>.  The donated
  // arguments' buffers receive the new values and the returned Arrays share them: no allocation.
  template <pytree G, class S, pytree P, std::size_t... I>
  std::pair<P, S> step(const G& grads, const S& state, const P& params,
                       const donate_argnums_t<I...>& /*donate*/) const {
    // Checked before the argument types, so that its error comes first.
    constexpr bool valid_donation = Derived::template check_donation<I...>();
    if constexpr (Derived::template check<G, S, P>() && valid_donation)
      return derived().template step_impl<donates_state<I...>, donates_params<I...>>(
          grads, state, params);
    else
      return {};
  }

 private:
  const Derived& derived() const { return static_cast<const Derived&>(*this); }
};

}  // namespace kax::optim::detail
