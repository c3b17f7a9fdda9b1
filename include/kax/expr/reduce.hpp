// kax/expr/reduce.hpp — ReduceExpr: a reduction over some axes of an expression.
//
// A materialization point: the planner (plan/stages.hpp) computes it with a kernel of its own,
// into its stage_buffer, before any consumer runs; consumers read the buffer.  Its operand is
// fused into that reduction kernel (kax::sum(a * b) never materializes a * b).
#pragma once

#include <algorithm>
#include <array>
#include <optional>
#include <string>

#include "kax/core/errors.hpp"
#include "kax/exec/reduce_kernels.hpp"
#include "kax/expr/reducers.hpp"
#include "kax/expr/stage_buffer.hpp"
#include "kax/plan/reduce_plan.hpp"
#include "kax/plan/stages.hpp"

namespace kax {

// Red<In> is a reducer (expr/reducers.hpp); NR axes are reduced; Keep keeps them with extent 1.
template <template <class> class Red, expression E, std::size_t NR, bool Keep>
struct ReduceExpr : expression_base, materialization_base {
  using reducer = Red<value_type_of<E>>;
  using value_type = typename reducer::result_type;
  static constexpr std::size_t arg_rank = rank_of<E>;
  static_assert(NR <= arg_rank, "kax::ReduceExpr: more reduced axes than the operand's rank");
  static constexpr std::size_t rank = Keep ? arg_rank : arg_rank - NR;
  static constexpr std::size_t reduced_count = NR;
  static constexpr bool keeps_dims = Keep;

  E arg;
  std::array<std::size_t, NR> axes{};  // sorted, distinct, in [0, arg_rank)
  shape<rank> ext{};
  detail::stage_buffer<value_type, rank> buffer;

  ReduceExpr(E a, std::array<std::size_t, NR> reduced, const char* who)
      : arg(std::move(a)), axes(reduced) {
    std::sort(axes.begin(), axes.end());
    const shape<arg_rank> in = arg.extents();
    for (std::size_t k = 0; k + 1 < NR; ++k)
      if (axes[k] == axes[k + 1])
        throw axis_error(std::string(who) + ": duplicate value in 'axis': axis " +
                         std::to_string(axes[k]) + " given twice for an operand of shape " +
                         shape_string(in));
    std::size_t reduced_size = 1;
    for (std::size_t k = 0, j = 0; k < arg_rank; ++k) {
      const bool red = std::find(axes.begin(), axes.end(), k) != axes.end();
      if (red) reduced_size *= in[k];
      if (red && !Keep) continue;
      ext[j++] = red ? 1 : in[k];
    }
    if (reducer::needs_elements && reduced_size == 0 && size_of(ext) != 0)
      throw shape_error(std::string(who) +
                        ": zero-size array to reduction operation, which has no identity; "
                        "operand shape " + shape_string(in));
    buffer = detail::stage_buffer<value_type, rank>(ext);
  }

  shape<rank> extents() const { return ext; }
  bool is_flat() const { return true; }  // the buffer is dense and row-major
  KOKKOS_FORCEINLINE_FUNCTION value_type evaluate(const multi_index<rank>& i) const {
    return buffer.read(i);
  }
  KOKKOS_FORCEINLINE_FUNCTION value_type evaluate_flat(std::size_t n) const { return buffer.read_flat(n); }
  auto row(const multi_index<rank>& i) const { return buffer.row(i); }
  // Consumers read the stage buffer, which no destination can alias; the operand is read by the
  // reduction's own kernel, which finishes before any consumer writes.
  bool conflicts(const detail::buffer_span&, bool) const { return false; }

  // --- planner interface (plan/stages.hpp) ---
  // Whether the reduction's kernel reads memory in `span` (then it cannot write there directly).
  bool operand_reads(const detail::buffer_span& span) const { return arg.conflicts(span, false); }

  detail::reduce_geometry<arg_rank, NR> geometry() const {
    return detail::plan_reduce(arg.extents(), axes, arg.is_flat());
  }

  // Runs the operand's own stages, then the reduction kernel(s) on `space`, writing a dense
  // row-major `out` (memory `space` can write).
  template <class Space>
  void compute_into(const Space& space, value_type* out, std::uint64_t epoch) const {
    detail::prepare(arg, epoch, space);
    detail::run_reduce<reducer>(space, arg, geometry(), out);
  }

  template <class Space>
  void materialize(const Space& space, std::uint64_t epoch) const {
    detail::materialize_once(*this, space, epoch);
  }

  // The operand, for walks that look through this stage (exec/batch_rows.hpp).
  template <class F>
  void for_each_operand(F&& f) const {
    f(arg);
  }

  // Batch rows computed a block at a time (exec/batch_rows.hpp): when axis 0 of `batch` rows is
  // kept and each output element is one inner reduction of a single block, batch rows [b0, b1)
  // are the kernel's output elements [b0 * per_row, b1 * per_row), reduced by the staged kernel's
  // row loop (run_outputs).  Element by element, through the generic path, vmapped softmax ran
  // 7-42 % slower in the row-fused plan than in the staged plan; with this loop, 0-17 %.
  std::optional<detail::row_stage> row_stage(std::size_t batch) const {
    if constexpr (!default_space_is_host || rank == 0 || NR == 0) {
      (void)batch;
      return std::nullopt;
    } else {
      auto g = geometry();
      if (g.kind != detail::reduce_kind::inner || g.blocks != 1 || axes[0] == 0 || batch == 0 ||
          ext[0] != batch)
        return std::nullopt;
      const std::size_t per_row = g.n_out / batch;
      const detail::reduce_host_kernel<reducer, E, arg_rank, NR> kernel{arg, g, buffer.values.data(), nullptr,
                                                                           detail::rows_exact(arg)};
      return detail::row_stage{[kernel, per_row](std::size_t b0, std::size_t b1) {
                                 kernel.run_outputs(b0 * per_row, b1 * per_row);
                               },
                               detail::reduce_label<reducer, value_type>(g)};
    }
  }

  void describe_stage(detail::plan_description& plan, bool into_output) const {
    detail::describe(arg, plan);
    const auto g = geometry();
    const std::string policy = " (RangePolicy, " + std::to_string(g.items()) + " items)";
    const std::string dest = (into_output ? " -> output " : " -> temporary ") +
                             detail::typed_shape<value_type>(ext);
    if (g.blocks > 1) {
      plan.add(detail::reduce_label<reducer, value_type>(g) + policy + " -> temporary partials " +
               std::to_string(g.n_out * g.blocks));
      plan.add(detail::reduce_combine_label<reducer, value_type>() + " (RangePolicy, " +
               std::to_string(g.n_out) + " items)" + dest);
      ++plan.temporaries;
    } else {
      plan.add(detail::reduce_label<reducer, value_type>(g) + policy + dest);
    }
    if (!into_output) ++plan.temporaries;
  }
};

}  // namespace kax
