// kax/expr/reducers.hpp — what each reduction computes: its accumulator, identity and combine.
//
// A reducer over input dtype In provides
//   acc_type, result_type                 the accumulator and the result dtype (JAX's rules)
//   identity()                            the neutral accumulator
//   lift(x, pos)                          one element at position `pos` of the reduced space
//   combine(a, b)                         a then b (b holds later positions than a, or equal)
//   finalize(a, count)                    the result from the accumulator over `count` elements
//   needs_elements                        true when an empty reduction has no value (max, argmax)
// Kernels (exec/reduce_kernels.hpp) are generic over reducers; they keep several accumulators
// per thread and combine them pairwise, so float sums are accurate and deterministic.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "kax/core/config.hpp"
#include "kax/core/dtype.hpp"

namespace kax::detail {

// JAX: sum/prod of bool are int32; integers and floats keep their dtype.
template <dtype In>
using sum_result_t = std::conditional_t<std::is_same_v<In, bool>, std::int32_t, In>;

template <dtype In>
struct sum_reducer {
  static constexpr const char* name = "sum";
  static constexpr bool needs_elements = false;
  using result_type = sum_result_t<In>;
  using acc_type = result_type;
  KOKKOS_FORCEINLINE_FUNCTION static acc_type identity() { return acc_type(0); }
  KOKKOS_FORCEINLINE_FUNCTION static acc_type lift(In x, std::size_t) { return static_cast<acc_type>(x); }
  KOKKOS_FORCEINLINE_FUNCTION static acc_type combine(acc_type a, acc_type b) { return a + b; }
  KOKKOS_FORCEINLINE_FUNCTION static result_type finalize(acc_type a, std::size_t) { return a; }
};

template <dtype In>
struct prod_reducer {
  static constexpr const char* name = "prod";
  static constexpr bool needs_elements = false;
  using result_type = sum_result_t<In>;
  using acc_type = result_type;
  KOKKOS_FORCEINLINE_FUNCTION static acc_type identity() { return acc_type(1); }
  KOKKOS_FORCEINLINE_FUNCTION static acc_type lift(In x, std::size_t) { return static_cast<acc_type>(x); }
  KOKKOS_FORCEINLINE_FUNCTION static acc_type combine(acc_type a, acc_type b) { return a * b; }
  KOKKOS_FORCEINLINE_FUNCTION static result_type finalize(acc_type a, std::size_t) { return a; }
};

// jnp.mean: integers and bools average in the floating dtype (float64, as JAX with x64).
template <dtype In>
struct mean_reducer {
  static constexpr const char* name = "mean";
  static constexpr bool needs_elements = false;
  using result_type = float_of_t<In>;
  using acc_type = result_type;
  KOKKOS_FORCEINLINE_FUNCTION static acc_type identity() { return acc_type(0); }
  KOKKOS_FORCEINLINE_FUNCTION static acc_type lift(In x, std::size_t) { return static_cast<acc_type>(x); }
  KOKKOS_FORCEINLINE_FUNCTION static acc_type combine(acc_type a, acc_type b) { return a + b; }
  // An empty mean is 0/0 = NaN, as NumPy and JAX give.
  KOKKOS_FORCEINLINE_FUNCTION static result_type finalize(acc_type a, std::size_t n) {
    return a / static_cast<acc_type>(n);
  }
};

template <dtype T>
KOKKOS_INLINE_FUNCTION constexpr T lowest_value() {
  if constexpr (std::is_floating_point_v<T>) return -std::numeric_limits<T>::infinity();
  else return std::numeric_limits<T>::lowest();
}
template <dtype T>
KOKKOS_INLINE_FUNCTION constexpr T highest_value() {
  if constexpr (std::is_floating_point_v<T>) return std::numeric_limits<T>::infinity();
  else return std::numeric_limits<T>::max();
}

// max/min propagate NaN, as jnp.max/np.max do (`a != a` is the NaN test; it folds away for ints).
template <dtype In>
struct max_reducer {
  static constexpr const char* name = "max";
  static constexpr bool needs_elements = true;
  using result_type = In;
  using acc_type = In;
  KOKKOS_FORCEINLINE_FUNCTION static acc_type identity() { return lowest_value<In>(); }
  KOKKOS_FORCEINLINE_FUNCTION static acc_type lift(In x, std::size_t) { return x; }
  KOKKOS_FORCEINLINE_FUNCTION static acc_type combine(acc_type a, acc_type b) {
    return (a > b || a != a) ? a : b;
  }
  KOKKOS_FORCEINLINE_FUNCTION static result_type finalize(acc_type a, std::size_t) { return a; }
};

template <dtype In>
struct min_reducer {
  static constexpr const char* name = "min";
  static constexpr bool needs_elements = true;
  using result_type = In;
  using acc_type = In;
  KOKKOS_FORCEINLINE_FUNCTION static acc_type identity() { return highest_value<In>(); }
  KOKKOS_FORCEINLINE_FUNCTION static acc_type lift(In x, std::size_t) { return x; }
  KOKKOS_FORCEINLINE_FUNCTION static acc_type combine(acc_type a, acc_type b) {
    return (a < b || a != a) ? a : b;
  }
  KOKKOS_FORCEINLINE_FUNCTION static result_type finalize(acc_type a, std::size_t) { return a; }
};

template <dtype In>
struct any_reducer {
  static constexpr const char* name = "any";
  static constexpr bool needs_elements = false;
  using result_type = bool;
  using acc_type = bool;
  KOKKOS_FORCEINLINE_FUNCTION static acc_type identity() { return false; }
  KOKKOS_FORCEINLINE_FUNCTION static acc_type lift(In x, std::size_t) { return x != In(0); }
  KOKKOS_FORCEINLINE_FUNCTION static acc_type combine(acc_type a, acc_type b) { return a || b; }
  KOKKOS_FORCEINLINE_FUNCTION static result_type finalize(acc_type a, std::size_t) { return a; }
};

template <dtype In>
struct all_reducer {
  static constexpr const char* name = "all";
  static constexpr bool needs_elements = false;
  using result_type = bool;
  using acc_type = bool;
  KOKKOS_FORCEINLINE_FUNCTION static acc_type identity() { return true; }
  KOKKOS_FORCEINLINE_FUNCTION static acc_type lift(In x, std::size_t) { return x != In(0); }
  KOKKOS_FORCEINLINE_FUNCTION static acc_type combine(acc_type a, acc_type b) { return a && b; }
  KOKKOS_FORCEINLINE_FUNCTION static result_type finalize(acc_type a, std::size_t) { return a; }
};

// argmax/argmin: the first position of the extreme value; a NaN counts as the extreme (NumPy).
template <dtype In>
struct value_and_position {
  In value;
  std::int64_t position;
};

template <dtype In, bool Max>
struct arg_reducer {
  static constexpr const char* name = Max ? "argmax" : "argmin";
  static constexpr bool needs_elements = true;
  using result_type = std::int64_t;
  using acc_type = value_and_position<In>;
  KOKKOS_FORCEINLINE_FUNCTION static acc_type identity() {
    return {Max ? lowest_value<In>() : highest_value<In>(), std::numeric_limits<std::int64_t>::max()};
  }
  KOKKOS_FORCEINLINE_FUNCTION static acc_type lift(In x, std::size_t pos) {
    return {x, static_cast<std::int64_t>(pos)};
  }
  KOKKOS_FORCEINLINE_FUNCTION static acc_type combine(acc_type a, acc_type b) {
    const bool a_nan = a.value != a.value, b_nan = b.value != b.value;
    if (a_nan || b_nan) {
      if (a_nan && b_nan) return a.position <= b.position ? a : b;
      return a_nan ? a : b;
    }
    const bool b_better = Max ? b.value > a.value : b.value < a.value;
    if (b_better) return b;
    if (b.value == a.value && b.position < a.position) return b;
    return a;
  }
  KOKKOS_FORCEINLINE_FUNCTION static result_type finalize(acc_type a, std::size_t) { return a.position; }
};

template <dtype In>
using argmax_reducer = arg_reducer<In, true>;
template <dtype In>
using argmin_reducer = arg_reducer<In, false>;

}  // namespace kax::detail
