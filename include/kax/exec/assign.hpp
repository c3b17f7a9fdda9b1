// kax/exec/assign.hpp — evaluates an expression into strided memory: its stages (reductions,
// contractions; plan/stages.hpp), then one fused Kokkos kernel.
//
// Aliasing rule: when the destination is also read by the expression at an element other than
// the one being written (a = transpose(a) + a, a = slice(a, ...), a = broadcast of a row of a),
// kax evaluates into a temporary first and copies it back (two kernels, one allocation).  Reading
// the destination only at the element being written (a = a * 2 + b) is safe and stays one
// kernel with no temporary.  The check looks at memory ranges, so it also covers two Arrays that
// share a buffer and Eigen maps over the same storage.
#pragma once

#include <algorithm>
#include <string>

#include "kax/core/array.hpp"
#include "kax/core/factories.hpp"
#include "kax/exec/batch_rows.hpp"
#include "kax/exec/kernels.hpp"
#include "kax/exec/spaces.hpp"
#include "kax/expr/leaf.hpp"
#include "kax/plan/elementwise_plan.hpp"
#include "kax/plan/stages.hpp"

namespace kax::detail {

// Launches the kernel for `e` into `out` on `space` (no alias check: see evaluate_into).
template <class ExecSpace, class T, std::size_t R, expression E>
void launch_elementwise(const ExecSpace& space, const output_target<T, R>& out, const E& e) {
  const std::size_t n = size_of(e.extents());
  if (n == 0) return;
  const elementwise_plan plan = plan_elementwise(e, out.contiguous);
  const std::string label = plan.template label<T, R>();
  using index = Kokkos::IndexType<std::int64_t>;
  if constexpr (runs_on_host<ExecSpace>) {
    const std::size_t conc = static_cast<std::size_t>(ExecSpace::concurrency());
    if (plan.flat) {
      const std::size_t chunk = host_chunk(n, conc);
      const auto chunks = static_cast<std::int64_t>((n + chunk - 1) / chunk);
      Kokkos::parallel_for(label, Kokkos::RangePolicy<ExecSpace, index>(space, 0, chunks),
                           flat_host_kernel<T, E>{out.data, e, n, chunk});
    } else if constexpr (R == 0) {
      // A rank-0 result over a strided operand (e.g. a reshape of a transposed (1, 1) array).
      Kokkos::parallel_for(label, Kokkos::RangePolicy<ExecSpace, index>(space, 0, 1),
                           strided_device_kernel<T, R, E>{out, e});
    } else {
      const std::size_t last = out.ext[R - 1];
      const std::size_t rows = n / last;
      // Split rows into pieces when there are too few rows to feed every thread.
      std::size_t pieces = 1;
      if (rows < 4 * conc) pieces = std::max<std::size_t>(1, std::min(last / 256, (4 * conc + rows - 1) / rows));
      const std::size_t piece_len = (last + pieces - 1) / pieces;
      // Whole rows: items of about 4096 elements.
      const std::size_t per_item = pieces != 1 ? 1 : host_rows_per_item(rows, last, conc, 4096);
      const std::size_t items = pieces != 1 ? rows * pieces : (rows + per_item - 1) / per_item;
      Kokkos::parallel_for(label, Kokkos::RangePolicy<ExecSpace, index>(space, 0, static_cast<std::int64_t>(items)),
                           strided_host_kernel<T, R, E>{out, e, pieces, piece_len, rows_exact(e), per_item});
    }
  } else {
    const auto count = static_cast<std::int64_t>(n);
    if (plan.flat) {
      Kokkos::parallel_for(label, Kokkos::RangePolicy<ExecSpace, index>(space, 0, count),
                           flat_device_kernel<T, E>{out.data, e});
    } else {
      Kokkos::parallel_for(label, Kokkos::RangePolicy<ExecSpace, index>(space, 0, count),
                           strided_device_kernel<T, R, E>{out, e});
    }
  }
}

// Evaluates `e` into `out`, through a temporary when the destination aliases an input (above).
template <class ExecSpace, class MemorySpace, class T, std::size_t R, expression E>
void evaluate_into(const ExecSpace& space, const output_target<T, R>& out, const E& e) {
  static_assert(rank_of<E> == R, "kax::eval: the expression's rank differs from the destination's");
  shape<R> dst{};
  for (std::size_t k = 0; k < R; ++k) dst[k] = out.ext[k];
  if (e.extents() != dst)
    throw shape_error("kax::eval: cannot assign an expression of shape " +
                      shape_string(e.extents()) + " to a destination of shape " + shape_string(dst));
  const std::size_t n = size_of(dst);
  if (n == 0) return;
  std::size_t span = 1;
  for (std::size_t k = 0; k < R; ++k) span += (out.ext[k] - 1) * out.strides[k];
  const buffer_span out_span{out.data, out.data + span};
  const std::uint64_t epoch = next_evaluation_epoch();
  // A reduction or contraction at the root writes the destination itself (no copy kernel) when
  // the destination is dense, of its dtype, and not one of its inputs.
  if constexpr (materialization<E>) {
    if (std::is_same_v<T, value_type_of<E>> && out.contiguous && !e.operand_reads(out_span)) {
      e.compute_into(space, reinterpret_cast<value_type_of<E>*>(out.data), epoch);
      return;
    }
  }
  // A vmapped expression: batch rows with their stages in one kernel, where that applies.
  if constexpr (is_batch_rows<E>::value) {
    if (!e.conflicts(out_span, out.contiguous) && run_batch_rows(space, out, e, out_span, epoch)) return;
  }
  // Stages first: every reduction/contraction inside `e`, once each.
  prepare(e, epoch, space);
  if (e.conflicts(out_span, out.contiguous)) {
    const auto tmp = uninitialized<T, R, MemorySpace>(dst, "kax::eval alias temporary");
    launch_elementwise(space, dense_target(tmp.data(), dst), e);
    launch_elementwise(space, out, tmp.as_leaf());
    return;
  }
  launch_elementwise(space, out, e);
}

// How many kax::grad calls on this thread are running their function f (transform/grad.hpp).
inline int& grad_tracing() {
  thread_local int depth = 0;
  return depth;
}

// Whether `e` reads an array that kax::grad traces.
template <class E>
bool reads_traced(const E& e) {
  if constexpr (is_array_leaf<E>::value) {
    return e.trace != 0;
  } else {
    bool found = false;
    visit_operands(e, [&found](const auto& c) { found = found || reads_traced(c); });
    return found;
  }
}

template <class T, std::size_t R, class MemorySpace, expression E>
void evaluate_into_view(
    const Kokkos::View<typename view_data<T, R>::type, Kokkos::LayoutRight, MemorySpace>& v,
    const E& e) {
  // Evaluating a traced argument inside the function kax::grad differentiates would make the
  // result a constant, and the gradient silently wrong: refuse, as JAX refuses to turn a tracer
  // into a concrete array.
  if (grad_tracing() > 0 && reads_traced(e))
    throw tracer_error(
        "kax::grad: an expression of a differentiated argument was evaluated inside the "
        "differentiated function (assigned to a kax::Array or passed to kax::eval); its gradient "
        "would be lost.  Return expressions from the function and let kax::grad evaluate them");
  const shape<R> s = view_extents<std::remove_cvref_t<decltype(v)>, R>(v);
  evaluate_into<exec_space_for<MemorySpace>, MemorySpace>(exec_space_for<MemorySpace>{}, dense_target(v.data(), s), e);
  // A GPU kernel writing memory the host may read (managed memory): the host may read the result
  // as soon as this returns, as it may on a host build.
  using space = exec_space_for<MemorySpace>;
  if constexpr (!runs_on_host<space> && host_accessible<MemorySpace>) space{}.fence();
}

}  // namespace kax::detail
