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
// Every row also offers
//   broadcast()  the same row held at element 0 (an operand broadcast along the row, NumPy's
//                extent-1 axis); same type, so broadcasting decided at run time costs no code
//   at(k)        the same row held at element k (expand_dims(x, -1): x's row is read at the
//                output's second-to-last index for the whole output row); same type
//   unit()       whether every memory walk in it has stride 1 or 0
//   as_unit()    the row with stride 1 built into its type: contiguous loads instead of
//                gathers (the compiler versions a loop for one run-time stride at most, and a
//                fused expression has one per operand); kernels test unit() once per row.
//   dense()      whether every memory walk in it has stride 1 exactly: no operand held
//   as_dense()   the row with that built into its type.  as_unit()'s rows still choose per
//                element between walking and holding (p[j] or p[0]); a vector loop cannot load
//                p[j] where the row may be held, so it gathers.  A dense row loads p[j] outright
//                (a fused gelu' kernel ran at a third of Eigen's speed through the gathers).
//   delta_to(next), advance(d)
//                the difference between this row and the next one along the output's
//                second-to-last axis, and the move by such a difference: kernels build the first
//                two rows of a run and step to the others (a pointer add per memory walk) rather
//                than rebuilding each row through the tree (rows of 16 floats in
//                x + expand_dims(s, 1), one thread: 8.7 ns each rebuilt, 4.3 stepped; a
//                hand-written loop, 2.1).  A row type
//                offers them only where every node that builds it builds it affinely in the
//                index (pointers linear in it, flags independent of it); a row that changes
//                otherwise from row to row (a random row's key, a concatenation's segment) does
//                not, and its kernels rebuild every row.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "kax/core/extents.hpp"
#include "kax/core/detail/simd_warnings_off.hpp"  // after every other include

