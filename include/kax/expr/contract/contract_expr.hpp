// kax/expr/contract/contract_expr.hpp — ContractExpr: the sum over trailing labels of the product
// of two operands in label space (einsum with summed labels, dot, matmul).
//
// A materialization point.  Two ways to compute it, chosen at evaluation time from the labels and
// strides only:
//   GEMM     host memory, float/double, one summed label K, an output label of A only (M) and of
//            B only (N), both longer than 1 (matrix-vector products are reductions), the last
//            output axis being M or N, every other output label a batch label:
//            Eigen's GEMM per batch (exec/host_gemm.hpp).  Operands that are not plain arrays of
//            the result dtype (a * 2, a transposed view that Eigen cannot map) are first
//            evaluated into a contiguous temporary: O(size) next to the O(M N K) product.
//   GEMV     host float/double arrays, a matrix (rows along one output label) times a vector,
//            both contiguous along K: a row-dot kernel (parallel; Eigen's GEMV is one thread).
//   generic  anything else (diagonals, several summed labels, integer dtypes, device memory):
//            the fused reduction kernel over the label-space product (ReduceExpr).
#pragma once

#include <optional>
#include <string>
#include <type_traits>

#include "kax/exec/assign.hpp"
#include "kax/exec/host_gemm.hpp"
#include "kax/expr/binary.hpp"
#include "kax/expr/contract/label_expr.hpp"
#include "kax/expr/detail/residuals.hpp"
#include "kax/expr/ops.hpp"
#include "kax/expr/reduce.hpp"

namespace kax {

template <expression A, expression B, std::size_t NL, std::size_t NO>
struct ContractExpr : expression_base, materialization_base {
  using product_type = BinaryExpr<detail::mul_op, LabelExpr<NL, A>, LabelExpr<NL, B>>;
  using reduce_type = ReduceExpr<detail::sum_reducer, product_type, NL - NO, false>;
  using value_type = typename reduce_type::value_type;
  using promoted_type = value_type_of<product_type>;
  static constexpr std::size_t rank = NO;
  static_assert(NL > NO, "kax::ContractExpr: at least one summed label");

  reduce_type reduce;
  detail::stage_buffer<value_type, NO> buffer;  // shared with `reduce`
  const char* who;

  ContractExpr(LabelExpr<NL, A> a, LabelExpr<NL, B> b, const char* name)
      : reduce(product_type(std::move(a), std::move(b)), trailing_labels(), name),
        buffer(reduce.buffer),
        who(name) {}

  static std::array<std::size_t, NL - NO> trailing_labels() {
    std::array<std::size_t, NL - NO> axes{};
    for (std::size_t k = 0; k < NL - NO; ++k) axes[k] = NO + k;
    return axes;
  }

  const LabelExpr<NL, A>& lhs() const { return reduce.arg.lhs; }
  const LabelExpr<NL, B>& rhs() const { return reduce.arg.rhs; }

  shape<NO> extents() const { return reduce.ext; }
  bool is_flat() const { return true; }
  KOKKOS_FORCEINLINE_FUNCTION value_type evaluate(const multi_index<NO>& i) const { return buffer.read(i); }
  KOKKOS_FORCEINLINE_FUNCTION value_type evaluate_flat(std::size_t n) const { return buffer.read_flat(n); }
  auto row(const multi_index<NO>& i) const { return buffer.row(i); }
  bool conflicts(const detail::buffer_span&, bool) const { return false; }
  bool operand_reads(const detail::buffer_span& span) const { return reduce.operand_reads(span); }

  // ---- the GEMM path ----------------------------------------------------------------------
  struct gemm_roles {
    std::size_t m = NL, n = NL;      // label ids (NL: absent)
    std::size_t k = NO;
    bool transposed = false;         // compute C^T = B^T A^T (N is the output's last axis)
    bool copy_a = false, copy_b = false;
  };

  template <class X>
  static constexpr bool plain_leaf = detail::is_array_leaf<X>::value;
  // Operands whose GEMM copy kax::grad keeps for its backward pass: computed ones (not arrays,
  // whose copy would only convert or transpose, nor stages, which keep their own buffer).
  template <class X>
  static constexpr bool residual_operand = !plain_leaf<X> && !materialization<X> && rank_of<X> > 0;

