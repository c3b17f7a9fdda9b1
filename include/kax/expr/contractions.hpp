// kax/expr/contractions.hpp — einsum, dot and matmul.
//
// All three describe a contraction in "label space" (expr/contract/label_expr.hpp): without a
// summed label the result is an ordinary lazy elementwise expression (outer products, transposes,
// diagonals fuse into their consumer); with one it is a ContractExpr, computed once per
// evaluation (Eigen's GEMM on host memory when the labels form a batched matrix product).
// Pulls in <Eigen/Core>.
#pragma once

#include <array>
#include <string>
#include <tuple>

#include "kax/core/fixed_string.hpp"
#include "kax/expr/contract/contract_expr.hpp"
#include "kax/expr/contract/einsum_spec.hpp"
#include "kax/expr/contract/label_expr.hpp"
#include "kax/expr/reductions.hpp"

namespace kax {

namespace detail {

// Builds the contraction of one or two operands from their label maps and the label extents.
template <std::size_t NL, std::size_t NO, expression A>
auto contract(A a, const shape<NL>& ext, const multi_index<rank_of<A>>& la, const char* who) {
  LabelExpr<NL, A> x(std::move(a), ext, la);
  if constexpr (NL == NO) {
    return x;
  } else {
    std::array<std::size_t, NL - NO> axes{};
    for (std::size_t k = 0; k < NL - NO; ++k) axes[k] = NO + k;
    return ReduceExpr<sum_reducer, LabelExpr<NL, A>, NL - NO, false>(std::move(x), axes, who);
  }
}

template <std::size_t NL, std::size_t NO, expression A, expression B>
auto contract(A a, B b, const shape<NL>& ext, const multi_index<rank_of<A>>& la,
              const multi_index<rank_of<B>>& lb, const char* who) {
  LabelExpr<NL, A> x(std::move(a), ext, la);
  LabelExpr<NL, B> y(std::move(b), ext, lb);
  if constexpr (NL == NO) return BinaryExpr<mul_op, LabelExpr<NL, A>, LabelExpr<NL, B>>(std::move(x), std::move(y));
  else return ContractExpr<A, B, NL, NO>(std::move(x), std::move(y), who);
}

// Records operand axis extents per label; `broadcast` lets 1 stretch against n (batch axes).
template <std::size_t NL>
struct label_extents {
  shape<NL> ext{};
  std::array<bool, NL> set{};

