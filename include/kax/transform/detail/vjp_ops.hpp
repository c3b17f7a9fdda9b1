// kax/transform/detail/vjp_ops.hpp — the elementwise derivatives kax::grad's backward pass uses
// (JAX's JVP/transpose rules for each primitive, in lax.py and jax.nn).
//
// Each is a binary op in the shape of expr/ops.hpp, applied as BinaryExpr<op, X, G> to the
// forward operand x and the cotangent g: apply(x, g) = f'(x) * g.  The forward operand is
// recomputed inside the backward kernel rather than stored (XLA's rematerialization of
// elementwise work), so the gradient of an elementwise chain is one kernel with no temporaries.
// Ops on two forward operands (pow, maximum, minimum) give the partial derivative, multiplied by
// g outside.
#pragma once

#include <cmath>

#include "kax/expr/ops.hpp"
#include "kax/nn/detail/erf.hpp"
#include "kax/nn/detail/ops.hpp"

#include "kax/core/detail/simd_warnings_off.hpp"

namespace kax::detail::vjp {

using kax::detail::floating;

struct abs_grad : floating {
  static constexpr const char* name = "kax::grad(abs)";
  template <class T>
  KOKKOS_FORCEINLINE_FUNCTION static T apply(T x, T g) { return x > T(0) ? g : (x < T(0) ? -g : T(0)); }
};
struct square_grad : floating {
  static constexpr const char* name = "kax::grad(square)";
  template <class T>
  KOKKOS_FORCEINLINE_FUNCTION static T apply(T x, T g) { return T(2) * x * g; }
};
struct sqrt_grad : floating {
  static constexpr const char* name = "kax::grad(sqrt)";
  template <class T>
  KOKKOS_FORCEINLINE_FUNCTION static T apply(T x, T g) { return g * T(0.5) / sqrt_op::apply(x); }
};
struct sin_grad : floating {
  static constexpr const char* name = "kax::grad(sin)";
  template <class T>
  KOKKOS_FORCEINLINE_FUNCTION static T apply(T x, T g) { return cos_op::apply(x) * g; }
};
struct cos_grad : floating {
  static constexpr const char* name = "kax::grad(cos)";
  template <class T>
  KOKKOS_FORCEINLINE_FUNCTION static T apply(T x, T g) { return -sin_op::apply(x) * g; }
};
struct exp_grad : floating {
  static constexpr const char* name = "kax::grad(exp)";
  template <class T>
  KOKKOS_FORCEINLINE_FUNCTION static T apply(T x, T g) { return exp_op::apply(x) * g; }
};
struct log_grad : floating {
  static constexpr const char* name = "kax::grad(log)";
  template <class T>
  KOKKOS_FORCEINLINE_FUNCTION static T apply(T x, T g) { return g / x; }
};
struct tanh_grad : floating {
  static constexpr const char* name = "kax::grad(tanh)";
  template <class T>
  KOKKOS_FORCEINLINE_FUNCTION static T apply(T x, T g) {
    const T t = tanh_op::apply(x);
    return (T(1) - t * t) * g;
  }
};
// jax.nn.relu's derivative is 0 at 0.
struct relu_grad : floating {
  static constexpr const char* name = "kax::grad(nn::relu)";
  template <class T>
  KOKKOS_FORCEINLINE_FUNCTION static T apply(T x, T g) { return x > T(0) ? g : T(0); }
};
struct sigmoid_grad : floating {
  static constexpr const char* name = "kax::grad(nn::sigmoid)";
  template <class T>
  KOKKOS_FORCEINLINE_FUNCTION static T apply(T x, T g) {
    const T s = kax::nn::detail::sigmoid_op::apply(x);
    return s * (T(1) - s) * g;
  }
};
struct silu_grad : floating {
  static constexpr const char* name = "kax::grad(nn::silu)";
  template <class T>
  KOKKOS_FORCEINLINE_FUNCTION static T apply(T x, T g) {
    const T s = kax::nn::detail::sigmoid_op::apply(x);
    return s * (T(1) + x * (T(1) - s)) * g;
  }
};
// d/dx of x/2 (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3).
struct gelu_tanh_grad : floating {
  static constexpr const char* name = "kax::grad(nn::gelu)";
  template <class T>
  KOKKOS_FORCEINLINE_FUNCTION static T apply(T x, T g) {
    const T c = T(0.79788456080286535588);
    const T x2 = x * x;
    const T t = tanh_op::apply(c * (x + T(0.044715) * x2 * x));
    return (T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * c * (T(1) + T(3 * 0.044715) * x2)) * g;
  }
};
// d/dx of x Phi(x) = Phi(x) + x phi(x).
struct gelu_erf_grad : floating {
  static constexpr const char* name = "kax::grad(nn::gelu)";
  template <class T>
  KOKKOS_FORCEINLINE_FUNCTION static T apply(T x, T g) {
    const T v = x / T(1.41421356237309504880);
    T e;
    if constexpr (on_device()) e = kmath::erf(v);
    else e = kax::nn::detail::erf_host(v);
    const T pdf = exp_op::apply(T(-0.5) * x * x) * T(0.39894228040143267794);
    return (T(0.5) * (T(1) + e) + x * pdf) * g;
  }
};

// pow(x, y): d/dx = y x^(y-1) (0 where y == 0), d/dy = x^y log(x) with log(0) read as 0, as JAX.
struct pow_dx : floating {
  static constexpr const char* name = "kax::grad(pow)";
  template <class T>
  KOKKOS_FORCEINLINE_FUNCTION static T apply(T x, T y) {
    return y == T(0) ? T(0) : y * pow_op::apply(x, y - T(1));
  }
};
struct pow_dy : floating {
  static constexpr const char* name = "kax::grad(pow)";
  template <class T>
  KOKKOS_FORCEINLINE_FUNCTION static T apply(T x, T y) {
    return pow_op::apply(x, y) * log_op::apply(x == T(0) ? T(1) : x);
  }
};
// maximum(x, y) / minimum(x, y): the cotangent goes to the chosen operand, half to each on a
// tie (JAX's balanced rule).
struct maximum_dx : floating {
  static constexpr const char* name = "kax::grad(maximum)";
  template <class T>
  KOKKOS_FORCEINLINE_FUNCTION static T apply(T x, T y) { return x > y ? T(1) : (x == y ? T(0.5) : T(0)); }
};
struct minimum_dx : floating {
  static constexpr const char* name = "kax::grad(minimum)";
  template <class T>
  KOKKOS_FORCEINLINE_FUNCTION static T apply(T x, T y) { return x < y ? T(1) : (x == y ? T(0.5) : T(0)); }
};

// The derivative op of a unary forward op (void: no rule; `none`: the gradient is zero).
struct none {};
template <class Op>
struct unary_rule {
  using type = void;
};
template <> struct unary_rule<abs_op> { using type = abs_grad; };
template <> struct unary_rule<square_op> { using type = square_grad; };
template <> struct unary_rule<sqrt_op> { using type = sqrt_grad; };
template <> struct unary_rule<sin_op> { using type = sin_grad; };
template <> struct unary_rule<cos_op> { using type = cos_grad; };
template <> struct unary_rule<exp_op> { using type = exp_grad; };
template <> struct unary_rule<log_op> { using type = log_grad; };
template <> struct unary_rule<tanh_op> { using type = tanh_grad; };
template <> struct unary_rule<kax::nn::detail::relu_op> { using type = relu_grad; };
template <> struct unary_rule<kax::nn::detail::sigmoid_op> { using type = sigmoid_grad; };
template <> struct unary_rule<kax::nn::detail::silu_op> { using type = silu_grad; };
template <> struct unary_rule<kax::nn::detail::gelu_tanh_op> { using type = gelu_tanh_grad; };
template <> struct unary_rule<kax::nn::detail::gelu_erf_op> { using type = gelu_erf_grad; };
// Piecewise constant, or cut on purpose: zero gradient.
template <> struct unary_rule<floor_op> { using type = none; };
template <> struct unary_rule<ceil_op> { using type = none; };
template <> struct unary_rule<stop_gradient_op> { using type = none; };
template <> struct unary_rule<logical_not_op> { using type = none; };
template <> struct unary_rule<kax::nn::detail::finite_or_zero_op> { using type = none; };

}  // namespace kax::detail::vjp

#include "kax/core/detail/simd_warnings_on.hpp"
