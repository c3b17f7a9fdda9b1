// kax/expr/ops.hpp — the elementwise operations: what each computes and in which dtype.
//
// Each op is a stateless struct: `name` (JAX's primitive name, used in messages and labels),
// `operand_t<P>` (the dtype operands are converted to, from the promoted dtype P), `result_t<P>`,
// and a static `apply`.  Host kernels get kax's vectorizable math (expr/detail/vector_math.hpp);
// device kernels use Kokkos' math, which maps to the vendor's intrinsics.
#pragma once

#include <cmath>
#include <type_traits>

#include "kax/core/config.hpp"
#include "kax/core/dtype.hpp"
#include "kax/expr/detail/libmvec.hpp"
#include "kax/expr/detail/vector_math.hpp"

namespace kax::detail {

// True in the device compilation pass of CUDA/HIP/SYCL, where host-only math is unavailable.
KOKKOS_INLINE_FUNCTION constexpr bool on_device() {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__) || defined(__SYCL_DEVICE_ONLY__)
  return true;
#else
  return false;
#endif
}

// Computes in, and returns, the promoted dtype.
struct arithmetic {
  template <class T>
  using operand_t = T;
  template <class T>
  using result_t = T;
};

struct comparison {
  template <class T>
  using operand_t = T;
  template <class T>
  using result_t = bool;
};

struct floating {
  template <class T>
  using operand_t = float_of_t<T>;
  template <class T>
  using result_t = float_of_t<T>;
};

struct logical {
  template <class T>
  using operand_t = bool;
  template <class T>
  using result_t = bool;
};

// ---- binary arithmetic ------------------------------------------------------------------------
struct add_op : arithmetic {
  static constexpr const char* name = "kax::add";
  template <class T>
  KOKKOS_FORCEINLINE_FUNCTION static T apply(T a, T b) { return static_cast<T>(a + b); }
};
struct sub_op : arithmetic {
  static constexpr const char* name = "kax::subtract";
  template <class T>
  KOKKOS_FORCEINLINE_FUNCTION static T apply(T a, T b) { return static_cast<T>(a - b); }
};
struct mul_op : arithmetic {
  static constexpr const char* name = "kax::multiply";
  template <class T>
  KOKKOS_FORCEINLINE_FUNCTION static T apply(T a, T b) { return static_cast<T>(a * b); }
};
// True division, as jnp.divide: integers divide in double.
struct div_op : floating {
  static constexpr const char* name = "kax::divide";
  template <class T>
  KOKKOS_FORCEINLINE_FUNCTION static T apply(T a, T b) { return a / b; }
};
struct maximum_op : arithmetic {
  static constexpr const char* name = "kax::maximum";
  // NaN propagates, as jnp.maximum.
  template <class T>
  KOKKOS_FORCEINLINE_FUNCTION static T apply(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) return (a != a) ? a : ((b != b) ? b : (a > b ? a : b));
    else return a > b ? a : b;
  }
};
struct minimum_op : arithmetic {
  static constexpr const char* name = "kax::minimum";
  template <class T>
  KOKKOS_FORCEINLINE_FUNCTION static T apply(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) return (a != a) ? a : ((b != b) ? b : (a < b ? a : b));
    else return a < b ? a : b;
  }
};
struct pow_op : floating {
  static constexpr const char* name = "kax::pow";
  template <class T>
  KOKKOS_FORCEINLINE_FUNCTION static T apply(T a, T b) { return kmath::pow(a, b); }
};

// ---- comparisons and logic --------------------------------------------------------------------
struct equal_op : comparison {
  static constexpr const char* name = "kax::equal";
  template <class T>
  KOKKOS_FORCEINLINE_FUNCTION static bool apply(T a, T b) { return a == b; }
};
struct not_equal_op : comparison {
  static constexpr const char* name = "kax::not_equal";
  template <class T>
  KOKKOS_FORCEINLINE_FUNCTION static bool apply(T a, T b) { return a != b; }
};
struct less_op : comparison {
  static constexpr const char* name = "kax::less";
  template <class T>
  KOKKOS_FORCEINLINE_FUNCTION static bool apply(T a, T b) { return a < b; }
};
struct less_equal_op : comparison {
  static constexpr const char* name = "kax::less_equal";
  template <class T>
  KOKKOS_FORCEINLINE_FUNCTION static bool apply(T a, T b) { return a <= b; }
};
struct greater_op : comparison {
  static constexpr const char* name = "kax::greater";
  template <class T>
  KOKKOS_FORCEINLINE_FUNCTION static bool apply(T a, T b) { return a > b; }
};
struct greater_equal_op : comparison {
  static constexpr const char* name = "kax::greater_equal";
  template <class T>
  KOKKOS_FORCEINLINE_FUNCTION static bool apply(T a, T b) { return a >= b; }
};
struct logical_and_op : logical {
  static constexpr const char* name = "kax::logical_and";
  KOKKOS_FORCEINLINE_FUNCTION static bool apply(bool a, bool b) { return a && b; }
};
struct logical_or_op : logical {
  static constexpr const char* name = "kax::logical_or";
  KOKKOS_FORCEINLINE_FUNCTION static bool apply(bool a, bool b) { return a || b; }
};
struct logical_not_op : logical {
  static constexpr const char* name = "kax::logical_not";
  KOKKOS_FORCEINLINE_FUNCTION static bool apply(bool a) { return !a; }
};