  template <class X>
  static bool direct_operand(const X& x) {
    if constexpr (plain_leaf<X> && std::is_same_v<value_type_of<X>, promoted_type>)
      return host_accessible<typename X::memory_space>;
    else {
      (void)x;
      return false;
    }
  }

  // Per-label strides of an operand laid out with per-axis strides `st`; false on a diagonal.
  template <class LE, class Strides>
  static bool strides_by_label(const LE& le, const Strides& st, std::array<std::ptrdiff_t, NL>& out,
                               std::array<bool, NL>& present) {
    out.fill(0);
    present.fill(false);
    for (std::size_t a = 0; a < LE::arg_rank; ++a) {
      const std::size_t l = le.label[a];
      if (present[l]) return false;  // a repeated label: a diagonal, not a matrix
      if (!le.live[a]) continue;     // broadcast: stride 0
      present[l] = true;
      out[l] = static_cast<std::ptrdiff_t>(st[a]);
    }
    return true;
  }

  template <class LE>
  static multi_index<LE::arg_rank> operand_strides(const LE& le, bool copied) {
    if constexpr (plain_leaf<std::remove_cvref_t<decltype(le.arg)>>) {
      if (!copied) return le.arg.strides;
    }
    return to_multi_index(row_major_strides(le.arg.extents()));
  }

  // Decides whether (and how) the GEMM path applies.
  std::optional<gemm_roles> plan_gemm() const {
    if constexpr (!(std::is_same_v<promoted_type, float> || std::is_same_v<promoted_type, double>) ||
                  !default_space_is_host || NL - NO != 1) {
      return std::nullopt;
    } else {
      gemm_roles r;
      r.copy_a = !direct_operand(lhs().arg);
      r.copy_b = !direct_operand(rhs().arg);
      std::array<std::ptrdiff_t, NL> sa{}, sb{};
      std::array<bool, NL> pa{}, pb{};
      if (!strides_by_label(lhs(), operand_strides(lhs(), r.copy_a), sa, pa)) return std::nullopt;
      if (!strides_by_label(rhs(), operand_strides(rhs(), r.copy_b), sb, pb)) return std::nullopt;
      if (!pa[r.k] || !pb[r.k]) return std::nullopt;
      for (std::size_t l = 0; l < NO; ++l) {
        if (pa[l] && !pb[l]) r.m = l;
        if (pb[l] && !pa[l]) r.n = l;
      }
      // Matrix-vector and vector-vector products go to the reduction kernel: it is parallel
      // and vectorized along K and fuses non-array operands, where Eigen's GEMV is one thread.
      const shape<NL> ext0 = lhs().ext;
      if (r.m == NL || r.n == NL || ext0[r.m] == 1 || ext0[r.n] == 1) return std::nullopt;
      // The output is row-major: its last axis of extent > 1 is the one with stride 1, and it
      // must be M (C column-major) or N (C^T column-major); trailing unit axes do not count.
      std::size_t last = NO;
      for (std::size_t l = NO; l-- > 0;)
        if (reduce.ext[l] > 1) {
          last = l;
          break;
        }
      if (last == r.n) r.transposed = true;
      else if (last != r.m) return std::nullopt;
      const shape<NL> ext = lhs().ext;
      auto direct = [&](const std::array<std::ptrdiff_t, NL>& s, std::size_t rows_l, std::size_t cols_l) {
        const std::size_t rows = rows_l == NL ? 1 : ext[rows_l], cols = cols_l == NL ? 1 : ext[cols_l];
        return rows == 1 || cols == 1 || (rows_l != NL && s[rows_l] == 1) || (cols_l != NL && s[cols_l] == 1);
      };
      // An operand Eigen cannot map (neither stride 1) is copied to row-major first; if even that
      // leaves no unit stride (its last axis is a batch axis), use the generic kernel.
      if (!direct(sa, r.m, r.k)) {
        if (r.copy_a) return std::nullopt;
        r.copy_a = true;
        strides_by_label(lhs(), operand_strides(lhs(), true), sa, pa);
        if (!direct(sa, r.m, r.k)) return std::nullopt;
      }
      if (!direct(sb, r.k, r.n)) {
        if (r.copy_b) return std::nullopt;
        r.copy_b = true;
        strides_by_label(rhs(), operand_strides(rhs(), true), sb, pb);
        if (!direct(sb, r.k, r.n)) return std::nullopt;
      }
      if (NO > detail::gemm_max_batch_rank) return std::nullopt;
      return r;
    }
  }

