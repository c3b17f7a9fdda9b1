// kax/exec/eval.hpp — kax::eval: evaluate an expression into a new Array (one fused kernel).
#pragma once

#include "kax/core/array.hpp"
#include "kax/exec/assign.hpp"

namespace kax {

// Evaluates `e` into a new Array of its dtype and shape (jax.jit(f)(x) for an elementwise f).
template <expression E>
Array<value_type_of<E>, rank_of<E>> eval(const E& e) {
  return Array<value_type_of<E>, rank_of<E>>(e);
}

// Evaluates `e` into a new Array with kernels on the given execution space instance.
template <class ExecSpace, expression E>
  requires Kokkos::is_execution_space<ExecSpace>::value
Array<value_type_of<E>, rank_of<E>, typename ExecSpace::memory_space> eval(const ExecSpace& space,
                                                                           const E& e) {
  const auto s = e.extents();
  auto out = detail::uninitialized<value_type_of<E>, rank_of<E>, typename ExecSpace::memory_space>(s);
  detail::evaluate_into<ExecSpace, typename ExecSpace::memory_space>(space, detail::dense_target(out.data(), s), e);
  return out;
}

// An Array evaluates to itself (lets generic code call eval on anything array-like).
template <element_dtype T, std::size_t R, class M>
const Array<T, R, M>& eval(const Array<T, R, M>& a) {
  return a;
}

}  // namespace kax