// ---- unary ------------------------------------------------------------------------------------
struct negate_op : arithmetic {
  static constexpr const char* name = "kax::negative";
  template <class T>
  KOKKOS_FORCEINLINE_FUNCTION static T apply(T a) { return static_cast<T>(-a); }
};
struct abs_op : arithmetic {
  static constexpr const char* name = "kax::abs";
  template <class T>
  KOKKOS_FORCEINLINE_FUNCTION static T apply(T a) {
    if constexpr (std::is_same_v<T, bool>) return a;
    else if constexpr (std::is_floating_point_v<T>) return kmath::fabs(a);
    else return a < 0 ? static_cast<T>(-a) : a;
  }
};
struct square_op : arithmetic {
  static constexpr const char* name = "kax::square";
  template <class T>
  KOKKOS_FORCEINLINE_FUNCTION static T apply(T a) { return static_cast<T>(a * a); }
};
struct sqrt_op : floating {
  static constexpr const char* name = "kax::sqrt";
  template <class T>
  KOKKOS_FORCEINLINE_FUNCTION static T apply(T a) { return kmath::sqrt(a); }
};
struct floor_op : floating {
  static constexpr const char* name = "kax::floor";
  template <class T>
  KOKKOS_FORCEINLINE_FUNCTION static T apply(T a) { return kmath::floor(a); }
};
struct ceil_op : floating {
  static constexpr const char* name = "kax::ceil";
  template <class T>
  KOKKOS_FORCEINLINE_FUNCTION static T apply(T a) { return kmath::ceil(a); }
};

// Transcendentals: on the host, glibc's libmvec for float where available (detail/libmvec.hpp)
// and kax's vectorizable vmath otherwise; Kokkos' math on devices.
struct sin_op : floating {
  static constexpr const char* name = "kax::sin";
  template <class T>
  KOKKOS_FORCEINLINE_FUNCTION static T apply(T a) {
    if constexpr (on_device()) return kmath::sin(a);
    else if constexpr (std::is_same_v<T, float> && libmvec::available) return libmvec::kax_libmvec_sinf(a);
    else return vmath::sin(a);
  }
};
struct cos_op : floating {
  static constexpr const char* name = "kax::cos";
  template <class T>
  KOKKOS_FORCEINLINE_FUNCTION static T apply(T a) {
    if constexpr (on_device()) return kmath::cos(a);
    else if constexpr (std::is_same_v<T, float> && libmvec::available) return libmvec::kax_libmvec_cosf(a);
    else return vmath::cos(a);
  }
};
struct exp_op : floating {
  static constexpr const char* name = "kax::exp";
  template <class T>
  KOKKOS_FORCEINLINE_FUNCTION static T apply(T a) {
    if constexpr (on_device()) return kmath::exp(a);
    else if constexpr (std::is_same_v<T, float> && libmvec::available) return libmvec::kax_libmvec_expf(a);
    else return vmath::exp(a);
  }
};
struct log_op : floating {
  static constexpr const char* name = "kax::log";
  template <class T>
  KOKKOS_FORCEINLINE_FUNCTION static T apply(T a) {
    if constexpr (on_device()) return kmath::log(a);
    else if constexpr (std::is_same_v<T, float> && libmvec::available) return libmvec::kax_libmvec_logf(a);
    else return vmath::log(a);
  }
};
struct tanh_op : floating {
  static constexpr const char* name = "kax::tanh";
  template <class T>
  KOKKOS_FORCEINLINE_FUNCTION static T apply(T a) {
    if constexpr (on_device()) return kmath::tanh(a);
    else if constexpr (std::is_same_v<T, float> && libmvec::available && libmvec::has_tanh) return libmvec::kax_libmvec_tanhf(a);
    else return vmath::tanh(a);
  }
};

// jax.lax.stop_gradient: the value unchanged; kax::grad sends no cotangent through it.
struct stop_gradient_op : arithmetic {
  static constexpr const char* name = "kax::stop_gradient";
  template <class T>
  KOKKOS_FORCEINLINE_FUNCTION static T apply(T a) { return a; }
};

// astype: conversion to U (bool from numbers is `x != 0`, as NumPy).
template <dtype U>
struct cast_op {
  static constexpr const char* name = "kax::astype";
  template <class T>
  using operand_t = T;
  template <class T>
  using result_t = U;
  template <class T>
  KOKKOS_FORCEINLINE_FUNCTION static U apply(T a) { return static_cast<U>(a); }
};

}  // namespace kax::detail
