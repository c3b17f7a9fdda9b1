// kax/expr/layout/slice.hpp — SliceExpr: x[start:stop:step, ...] with Python's slice rules.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "kax/expr/as_expr.hpp"

namespace kax {

// One axis of a slice: Python's start:stop:step (negative values count from the end; an empty
// start/stop means "from the beginning/to the end" in the direction of step).
struct range {
  std::optional<long> start;
  std::optional<long> stop;
  long step = 1;

  constexpr range() = default;
  constexpr range(std::optional<long> start_, std::optional<long> stop_, long step_ = 1)
      : start(start_), stop(stop_), step(step_) {}
};

// The whole axis, `:` (kax::all is the reduction jnp.all).
inline constexpr range colon{};

template <expression E>
struct SliceExpr : expression_base {
  using value_type = value_type_of<E>;
  static constexpr std::size_t rank = rank_of<E>;
  E arg;
  shape<rank> ext{};
  Kokkos::Array<std::int64_t, rank> first{};
  Kokkos::Array<std::int64_t, rank> step{};

  SliceExpr(E a, const std::array<range, rank>& spec) : arg(std::move(a)) {
    const auto in = arg.extents();
    for (std::size_t k = 0; k < rank; ++k) {
      const auto [b, len] = indices(spec[k], static_cast<long>(in[k]));
      ext[k] = static_cast<std::size_t>(len);
      first[k] = b;
      step[k] = spec[k].step;
    }
  }

  // An already resolved slice: the extents, first index and step of every axis (vmap's rewrite
  // of a slice node uses this to add the batch axis).
  SliceExpr(E a, const shape<rank>& extents, const Kokkos::Array<std::int64_t, rank>& first_index,
            const Kokkos::Array<std::int64_t, rank>& steps)
      : arg(std::move(a)), ext(extents), first(first_index), step(steps) {}

  shape<rank> extents() const { return ext; }
  bool is_flat() const {
    if (!arg.is_flat()) return false;
    return arg.extents() == ext && [&] {
      for (std::size_t k = 0; k < rank; ++k)
        if (first[k] != 0 || (step[k] != 1 && ext[k] > 1)) return false;
      return true;
    }();
  }
  KOKKOS_FORCEINLINE_FUNCTION value_type evaluate(const multi_index<rank>& i) const {
    multi_index<rank> c{};
    for (std::size_t k = 0; k < rank; ++k)
      c[k] = static_cast<std::size_t>(first[k] + static_cast<std::int64_t>(i[k]) * step[k]);
    return arg.evaluate(c);
  }
  KOKKOS_FORCEINLINE_FUNCTION value_type evaluate_flat(std::size_t n) const {
    return arg.evaluate_flat(rank == 0 ? 0 : n);
  }
  auto row(const multi_index<rank>& i) const
    requires(rank > 0)
  {
    multi_index<rank> c{};
    for (std::size_t k = 0; k + 1 < rank; ++k)
      c[k] = static_cast<std::size_t>(first[k] + static_cast<std::int64_t>(i[k]) * step[k]);
    auto a = detail::row_of(arg, c);
    return detail::affine_row<decltype(a)>{a, first[rank - 1], step[rank - 1]};
  }
  // The operands, for the planner's walks (plan/stages.hpp).
  template <class F>
  void for_each_child(F&& f) const {
    f(arg);
  }
  bool conflicts(const detail::buffer_span& out, bool pointwise) const {
    return arg.conflicts(out, pointwise && is_flat());
  }

 private:
  // Python's slice.indices(n): the first index and the number of elements.
  static std::pair<long, long> indices(const range& r, long n) {
    if (r.step == 0) throw shape_error("kax::slice: slice step cannot be zero");
    auto clamp = [](long v, long lo, long hi) { return v < lo ? lo : (v > hi ? hi : v); };
    long b, e;
    if (r.step > 0) {
      b = r.start ? clamp(*r.start < 0 ? *r.start + n : *r.start, 0, n) : 0;
      e = r.stop ? clamp(*r.stop < 0 ? *r.stop + n : *r.stop, 0, n) : n;
      return {b, e > b ? (e - b + r.step - 1) / r.step : 0};
    }
    b = r.start ? clamp(*r.start < 0 ? *r.start + n : *r.start, -1, n - 1) : n - 1;
    e = r.stop ? clamp(*r.stop < 0 ? *r.stop + n : *r.stop, -1, n - 1) : -1;
    return {b, b > e ? (b - e - r.step - 1) / (-r.step) : 0};
  }
};

// x[spec0, spec1, ...]: one kax::range per axis, e.g. slice(x, {kax::range(1, -1), kax::colon}).
template <array_operand X>
auto slice(const X& x, const std::array<range, rank_of<expr_t<X>>>& spec) {
  return SliceExpr<expr_t<X>>(as_expr(x), spec);
}

}  // namespace kax