  bool add(std::size_t label, std::size_t extent, bool broadcast) {
    if (!set[label]) {
      set[label] = true;
      ext[label] = extent;
      return true;
    }
    if (ext[label] == extent) return true;
    if (broadcast && (extent == 1 || ext[label] == 1)) {
      ext[label] = extent == 1 ? ext[label] : extent;
      return true;
    }
    return false;
  }
};

}  // namespace detail

// jnp.einsum("ij,jk->ik", a, b) with the subscripts as a compile-time string: one or two
// operands, letters and "...", implicit output when "->" is absent.  Subscripts that do not match
// the operands' ranks do not compile; label extents that disagree throw kax::shape_error.
template <fixed_string Subscripts, array_operand... X>
auto einsum(const X&... operands) {
  static_assert(sizeof...(X) >= 1 && sizeof...(X) <= 2,
                "kax::einsum: one or two operands are supported (contract pairwise for more)");
  constexpr std::array<std::size_t, sizeof...(X)> ranks{rank_of<expr_t<X>>...};
  static constexpr detail::einsum_spec spec = detail::parse_einsum<Subscripts>(ranks);
  using detail::einsum_error;
  static_assert(spec.error != einsum_error::operand_count,
                "kax::einsum: the number of comma-separated terms differs from the number of operands");
  static_assert(spec.error != einsum_error::bad_character,
                "kax::einsum: subscripts may contain only letters, ',', '...', '->' and spaces");
  static_assert(spec.error != einsum_error::two_ellipses, "kax::einsum: '...' appears twice in one term");
  static_assert(spec.error != einsum_error::rank_mismatch,
                "kax::einsum: a term's number of subscripts differs from its operand's rank");
  static_assert(spec.error != einsum_error::unknown_output,
                "kax::einsum: an output subscript does not appear in any input term");
  static_assert(spec.error != einsum_error::repeated_output, "kax::einsum: an output subscript appears twice");
  static_assert(spec.error != einsum_error::missing_ellipsis,
                "kax::einsum: the inputs have '...' axes but the output term has no '...'");
  static_assert(spec.error != einsum_error::rank_too_large, "kax::einsum: more than 16 axes");
  constexpr std::size_t NL = spec.n_labels;
  constexpr std::size_t NO = spec.n_out;

  const auto exprs = std::make_tuple(as_expr(operands)...);
  detail::label_extents<NL> le;
  std::string shapes;
  auto record = [&](auto k_const, const auto& e) {
    constexpr std::size_t k = decltype(k_const)::value;
    const auto s = e.extents();
    shapes += (k ? " " : "") + shape_string(s);
    for (std::size_t a = 0; a < s.size(); ++a) {
      const std::size_t l = spec.labels[k][a];
      if (!le.add(l, s[a], spec.label_char[l] == '.'))
        throw shape_error(std::string("kax::einsum<\"") + Subscripts.str() + "\">: size of label '" +
                          spec.label_char[l] + "' for operand " + std::to_string(k) + " (" +
                          std::to_string(s[a]) + ") does not match previous terms (" +
                          std::to_string(le.ext[l]) + "); operand shapes: " + shapes);
    }
  };
  auto labels_of = [&](auto k_const) {
    constexpr std::size_t k = decltype(k_const)::value;
    multi_index<spec.rank[k]> m{};
    for (std::size_t a = 0; a < spec.rank[k]; ++a) m[a] = spec.labels[k][a];
    return m;
  };
  record(std::integral_constant<std::size_t, 0>{}, std::get<0>(exprs));
  if constexpr (sizeof...(X) == 1) {
    return detail::contract<NL, NO>(std::get<0>(exprs), le.ext, labels_of(std::integral_constant<std::size_t, 0>{}),
                                    "kax::einsum");
  } else {
    record(std::integral_constant<std::size_t, 1>{}, std::get<1>(exprs));
    return detail::contract<NL, NO>(std::get<0>(exprs), std::get<1>(exprs), le.ext,
                                    labels_of(std::integral_constant<std::size_t, 0>{}),
                                    labels_of(std::integral_constant<std::size_t, 1>{}), "kax::einsum");
  }
}

// jnp.matmul(a, b) / a @ b: NumPy's rules.  Rank-1 operands are vectors (the added axis is
// removed from the result), leading axes are batch axes broadcast against each other.
template <array_operand XA, array_operand XB>
auto matmul(const XA& xa, const XB& xb) {
  using A = expr_t<XA>;
  using B = expr_t<XB>;
  constexpr std::size_t RA = rank_of<A>, RB = rank_of<B>;
  static_assert(RA >= 1 && RB >= 1, "kax::matmul: operands must have rank >= 1 (use * for scalars)");
  constexpr std::size_t nba = RA >= 2 ? RA - 2 : 0, nbb = RB >= 2 ? RB - 2 : 0;
  constexpr std::size_t nb = nba > nbb ? nba : nbb;
  constexpr bool has_m = RA >= 2, has_n = RB >= 2;
  constexpr std::size_t NO = nb + (has_m ? 1 : 0) + (has_n ? 1 : 0);
  constexpr std::size_t NL = NO + 1, K = NO;
  A a = as_expr(xa);
  B b = as_expr(xb);
  const auto sa = a.extents();
  const auto sb = b.extents();
  multi_index<RA> la{};
  multi_index<RB> lb{};
  detail::label_extents<NL> le;
  bool ok = true;
  for (std::size_t i = 0; i < nba; ++i) ok = le.add(la[i] = nb - nba + i, sa[i], true) && ok;
  for (std::size_t i = 0; i < nbb; ++i) ok = le.add(lb[i] = nb - nbb + i, sb[i], true) && ok;
  if (!ok)
    throw shape_error("kax::matmul: batch axes of shapes " + shape_string(sa) + " and " + shape_string(sb) +
                      " cannot be broadcast together");
  if constexpr (has_m) le.add(la[RA - 2] = nb, sa[RA - 2], false);
  if constexpr (has_n) le.add(lb[RB - 1] = nb + (has_m ? 1 : 0), sb[RB - 1], false);
  const std::size_t kb = RB >= 2 ? RB - 2 : 0;
  la[RA - 1] = K;
  lb[kb] = K;
  if (sa[RA - 1] != sb[kb])
    throw shape_error("kax::matmul: contraction axes differ: shapes " + shape_string(sa) + " and " +
                      shape_string(sb) + " (" + std::to_string(sa[RA - 1]) + " != " + std::to_string(sb[kb]) + ")");
  le.add(K, sa[RA - 1], false);
  for (std::size_t l = 0; l < NL; ++l)
    if (!le.set[l]) le.ext[l] = 1;
  return detail::contract<NL, NO>(std::move(a), std::move(b), le.ext, la, lb, "kax::matmul");
}

// jnp.dot(a, b): NumPy's dot.  Scalars multiply; a vector b contracts a's last axis; otherwise
// a's last axis with b's second-to-last, the result axes being a[:-1] + b[:-2] + b[-1:].
template <array_operand XA, array_operand XB>
auto dot(const XA& xa, const XB& xb) {
  using A = expr_t<XA>;
  using B = expr_t<XB>;
  constexpr std::size_t RA = rank_of<A>, RB = rank_of<B>;
  if constexpr (RA == 0 || RB == 0) {
    return as_expr(xa) * as_expr(xb);
  } else {
    constexpr std::size_t NO = (RA - 1) + (RB >= 2 ? RB - 1 : 0);
    constexpr std::size_t NL = NO + 1, K = NO;
    A a = as_expr(xa);
    B b = as_expr(xb);
    const auto sa = a.extents();
    const auto sb = b.extents();
    const std::size_t kb = RB >= 2 ? RB - 2 : 0;
    if (sa[RA - 1] != sb[kb])
      throw shape_error("kax::dot: shapes " + shape_string(sa) + " and " + shape_string(sb) +
                        " not aligned: " + std::to_string(sa[RA - 1]) + " (dim " + std::to_string(RA - 1) +
                        ") != " + std::to_string(sb[kb]) + " (dim " + std::to_string(kb) + ")");
    multi_index<RA> la{};
    multi_index<RB> lb{};
    shape<NL> ext{};
    for (std::size_t i = 0; i + 1 < RA; ++i) ext[la[i] = i] = sa[i];
    la[RA - 1] = K;
    if constexpr (RB >= 2) {
      for (std::size_t i = 0; i + 2 < RB; ++i) ext[lb[i] = RA - 1 + i] = sb[i];
      ext[lb[RB - 1] = NO - 1] = sb[RB - 1];
    }
    lb[kb] = K;
    ext[K] = sa[RA - 1];
    return detail::contract<NL, NO>(std::move(a), std::move(b), ext, la, lb, "kax::dot");
  }
}

}  // namespace kax
