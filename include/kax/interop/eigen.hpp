// kax/interop/eigen.hpp — Eigen in and out of kax expressions, without copies.
//
//   kax::from_eigen(m)   a leaf that reads m's storage in place (zero-copy, strides respected)
//   kax::to_eigen(e)     evaluates e into a new Eigen matrix or vector (one kernel)
//   kax::assign(m, e)    evaluates e into an existing Eigen object in place (one kernel)
//
// Opt-in: kax/kax.hpp does not include this header, so programs that do not use Eigen do not
// pay for <Eigen/Core>.  Users call from_eigen explicitly instead of mixing Eigen objects into
// kax operators: that leaves the lookup of Eigen's own operators (m * n is a matrix product in
// Eigen) untouched.
//
// Lifetime: like Eigen::Ref and Eigen::Map, a from_eigen leaf does not own the storage; the
// Eigen object must outlive every expression built on it.  Passing a temporary Matrix/Array (or
// a temporary Ref<const ...>, which may hold a private copy) is rejected at compile time.
//
// Memory: Eigen storage is host memory.  Expressions evaluated by to_eigen/assign run on the
// host execution space, so the kax arrays they read must be host-accessible.
#pragma once

#include <Eigen/Core>
#include <cstddef>
#include <type_traits>

// The whole library: a from_eigen leaf is only useful with kax's operators and math.
#include "kax/kax.hpp"