namespace kax::detail {

// Rows that kernels may step from one row to the next (see the file comment).
template <class Row>
concept steppable_row = requires(Row& r, const Row& c) { r.advance(c.delta_to(c)); };

// Any node: element j of the row through evaluate() (correct everywhere, vectorizes poorly).
template <class E>
struct generic_row {
  const E* node;
  multi_index<E::rank> base;
  bool pinned = false;  // held at base's last component
  auto operator()(std::size_t j) const {
    multi_index<E::rank> i = base;
    if constexpr (E::rank > 0) i[E::rank - 1] = pinned ? base[E::rank - 1] : j;
    return node->evaluate(i);
  }
  generic_row broadcast() const { return pinned ? *this : at(0); }  // a held row stays held
  generic_row at(std::size_t k) const {
    generic_row r{node, base, true};
    if constexpr (E::rank > 0) r.base[E::rank - 1] = k;
    return r;
  }
  multi_index<E::rank> delta_to(const generic_row& next) const {
    multi_index<E::rank> d{};
    for (std::size_t k = 0; k < E::rank; ++k) d[k] = next.base[k] - base[k];  // modulo 2^64
    return d;
  }
  void advance(const multi_index<E::rank>& d) {
    for (std::size_t k = 0; k < E::rank; ++k) base[k] += d[k];
  }
  bool unit() const { return false; }
  generic_row as_unit() const { return *this; }
  bool dense() const { return false; }
  generic_row as_dense() const { return *this; }
};

template <class E>
concept has_row = requires(const E& e, const multi_index<E::rank>& i) { e.row(i); };

// The row of `e` through index `i` (i's last component is ignored).
template <class E>
auto row_of(const E& e, const multi_index<E::rank>& i) {
  if constexpr (has_row<E>) return e.row(i);
  else return generic_row<E>{&e, i};
}

// Contiguous memory: element j at p[j] (the type as_dense() gives; only kernels' loops see it).
template <class T>
struct dense_row {
  const T* p;
  [[gnu::always_inline]] T operator()(std::size_t j) const { return p[j]; }
  std::ptrdiff_t delta_to(const dense_row& next) const { return next.p - p; }
  void advance(std::ptrdiff_t d) { p += d; }
  bool unit() const { return true; }
  dense_row as_unit() const { return *this; }
  bool dense() const { return true; }
  dense_row as_dense() const { return *this; }
};

// Contiguous memory, or one element repeated: element j at p[j], or p[0] when !walks.
template <class T>
struct contiguous_row {
  const T* p;
  bool walks;
  [[gnu::always_inline]] T operator()(std::size_t j) const { return walks ? p[j] : p[0]; }
  std::ptrdiff_t delta_to(const contiguous_row& next) const { return next.p - p; }
  void advance(std::ptrdiff_t d) { p += d; }
  contiguous_row broadcast() const { return {p, false}; }
  contiguous_row at(std::size_t k) const { return {walks ? p + k : p, false}; }
  bool unit() const { return true; }
  contiguous_row as_unit() const { return *this; }
  bool dense() const { return walks; }
  dense_row<T> as_dense() const { return {p}; }
};

// Memory: element j at p[j * stride] (stride 0: one element repeated).
template <class T>
struct strided_row {
  const T* p;
  std::size_t stride;
  [[gnu::always_inline]] T operator()(std::size_t j) const { return p[j * stride]; }
  std::ptrdiff_t delta_to(const strided_row& next) const { return next.p - p; }
  void advance(std::ptrdiff_t d) { p += d; }
  strided_row broadcast() const { return {p, 0}; }
  strided_row at(std::size_t k) const { return {p + k * stride, 0}; }
  bool unit() const { return stride <= 1; }
  contiguous_row<T> as_unit() const { return {p, stride == 1}; }
  bool dense() const { return stride == 1; }
  dense_row<T> as_dense() const { return {p}; }
};

template <class T>
struct constant_row {
  T value;
  [[gnu::always_inline]] T operator()(std::size_t) const { return value; }
  struct no_step {};
  no_step delta_to(const constant_row&) const { return {}; }  // a scalar: the same on every row
  void advance(no_step) {}
  constant_row broadcast() const { return *this; }
  constant_row at(std::size_t) const { return *this; }
  bool unit() const { return true; }
  constant_row as_unit() const { return *this; }
  bool dense() const { return true; }
  constant_row as_dense() const { return *this; }
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
  auto delta_to(const affine_row& next) const
    requires steppable_row<Row>
  {
    return inner.delta_to(next.inner);
  }
  void advance(const auto& d)
    requires steppable_row<Row>
  {
    inner.advance(d);
  }
  affine_row broadcast() const { return {inner, first, 0}; }
  affine_row at(std::size_t k) const { return {inner, first + static_cast<std::int64_t>(k) * step, 0}; }
  bool unit() const { return false; }
  affine_row as_unit() const { return *this; }
  bool dense() const { return false; }
  affine_row as_dense() const { return *this; }
};

template <class Op, class Operand, class Row>
struct unary_row {
  Row a;
  [[gnu::always_inline]] auto operator()(std::size_t j) const { return Op::apply(static_cast<Operand>(a(j))); }
  auto delta_to(const unary_row& next) const
    requires steppable_row<Row>
  {
    return a.delta_to(next.a);
  }
  void advance(const auto& d)
    requires steppable_row<Row>
  {
    a.advance(d);
  }
  unary_row broadcast() const { return {a.broadcast()}; }
  unary_row at(std::size_t k) const { return {a.at(k)}; }
  bool unit() const { return a.unit(); }
  auto as_unit() const { return unary_row<Op, Operand, decltype(a.as_unit())>{a.as_unit()}; }
  bool dense() const { return a.dense(); }
  auto as_dense() const { return unary_row<Op, Operand, decltype(a.as_dense())>{a.as_dense()}; }
};

template <class Op, class Operand, class L, class R>
struct binary_row {
  L l;
  R r;
  [[gnu::always_inline]] auto operator()(std::size_t j) const {
    return Op::apply(static_cast<Operand>(l(j)), static_cast<Operand>(r(j)));
  }
  auto delta_to(const binary_row& next) const
    requires steppable_row<L> && steppable_row<R>
  {
    return std::pair{l.delta_to(next.l), r.delta_to(next.r)};
  }
  void advance(const auto& d)
    requires steppable_row<L> && steppable_row<R>
  {
    l.advance(d.first);
    r.advance(d.second);
  }
  binary_row broadcast() const { return {l.broadcast(), r.broadcast()}; }
  binary_row at(std::size_t k) const { return {l.at(k), r.at(k)}; }
  bool unit() const { return l.unit() && r.unit(); }
  auto as_unit() const {
    return binary_row<Op, Operand, decltype(l.as_unit()), decltype(r.as_unit())>{l.as_unit(), r.as_unit()};
  }
  bool dense() const { return l.dense() && r.dense(); }
  auto as_dense() const {
    return binary_row<Op, Operand, decltype(l.as_dense()), decltype(r.as_dense())>{l.as_dense(), r.as_dense()};
  }
};

template <class V, class C, class A, class B>
struct where_row {
  C c;
  A a;
  B b;
  [[gnu::always_inline]] V operator()(std::size_t j) const {
    const V t = static_cast<V>(a(j));
    const V f = static_cast<V>(b(j));
    return static_cast<bool>(c(j)) ? t : f;
  }
  auto delta_to(const where_row& next) const
    requires steppable_row<C> && steppable_row<A> && steppable_row<B>
  {
    return std::pair{c.delta_to(next.c), std::pair{a.delta_to(next.a), b.delta_to(next.b)}};
  }
  void advance(const auto& d)
    requires steppable_row<C> && steppable_row<A> && steppable_row<B>
  {
    c.advance(d.first);
    a.advance(d.second.first);
    b.advance(d.second.second);
  }
  where_row broadcast() const { return {c.broadcast(), a.broadcast(), b.broadcast()}; }
  where_row at(std::size_t k) const { return {c.at(k), a.at(k), b.at(k)}; }
  bool unit() const { return c.unit() && a.unit() && b.unit(); }
  auto as_unit() const {
    return where_row<V, decltype(c.as_unit()), decltype(a.as_unit()), decltype(b.as_unit())>{
        c.as_unit(), a.as_unit(), b.as_unit()};
  }
  bool dense() const { return c.dense() && a.dense() && b.dense(); }
  auto as_dense() const {
    return where_row<V, decltype(c.as_dense()), decltype(a.as_dense()), decltype(b.as_dense())>{
        c.as_dense(), a.as_dense(), b.as_dense()};
  }
};

// An operand's row inside a broadcasting node: walked, or held at 0 where the operand's last
// axis has extent 1 (rank-0 operands never walk).
template <class Row, std::size_t Rc>
Row operand_row(const Row& row, const multi_index<Rc>& keep) {
  if constexpr (Rc == 0) return row.broadcast();
  else return keep[Rc - 1] ? row : row.broadcast();
}

// Runs body(row) with the row of `e` through `i`: its row evaluator (contiguous version when it
// has one), or, when `exact` is false (rows_exact, expr/stage_buffer.hpp), the generic row.
template <class E, class Body>
auto with_row_of(const E& e, const multi_index<E::rank>& i, bool exact, Body&& body);

// Runs body(convert), where convert(r) is the dense version of rows r of type Row when `row` is
// dense, or else their contiguous version when it is unit, or r itself.  Rows that step
// (steppable_row) keep these properties from row to row, so a kernel may choose the version once
// for a run of rows.
template <class Row, class Body>
auto with_row_form(const Row& row, Body&& body) {
  if (row.dense()) return body([](const Row& r) { return r.as_dense(); });
  if (row.unit()) return body([](const Row& r) { return r.as_unit(); });
  return body([](const Row& r) { return r; });
}

// The rows of `e` (steppable_row) through successive indices, each converted by `convert`
// (with_row_form): next(idx, true) says idx is the last index plus one along the stepping axis,
// always the same axis for one stepper, and moves the row by the difference between the first two
// such rows; next(idx, false) builds the row afresh.  The difference is the same everywhere
// because rows are affine in the index.
template <class E, class Convert>
class row_stepper {
 public:
  template <class Row>
  row_stepper(const E& e, const Row& first, const Convert& convert) : e_(e), convert_(convert), row_(convert(first)) {}

