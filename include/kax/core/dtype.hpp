// kax/core/dtype.hpp — the element types kax arrays hold and how mixed expressions promote.
//
// Promotion follows JAX's type lattice with x64 enabled (jax.numpy.promote_types), restricted to
// kax's five dtypes:  bool < int32 < int64 < float < double.  Two arrays promote to the larger
// of the two (int64 + float -> float, as JAX; NumPy would say float64).  C++ scalars are "weakly
// typed" like Python scalars in JAX: `x * 2` keeps x's dtype, and a scalar only decides the
// result when its kind (bool < integer < floating) is higher than the array's: int32 array * 2.5
// is double, float array * 2.5 stays float.  True division of integers gives double (JAX's
// true_divide with x64), and transcendental functions of integers compute in double.
#pragma once

#include <concepts>
#include <cstdint>
#include <type_traits>

namespace kax {

// The dtypes a kax::Array can hold.
template <class T>
concept dtype = std::same_as<T, float> || std::same_as<T, double> ||
                std::same_as<T, std::int32_t> || std::same_as<T, std::int64_t> ||
                std::same_as<T, bool>;

// JAX's extended dtypes: element types that are not numbers (kax::random::Key, JAX's
// key<fry>).  Arrays hold them and kernels move them; arithmetic, promotion and reductions do not
// apply (those take kax::dtype).  A specialization provides `static constexpr const char* name`.
template <class T>
struct extended_dtype : std::false_type {};

// What a kax::Array can hold: a dtype or an extended dtype.
template <class T>
concept element_dtype = dtype<T> || extended_dtype<T>::value;

// A C++ scalar that can stand in an expression (it becomes a weakly typed constant).
template <class T>
concept scalar = std::is_arithmetic_v<std::remove_cvref_t<T>>;

namespace detail {

// Position in the promotion lattice.
template <dtype T>
inline constexpr int dtype_order = std::same_as<T, bool>           ? 0
                                   : std::same_as<T, std::int32_t> ? 1
                                   : std::same_as<T, std::int64_t> ? 2
                                   : std::same_as<T, float>        ? 3
                                                                   : 4;

// bool < integer < floating: decides whether a weak scalar may change the result dtype.
template <dtype T>
inline constexpr int dtype_kind = std::same_as<T, bool> ? 0 : std::integral<T> ? 1 : 2;

// The kax dtype a C++ scalar type maps to (int -> int32, long -> int64, long double -> double).
template <scalar S>
struct scalar_dtype {
  using U = std::remove_cvref_t<S>;
  using type = std::conditional_t<
      std::same_as<U, bool>, bool,
      std::conditional_t<std::is_integral_v<U>,
                         std::conditional_t<(sizeof(U) <= 4), std::int32_t, std::int64_t>,
                         std::conditional_t<std::same_as<U, float>, float, double>>>;
};

}  // namespace detail

template <scalar S>
using scalar_dtype_t = typename detail::scalar_dtype<S>::type;

// promote_t<A, B>: the dtype of an operation on two arrays (JAX's lattice, see above).
template <dtype A, dtype B>
using promote_t = std::conditional_t<(detail::dtype_order<A> >= detail::dtype_order<B>), A, B>;

// promote_weak_t<A, S>: the dtype of an operation on an array of A and a weak scalar of dtype S.
template <dtype A, dtype S>
using promote_weak_t = std::conditional_t<(detail::dtype_kind<S> > detail::dtype_kind<A>), S, A>;

// The floating dtype a function like sin or true division computes in.
template <dtype T>
using float_of_t = std::conditional_t<std::is_floating_point_v<T>, T, double>;

// NumPy's name of a dtype, for messages and kernel labels.
template <element_dtype T>
constexpr const char* dtype_name() {
  if constexpr (extended_dtype<T>::value) return extended_dtype<T>::name;
  else if constexpr (std::same_as<T, float>) return "float32";
  else if constexpr (std::same_as<T, double>) return "float64";
  else if constexpr (std::same_as<T, std::int32_t>) return "int32";
  else if constexpr (std::same_as<T, std::int64_t>) return "int64";
  else return "bool";
}

}  // namespace kax