namespace kax {

namespace detail {

template <class>
inline constexpr bool eigen_always_false = false;

// kax's rank of an Eigen object: compile-time vectors are rank 1, everything else rank 2
// (a MatrixXd that happens to have one column at run time stays rank 2, as in Eigen's types).
template <class Derived>
inline constexpr std::size_t eigen_rank = Derived::IsVectorAtCompileTime ? 1 : 2;

template <class Derived>
inline constexpr bool eigen_direct_access = (Derived::Flags & Eigen::DirectAccessBit) != 0;

template <class Derived>
inline constexpr bool eigen_writable = (Derived::Flags & Eigen::LvalueBit) != 0;

// Extents of an Eigen object in kax's logical order: (rows, cols), or (size,) for vectors.
template <class Derived>
shape<eigen_rank<Derived>> eigen_extents(const Derived& m) {
  if constexpr (eigen_rank<Derived> == 1) return {static_cast<std::size_t>(m.size())};
  else return {static_cast<std::size_t>(m.rows()), static_cast<std::size_t>(m.cols())};
}

// Strides (elements) of an Eigen object in kax's logical order.  For a vector, innerStride() is
// the step between consecutive coefficients whatever the storage order (a row of a column-major
// matrix reports the matrix's outer stride).
template <class Derived>
shape<eigen_rank<Derived>> eigen_strides(const Derived& m) {
  const auto inner = static_cast<std::size_t>(m.innerStride());
  if constexpr (eigen_rank<Derived> == 1) {
    return {inner};
  } else {
    const auto outer = static_cast<std::size_t>(m.outerStride());
    if constexpr (Derived::IsRowMajor) return {outer, inner};
    else return {inner, outer};
  }
}

// True when `strides` are row-major dense for `s` (strides of unit axes never matter): the
// meaning of output_target::contiguous and ArrayLeaf::contiguous.
template <std::size_t R>
bool row_major_dense(const shape<R>& s, const shape<R>& strides) {
  std::size_t acc = 1;
  for (std::size_t k = R; k-- > 0;) {
    if (s[k] != 1 && strides[k] != acc) return false;
    acc *= s[k];
  }
  return true;
}

// Evaluates `e` into host memory `data` with logical extents `s` and `strides`: one kernel on
// the host execution space (a temporary only when `e` reads the destination, see assign.hpp).
// A rank-2 destination whose rows are the inner (smaller-stride) axis, i.e. column-major Eigen
// storage, is written as the row-major transpose of itself: same memory, same elements, but the
// kernel's inner loop then walks contiguous memory instead of jumping a column per element.
template <class T, std::size_t R, expression E>
void evaluate_into_eigen(T* data, const shape<R>& s, const shape<R>& strides, const E& e) {
  using space = exec_space_for<Kokkos::HostSpace>;
  if constexpr (R == 2) {
    if (s[0] > 1 && s[1] > 1 && strides[0] < strides[1]) {
      const shape<2> ts{s[1], s[0]};
      const shape<2> tst{strides[1], strides[0]};
      const output_target<T, 2> out{data, to_multi_index(ts), to_multi_index(tst),
                                    row_major_dense(ts, tst)};
      evaluate_into<space, Kokkos::HostSpace>(space{}, out, kax::transpose(e));
      return;
    }
  }
  const output_target<T, R> out{data, to_multi_index(s), to_multi_index(strides),
                                row_major_dense(s, strides)};
  evaluate_into<space, Kokkos::HostSpace>(space{}, out, e);
}

template <class Derived>
auto from_eigen_impl(const Derived& m) {
  using S = typename Derived::Scalar;
  static_assert(dtype<S>,
                "kax::from_eigen: the Eigen scalar type is not a kax dtype (float, double, "
                "int32, int64, bool)");
  static_assert(eigen_direct_access<Derived>,
                "kax::from_eigen: the Eigen expression has no direct access to its storage "
                "(a lazy expression such as a + b); evaluate it into a matrix first");
  if constexpr (dtype<S> && eigen_direct_access<Derived>) {
    constexpr std::size_t R = eigen_rank<Derived>;
    using leaf = ArrayLeaf<S, R, Kokkos::HostSpace>;
    const shape<R> s = eigen_extents(m);
    // The leaf only reads; Kokkos' view type is non-const, hence the cast.
    S* p = const_cast<S*>(m.data());
    return leaf(wrap_pointer<typename leaf::view_type, S, R>(p, s, std::make_index_sequence<R>{}),
                s, eigen_strides(m));
  }
}

}  // namespace detail

// A zero-copy expression leaf over an Eigen object with direct access (Matrix, Array, Map with
// any Stride, Ref, Block, transpose() of those), either storage order; compile-time vectors are
// rank 1, everything else rank 2.  The Eigen object must outlive the expression (as Eigen::Ref).
// (jnp.asarray(np_array) without a copy.)
template <class Derived>
auto from_eigen(const Eigen::DenseBase<Derived>& m) {
  return detail::from_eigen_impl(m.derived());
}

// A temporary Matrix or Array would die before the expression is evaluated: rejected.
template <class Derived>
auto from_eigen(Eigen::PlainObjectBase<Derived>&&) {
  static_assert(detail::eigen_always_false<Derived>,
                "kax::from_eigen: the argument is a temporary that owns its storage; the leaf "
                "would dangle. Name it (auto m = ...; kax::from_eigen(m))");
}

// A temporary Ref<const ...> may hold a private copy of its source, which dies with it.
template <class T, int Options, class StrideType>
auto from_eigen(Eigen::Ref<const T, Options, StrideType>&&) {
  static_assert(detail::eigen_always_false<T>,
                "kax::from_eigen: the argument is a temporary Eigen::Ref<const ...>, which may own "
                "a copy of its source; the leaf would dangle. Name the Ref first");
}

// Evaluates an expression (or Array) into a new Eigen object: rank 2 -> Eigen::Matrix<T,
// Dynamic, Dynamic> (column-major, Eigen's default), rank 1 -> Eigen::Matrix<T, Dynamic, 1>.
// One kernel writes straight into the Eigen storage.  (np.asarray(jax_array).)
template <array_operand X>
auto to_eigen(const X& x) {
  using E = expr_t<X>;
  using T = value_type_of<E>;
  constexpr std::size_t R = rank_of<E>;
  static_assert(R == 1 || R == 2,
                "kax::to_eigen: only rank-1 (vector) and rank-2 (matrix) expressions convert to "
                "Eigen");
  const E e = as_expr(x);
  const shape<R> s = e.extents();
  if constexpr (R == 1) {
    Eigen::Matrix<T, Eigen::Dynamic, 1> out(static_cast<Eigen::Index>(s[0]));
    detail::evaluate_into_eigen<T, 1>(out.data(), s, shape<1>{1}, e);
    return out;
  } else if constexpr (R == 2) {
    Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic> out(static_cast<Eigen::Index>(s[0]),
                                                         static_cast<Eigen::Index>(s[1]));
    detail::evaluate_into_eigen<T, 2>(out.data(), s, shape<2>{1, s[0]}, e);
    return out;
  }
}

namespace detail {

template <class Derived, class X>
void assign_impl(Derived& dst, const X& x) {
  using S = typename Derived::Scalar;
  using E = expr_t<X>;
  constexpr std::size_t R = eigen_rank<Derived>;
  static_assert(dtype<S>,
                "kax::assign: the Eigen scalar type is not a kax dtype (float, double, int32, "
                "int64, bool)");
  static_assert(eigen_direct_access<Derived>,
                "kax::assign: the Eigen destination has no direct access to its storage");
  static_assert(eigen_writable<Derived>,
                "kax::assign: the Eigen destination is read-only (a Map or Ref of const)");
  static_assert(rank_of<E> == R,
                "kax::assign: the expression's rank differs from the Eigen destination's (Eigen "
                "compile-time vectors are rank 1, every other Eigen object rank 2)");
  if constexpr (dtype<S> && eigen_direct_access<Derived> && eigen_writable<Derived> &&
                rank_of<E> == R) {
    const E e = as_expr(x);
    const shape<R> s = eigen_extents(dst);
    if (e.extents() != s)
      throw shape_error("kax::assign: cannot assign an expression of shape " +
                        shape_string(e.extents()) + " to an Eigen object of shape " +
                        shape_string(s));
    evaluate_into_eigen<S, R>(dst.data(), s, eigen_strides(dst), e);
  }
}

}  // namespace detail

// Evaluates an expression (or Array) into an existing Eigen object with direct access (Matrix,
// Array, Map, Ref, Block; any storage order and strides), in place: one kernel, no allocation
// unless the expression reads the destination at other elements (assign.hpp's aliasing rule).
// Throws kax::shape_error when the extents differ.  (Eigen's m = expr, or x.at[...].set.)
template <class Derived, array_operand X>
void assign(Eigen::DenseBase<Derived>& dst, const X& x) {
  detail::assign_impl(dst.derived(), x);
}

// Same, for a temporary destination: a Block (m.block(...), m.col(j)), Map or Ref made inline.
template <class Derived, array_operand X>
void assign(Eigen::DenseBase<Derived>&& dst, const X& x) {
  detail::assign_impl(dst.derived(), x);
}

// A const destination cannot be written.
template <class Derived, array_operand X>
void assign(const Eigen::DenseBase<Derived>&, const X&) {
  static_assert(detail::eigen_always_false<Derived>,
                "kax::assign: the Eigen destination is const");
}

}  // namespace kax
