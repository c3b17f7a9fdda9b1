// kax/expr/detail/row.hpp — row evaluators: a node's elements along its last axis.
//
// Host kernels walk the last axis in their inner, `omp simd` loop.  Evaluating each element
// through evaluate(multi_index) would copy an index array per element, which compilers do not
// vectorize.  Instead the kernel asks the node once per row for a *row*: a small value with
// `operator()(j)` that returns element j of that row using only pointer arithmetic (a leaf's row
// is a pointer and a stride).  Rows compose like nodes (a BinaryExpr's row holds its operands'
// rows), so the whole fused expression vectorizes along the row, as Eigen's packet evaluators do.
// Nodes without a `row(index)` member get generic_row, which falls back to evaluate().
//
// Strides are run-time values, so a loop over p[j * stride] compiles to gathers.  Every row
// therefore also says whether all the memory it walks is contiguous (`unit()`), and converts to
// a row with stride 1 built into its type (`as_unit()`); kernels test once per row and run the
// contiguous version when they can (loop versioning by hand: the compiler versions for one
// stride at most, and a fused expression has one per operand).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kax/core/extents.hpp"

namespace kax::detail {

// Any node: element j of the row through evaluate() (correct everywhere, vectorizes poorly).
template <class E>
struct generic_row {
  const E* node;
  multi_index<E::rank> base;
  [[gnu::always_inline]] auto operator()(std::size_t j) const {
    multi_index<E::rank> i = base;
    if constexpr (E::rank > 0) i[E::rank - 1] = j;
    return node->evaluate(i);
  }
  bool unit() const { return false; }
  generic_row as_unit() const { return *this; }
};

template <class E>
concept has_row = requires(const E& e, const multi_index<E::rank>& i) { e.row(i); };

// The row of `e` through index `i` (i's last component is ignored).
template <class E>
auto row_of(const E& e, const multi_index<E::rank>& i) {
  if constexpr (has_row<E>) return e.row(i);
  else return generic_row<E>{&e, i};
}

// Contiguous memory: element j at p[j].
template <class T>
struct unit_row {
  const T* p;
  [[gnu::always_inline]] T operator()(std::size_t j) const { return p[j]; }
  bool unit() const { return true; }
  unit_row as_unit() const { return *this; }
};

// Memory: element j at p[j * stride] (stride 0: one element repeated).
template <class T>
struct strided_row {
  const T* p;
  std::size_t stride;
  [[gnu::always_inline]] T operator()(std::size_t j) const { return p[j * stride]; }
  bool unit() const { return stride == 1; }
  unit_row<T> as_unit() const { return {p}; }
};

template <class T>
struct constant_row {
  T value;
  [[gnu::always_inline]] T operator()(std::size_t) const { return value; }
  bool unit() const { return true; }
  constant_row as_unit() const { return *this; }
};

// Element j of the result is element j * scale of `inner`: scale 1 walks, 0 broadcasts.
template <class Row>
struct scaled_row {
  Row inner;
  std::size_t scale;
  [[gnu::always_inline]] auto operator()(std::size_t j) const { return inner(j * scale); }
  bool unit() const { return scale == 0 || inner.unit(); }
  auto as_unit() const { return scaled_row<decltype(inner.as_unit())>{inner.as_unit(), scale}; }
};

// Element j of the result is element first + j of `inner`.
template <class Row>
struct offset_row {
  Row inner;
  std::size_t first;
  [[gnu::always_inline]] auto operator()(std::size_t j) const { return inner(first + j); }
  bool unit() const { return inner.unit(); }
  auto as_unit() const { return offset_row<decltype(inner.as_unit())>{inner.as_unit(), first}; }
};

// Element j of the result is element first + j * step of `inner` (a slice's last axis).
template <class Row>
struct affine_row {
  Row inner;
  std::int64_t first;
  std::int64_t step;
  [[gnu::always_inline]] auto operator()(std::size_t j) const {
    return inner(static_cast<std::size_t>(first + static_cast<std::int64_t>(j) * step));
  }
  bool unit() const { return step == 1 && inner.unit(); }
  auto as_unit() const {
    return offset_row<decltype(inner.as_unit())>{inner.as_unit(), static_cast<std::size_t>(first)};
  }
};

template <class Op, class Operand, class Row>
struct unary_row {
  Row a;
  [[gnu::always_inline]] auto operator()(std::size_t j) const { return Op::apply(static_cast<Operand>(a(j))); }
  bool unit() const { return a.unit(); }
  auto as_unit() const { return unary_row<Op, Operand, decltype(a.as_unit())>{a.as_unit()}; }
};

template <class Op, class Operand, class L, class R>
struct binary_row {
  L l;
  R r;
  std::size_t lk, rk;  // 1 where the operand walks the last axis, 0 where it broadcasts
  [[gnu::always_inline]] auto operator()(std::size_t j) const {
    return Op::apply(static_cast<Operand>(l(j * lk)), static_cast<Operand>(r(j * rk)));
  }
  // An operand that broadcasts along the row is only read at 0, so its stride does not matter.
  bool unit() const { return (lk == 0 || l.unit()) && (rk == 0 || r.unit()); }
  auto as_unit() const {
    return binary_row<Op, Operand, decltype(l.as_unit()), decltype(r.as_unit())>{l.as_unit(), r.as_unit(), lk, rk};
  }
};

template <class V, class C, class A, class B>
struct where_row {
  C c;
  A a;
  B b;
  std::size_t ck, ak, bk;
  [[gnu::always_inline]] V operator()(std::size_t j) const {
    const V t = static_cast<V>(a(j * ak));
    const V f = static_cast<V>(b(j * bk));
    return static_cast<bool>(c(j * ck)) ? t : f;
  }
  bool unit() const { return (ck == 0 || c.unit()) && (ak == 0 || a.unit()) && (bk == 0 || b.unit()); }
  auto as_unit() const {
    return where_row<V, decltype(c.as_unit()), decltype(a.as_unit()), decltype(b.as_unit())>{
        c.as_unit(), a.as_unit(), b.as_unit(), ck, ak, bk};
  }
};

// Runs body(row) with the contiguous version of `row` when it has one (see the file comment).
template <class Row, class Body>
void with_row(const Row& row, Body&& body) {
  if (row.unit()) body(row.as_unit());
  else body(row);
}

// The keep flag of an operand's last axis (rank-0 operands never walk).
template <std::size_t Rc>
std::size_t last_keep(const multi_index<Rc>& keep) {
  if constexpr (Rc == 0) return 0;
  else return keep[Rc - 1];
}

}  // namespace kax::detail
