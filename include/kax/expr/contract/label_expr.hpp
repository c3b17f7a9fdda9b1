// kax/expr/contract/label_expr.hpp — LabelExpr: an operand seen in an einsum's label space.
//
// einsum/dot/matmul number every distinct axis label; the label space has one axis per label
// (output labels first, summed labels last).  LabelExpr reads its operand at the label-space
// index: operand axis a reads label `label[a]` (two axes with one label read a diagonal, "ii"),
// or index 0 where the operand broadcasts (extent 1 against a longer label, matmul's batch axes).
// The product of the operands' LabelExprs, summed over the trailing labels, is the contraction.
#pragma once

#include <cstddef>

#include "kax/expr/as_expr.hpp"

namespace kax {

template <std::size_t NL, expression E>
struct LabelExpr : expression_base {
  using value_type = value_type_of<E>;
  static constexpr std::size_t rank = NL;
  static constexpr std::size_t arg_rank = rank_of<E>;

  E arg;
  shape<NL> ext{};                   // every label's extent
  multi_index<arg_rank> label{};     // the label each operand axis reads
  multi_index<arg_rank> live{};      // 0 where the operand broadcasts
  bool pointwise = false;            // operand axis a is label a, for all a: reads in place

  LabelExpr(E a, const shape<NL>& labels_ext, const multi_index<arg_rank>& lab)
      : arg(std::move(a)), ext(labels_ext), label(lab) {
    const shape<arg_rank> in = arg.extents();
    pointwise = arg_rank == NL;
    for (std::size_t k = 0; k < arg_rank; ++k) {
      live[k] = (in[k] == ext[label[k]]) ? 1 : 0;
      if (label[k] != k || !live[k]) pointwise = false;
    }
  }

  shape<NL> extents() const { return ext; }
  bool is_flat() const { return pointwise && arg.is_flat(); }
  KOKKOS_FORCEINLINE_FUNCTION value_type evaluate(const multi_index<NL>& i) const {
    multi_index<arg_rank> c{};
    for (std::size_t k = 0; k < arg_rank; ++k) c[k] = live[k] ? i[label[k]] : 0;
    return arg.evaluate(c);
  }
  KOKKOS_FORCEINLINE_FUNCTION value_type evaluate_flat(std::size_t n) const { return arg.evaluate_flat(n); }
  // An array operand's row along the last label: a pointer and the summed strides of the axes
  // with that label (one axis: a strided walk; "ii": the diagonal; none: a constant).
  auto row(const multi_index<NL>& i) const
    requires(detail::is_array_leaf<E>::value)
  {
    std::size_t off = 0, stride = 0;
    for (std::size_t k = 0; k < arg_rank; ++k) {
      if (!live[k]) continue;
      if (label[k] == NL - 1) {
        stride += arg.strides[k];
      } else {
        if constexpr (NL > 1) off += i[label[k]] * arg.strides[k];  // NL == 1: never reached
      }
    }
    return detail::strided_row<value_type>{arg.view.data() + off, stride};
  }
  template <class F>
  void for_each_child(F&& f) const {
    f(arg);
  }
  bool conflicts(const detail::buffer_span& out, bool pw) const {
    return arg.conflicts(out, pw && pointwise);
  }
};

}  // namespace kax