  // ---- the matrix-vector path ------------------------------------------------------------
  // A plain array with a label of extent > 1 that the output keeps (the matrix side) times a
  // plain array holding only the summed label (the vector side), both contiguous along it, every
  // other label of extent 1: the seed's dot(x, w) with w of shape (D,) or (D, 1).
  struct gemv_plan {
    bool matrix_is_lhs = true;
    std::size_t row_label = NL;
  };

  std::optional<gemv_plan> plan_gemv() const {
    if constexpr (!(std::is_same_v<promoted_type, float> || std::is_same_v<promoted_type, double>) ||
                  !default_space_is_host || NL - NO != 1) {
      return std::nullopt;
    } else {
      if (!direct_operand(lhs().arg) || !direct_operand(rhs().arg)) return std::nullopt;
      std::array<std::ptrdiff_t, NL> sa{}, sb{};
      std::array<bool, NL> pa{}, pb{};
      if (!strides_by_label(lhs(), operand_strides(lhs(), false), sa, pa)) return std::nullopt;
      if (!strides_by_label(rhs(), operand_strides(rhs(), false), sb, pb)) return std::nullopt;
      const std::size_t k = NO;
      const shape<NL> ext = lhs().ext;
      if (!pa[k] || !pb[k] || ext[k] == 0) return std::nullopt;
      gemv_plan p;
      for (std::size_t l = 0; l < NO; ++l) {
        if (ext[l] == 1) continue;
        if (p.row_label != NL || (pa[l] && pb[l])) return std::nullopt;  // one long output label
        p.row_label = l;
        p.matrix_is_lhs = pa[l];
      }
      if (p.row_label == NL) return std::nullopt;
      const auto& sm = p.matrix_is_lhs ? sa : sb;
      const auto& sv = p.matrix_is_lhs ? sb : sa;
      if (ext[k] > 1 && (sm[k] != 1 || sv[k] != 1)) return std::nullopt;
      return p;
    }
  }

  static constexpr bool gemv_operands = plain_leaf<A> && plain_leaf<B> &&
                                        std::is_same_v<value_type_of<A>, promoted_type> &&
                                        std::is_same_v<value_type_of<B>, promoted_type>;

  template <class Space>
  void run_gemv(const Space& space, const gemv_plan& p, value_type* out) const {
    if constexpr (gemv_operands) {
      detail::run_gemv(space, gemv_kernel_for(p, out));
    } else {
      (void)space, (void)p, (void)out;
    }
  }

  detail::gemv_kernel<promoted_type> gemv_kernel_for(const gemv_plan& p, value_type* out) const
    requires gemv_operands
  {
    {
      std::array<std::ptrdiff_t, NL> sa{}, sb{};
      std::array<bool, NL> present{};
      strides_by_label(lhs(), operand_strides(lhs(), false), sa, present);
      strides_by_label(rhs(), operand_strides(rhs(), false), sb, present);
      const shape<NO> out_st = row_major_strides(reduce.ext);
      const shape<NL> ext = lhs().ext;
      detail::gemv_kernel<promoted_type> kernel{};
      kernel.a = p.matrix_is_lhs ? lhs().arg.view.data() : rhs().arg.view.data();
      kernel.x = p.matrix_is_lhs ? rhs().arg.view.data() : lhs().arg.view.data();
      kernel.a_rs = (p.matrix_is_lhs ? sa : sb)[p.row_label];
      kernel.y = out;
      kernel.y_stride = static_cast<std::ptrdiff_t>(out_st[p.row_label]);
      kernel.m = ext[p.row_label];
      kernel.k = ext[NO];
      kernel.rows_per_item = std::max<std::size_t>(1, 4096 / std::max<std::size_t>(1, kernel.k));
      return kernel;
    }
  }

  // Evaluates an operand into a contiguous row-major host temporary of the promoted dtype.
  template <class Space, class X>
  static Array<promoted_type, rank_of<X>> copy_operand(const Space& space, const X& x, std::uint64_t epoch) {
    detail::prepare(x, epoch, space);
    const auto s = x.extents();
    auto tmp = detail::uninitialized<promoted_type, rank_of<X>, default_memory_space>(s, "kax::gemm operand");
    detail::launch_elementwise(space, detail::dense_target(tmp.data(), s), x);
    return tmp;
  }

