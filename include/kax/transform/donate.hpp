// kax/transform/donate.hpp — kax::donate_argnums<I...>: which arguments' buffers a call may reuse
// for its results (jax.jit / jax.pmap's donate_argnums).  Used by kax::pmap and kax::optim's step.
#pragma once

#include <cstddef>

namespace kax {

// jax.pmap(f, donate_argnums=(0,)): the listed arguments' buffers may hold the results; their
// old values are overwritten (JAX invalidates donated buffers).
template <std::size_t... I>
struct donate_argnums_t {};
template <std::size_t... I>
inline constexpr donate_argnums_t<I...> donate_argnums{};

}  // namespace kax