  const auto& row() const { return row_; }

  void next(const multi_index<E::rank>& idx, const bool stepped) {
    if (!stepped) {
      row_ = convert_(row_of(e_, idx));
    } else if (have_delta_) {
      row_.advance(delta_);
    } else {
      const row_type next_row = convert_(row_of(e_, idx));
      delta_ = row_.delta_to(next_row);
      row_ = next_row;
      have_delta_ = true;
    }
  }

 private:
  using row_type = decltype(std::declval<const Convert&>()(row_of(std::declval<const E&>(), multi_index<E::rank>{})));
  const E& e_;
  Convert convert_;
  row_type row_;
  decltype(row_.delta_to(row_)) delta_{};
  bool have_delta_ = false;
};

// Runs body(stepper), a row_stepper of `e` starting at `idx`, its rows' version chosen once
// (with_row_form) from the first row, which is built once.
template <class E, class Body>
auto with_row_stepper(const E& e, const multi_index<E::rank>& idx, Body&& body) {
  const auto first = row_of(e, idx);
  return with_row_form(first, [&](const auto& convert) {
    row_stepper<E, std::remove_cvref_t<decltype(convert)>> stepper(e, first, convert);
    return body(stepper);
  });
}

// Runs body(row) with the dense or else the contiguous version of `row` when it has one (see the
// file comment).
template <class Row, class Body>
auto with_row(const Row& row, Body&& body) {
  return with_row_form(row, [&](const auto& convert) { return body(convert(row)); });
}

template <class E, class Body>
auto with_row_of(const E& e, const multi_index<E::rank>& i, bool exact, Body&& body) {
  if (exact) return with_row(row_of(e, i), body);
  return body(generic_row<E>{&e, i});
}

}  // namespace kax::detail

#include "kax/core/detail/simd_warnings_on.hpp"