  template <class Space>
  void run_gemm(const Space& space, const gemm_roles& r, value_type* out, std::uint64_t epoch) const {
    using T = promoted_type;
    Array<T, LabelExpr<NL, A>::arg_rank> ta;
    Array<T, LabelExpr<NL, B>::arg_rank> tb;
    const T* pa = nullptr;
    const T* pb = nullptr;
    // Under kax::grad's forward pass a copy is kept as a residual (expr/detail/residuals.hpp) when
    // the other operand reads a traced argument: the copy is that operand's gradient's factor.
    [[maybe_unused]] detail::residual_sink* const sink = detail::active_residual_sink();
    if (r.copy_a) {
      ta = copy_operand(space, lhs().arg, epoch);
      pa = ta.data();
      if constexpr (residual_operand<A>) {
        if (sink && detail::reads_traced(rhs().arg)) sink->keep(buffer.stamp.data(), 0, ta);
      }
    } else if constexpr (plain_leaf<A> && std::is_same_v<value_type_of<A>, T>) {
      pa = lhs().arg.view.data();
    }
    if (r.copy_b) {
      tb = copy_operand(space, rhs().arg, epoch);
      pb = tb.data();
      if constexpr (residual_operand<B>) {
        if (sink && detail::reads_traced(lhs().arg)) sink->keep(buffer.stamp.data(), 1, tb);
      }
    } else if constexpr (plain_leaf<B> && std::is_same_v<value_type_of<B>, T>) {
      pb = rhs().arg.view.data();
    }
    std::array<std::ptrdiff_t, NL> sa{}, sb{}, sc{};
    std::array<bool, NL> present{};
    strides_by_label(lhs(), operand_strides(lhs(), r.copy_a), sa, present);
    strides_by_label(rhs(), operand_strides(rhs(), r.copy_b), sb, present);
    const shape<NO> out_ext = reduce.ext;
    const shape<NO> out_st = row_major_strides(out_ext);
    for (std::size_t l = 0; l < NO; ++l) sc[l] = static_cast<std::ptrdiff_t>(out_st[l]);
    const shape<NL> ext = lhs().ext;
    auto at = [&](const std::array<std::ptrdiff_t, NL>& s, std::size_t l) { return l == NL ? 0 : s[l]; };
    auto extent = [&](std::size_t l) { return l == NL ? std::size_t{1} : ext[l]; };

    detail::gemm_problem<T> g;
    g.c = out;
    for (std::size_t l = 0; l < NO; ++l) {
      if (l == r.m || l == r.n) continue;
      g.batch_ext[g.batch_rank] = ext[l];
      g.a.batch_stride[g.batch_rank] = sa[l];
      g.b.batch_stride[g.batch_rank] = sb[l];
      g.c_batch_stride[g.batch_rank] = sc[l];
      g.batches *= ext[l];
      ++g.batch_rank;
    }
    // C = A B with C column-major (M contiguous), or C^T = B^T A^T when N is contiguous.
    const std::size_t M = r.transposed ? r.n : r.m, N = r.transposed ? r.m : r.n;
    const auto& s_first = r.transposed ? sb : sa;
    const auto& s_second = r.transposed ? sa : sb;
    g.a.data = r.transposed ? pb : pa;
    g.b.data = r.transposed ? pa : pb;
    g.a.rs = at(s_first, M);
    g.a.cs = at(s_first, r.k);
    g.b.rs = at(s_second, r.k);
    g.b.cs = at(s_second, N);
    if (r.transposed) {
      for (std::size_t d = 0; d < g.batch_rank; ++d) std::swap(g.a.batch_stride[d], g.b.batch_stride[d]);
    }
    g.m = extent(M);
    g.n = extent(N);
    g.k = ext[r.k];
    g.c_cs = at(sc, N);
    detail::run_gemm(space, g);
  }

  // ---- planner interface ------------------------------------------------------------------
  template <class Space>
  void compute_into(const Space& space, value_type* out, std::uint64_t epoch) const {
    if constexpr (detail::runs_on_host<Space>) {
      if (const auto r = plan_gemm()) {
        if (!r->copy_a) detail::prepare(lhs().arg, epoch, space);
        if (!r->copy_b) detail::prepare(rhs().arg, epoch, space);
        run_gemm(space, *r, out, epoch);
        return;
      }
      if (const auto p = plan_gemv()) {
        run_gemv(space, *p, out);
        return;
      }
    }
    reduce.compute_into(space, out, epoch);
  }

  template <class Space>
  void materialize(const Space& space, std::uint64_t epoch) const {
    detail::materialize_once(*this, space, epoch);
  }

  // The operands, for walks that look through this stage (exec/batch_rows.hpp).
  template <class F>
  void for_each_operand(F&& f) const {
    f(lhs().arg);
    f(rhs().arg);
  }

  // Batch rows a block at a time (exec/batch_rows.hpp): the generic reduction's rows.  Not the
  // GEMM or matrix-vector paths (the latter runs row by row instead: row_kernel).
  std::optional<detail::row_stage> row_stage(std::size_t batch) const {
    if (plan_gemm() || plan_gemv()) return std::nullopt;
    return reduce.row_stage(batch);
  }

  // A batched matrix-vector product whose rows are the `batch` batch rows (vmap of a dot of one
  // example with an unmapped vector): the row-dot kernel, whose row(b) computes batch row b of
  // the stage buffer.  The row-fused plan inlines it just before the row's output
  // (exec/batch_rows.hpp); nullopt where the staged paths apply instead.
  std::optional<detail::gemv_kernel<promoted_type>> row_kernel(std::size_t batch) const
    requires gemv_operands
  {
    if (plan_gemm()) return std::nullopt;
    const auto p = plan_gemv();
    if (!p || p->row_label != 0 || reduce.ext[0] != batch) return std::nullopt;
    return gemv_kernel_for(*p, buffer.values.data());
  }
  std::string row_kernel_label() const { return std::string("kax::gemv<") + dtype_name<promoted_type>() + "> row"; }

  void describe_stage(detail::plan_description& plan, bool into_output) const {
    const auto r = plan_gemm();
    const auto gemv = r ? std::nullopt : plan_gemv();
    if (gemv) {
      const gemv_plan& p = *gemv;
      const shape<NL> ext = lhs().ext;
      plan.add(std::string("kax::gemv<") + dtype_name<promoted_type>() + "> (RangePolicy, " +
               std::to_string(ext[p.row_label]) + " rows of " + std::to_string(ext[NO]) + ")" +
               (into_output ? " -> output " : " -> temporary ") + detail::typed_shape<value_type>(reduce.ext));
      if (!into_output) ++plan.temporaries;
      return;
    }
    if (!r) {
      reduce.describe_stage(plan, into_output);
      return;
    }
    auto copy_line = [&](const auto& x) {
      detail::describe(x, plan);
      plan.add(detail::elementwise_plan{x.is_flat()}.template label<promoted_type, rank_of<decltype(x)>>() +
               " (RangePolicy) -> temporary " + detail::typed_shape<promoted_type>(x.extents()) +
               " (GEMM operand)");
      ++plan.temporaries;
    };
    if (r->copy_a) copy_line(lhs().arg);
    else detail::describe(lhs().arg, plan);
    if (r->copy_b) copy_line(rhs().arg);
    else detail::describe(rhs().arg, plan);
    const shape<NL> ext = lhs().ext;
    std::size_t batches = 1;
    for (std::size_t l = 0; l < NO; ++l)
      if (l != r->m && l != r->n) batches *= ext[l];
    auto extent = [&](std::size_t l) { return l == NL ? std::size_t{1} : ext[l]; };
    // exec/host_gemm.hpp: every extent <= gemm_small_extent runs kax's register-blocked loop.
    const bool small = extent(r->m) <= detail::gemm_small_extent && extent(r->n) <= detail::gemm_small_extent &&
                       extent(r->k) <= detail::gemm_small_extent;
    plan.add(std::string("kax::gemm<") + dtype_name<promoted_type>() + "> (" +
             (small ? "small-matrix loop, " : "Eigen GEMM, ") +
             std::to_string(batches) + (batches == 1 ? " batch" : " batches") + " of " +
             std::to_string(extent(r->m)) + "x" + std::to_string(extent(r->k)) + " @ " +
             std::to_string(extent(r->k)) + "x" + std::to_string(extent(r->n)) + ")" +
             (into_output ? " -> output " : " -> temporary ") + detail::typed_shape<value_type>(reduce.ext));
    if (!into_output) ++plan.temporaries;
  }
};

}  // namespace kax
