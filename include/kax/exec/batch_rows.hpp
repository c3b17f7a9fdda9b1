// kax/exec/batch_rows.hpp — the row-fused plan of a vmapped expression: one kernel, one work
// item per block of batch rows, each computing its rows' reductions and contractions and then its
// rows of the output (DESIGN.md's "one team per batch element").
//
// vmap marks its batched result with BatchRowsExpr: axis 0 is the batch, and every reduction or
// contraction that vmap batched (listed in `stages`, by stage buffer) keeps axis 0 and reads only
// the same batch row of its operands, because f never saw the batch axis.  So batch row b needs
// only row b of each stage: the staged plan's separate kernels (each a pass over the whole batch,
// the input read once per stage) become one pass in which a row's stage results are still in
// cache when its output is written.  Materializations vmap did not batch (they depend on no mapped
// argument) are computed before, once, as usual.
//
// When it applies: for exactly one batched stage over batch rows of at least 256 output
// elements, in two forms.
//  - An inner reduction (`vmap(x / sum(x))`, `vmap(x - mean(x))`, an RMS normalization), a block
//    of batch rows at a time: the block's reductions (the staged kernel's row loop), then its
//    output rows.  Measured with both plans forced in one process (docs/performance.md, vmap
//    section), such functions ran 4-25 % faster row-fused with 2 threads, and from 4 % slower to
//    26 % faster with 1, at shapes from 10000 x 256 to 100000 x 256 (a second program found the
//    plans about even at 10000 x 256, where x stays in cache, and confirmed 8-20 % at
//    100000 x 256); for rows of 16 or 64 floats, from 4 % faster to 12 % slower.
//  - A matrix-vector product with an unmapped vector (the seed's dot(x, w) + sin(x)), one batch
//    row at a time: the row's dot, inlined (ContractExpr::row_kernel), then the row's output,
//    while the row of x the dot read is still in L1 (rows of at most 16 KiB,
//    batch_rows_inline_max_bytes).  Against the staged plan in one process: x * dot(x, w) ran
//    15-30 % faster (10000 x 256 to 100000 x 256, 2000 x 1024, 40000 x 300); the seed 0-10 %
//    faster at 10000 x 256, 10-24 % at 100000 x 256, and 2-6 % slower to 9 % faster on rows of
//    300 and 1024; with 8192-float rows both were 3-10 % slower (so longer rows stay staged).
//    Blocked as the reductions are (a block's dots, then its rows), the seed ran up to 13 %
//    slower than staged: the one-pass gain is the row-by-row overlap.
// With two or more stages (softmax, log_softmax, softmax(x * dot(x, w))) the row-fused plan was
// slower at 31 of 37 shape and thread-count pairs, by up to 32 %, and blocks of 2 or 8 batch rows
// instead of 32 did not help.  Those keep the staged plan.
//
// The plan applies on host execution spaces when the batched stage can compute single rows (an
// inner reduction of one block, exec/reduce_kernels.hpp, or a row-dot, exec/host_gemm.hpp) and
// the destination is not read by the expression.  Otherwise (a batched GEMM, a matrix-vector
// product whose rows are not the batch, a reduction over a non-trailing axis, device memory) the
// staged plan runs unchanged.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "kax/exec/kernels.hpp"
#include "kax/exec/spaces.hpp"
#include "kax/plan/elementwise_plan.hpp"
#include "kax/plan/stages.hpp"

namespace kax {

template <expression E>
struct BatchRowsExpr : expression_base {
  using value_type = value_type_of<E>;
  static constexpr std::size_t rank = rank_of<E>;
  static_assert(rank >= 1, "kax::BatchRowsExpr: a batched expression has a batch axis");
  E expr;
  std::shared_ptr<const std::set<const void*>> stages;  // stamps of the batched stage buffers

  BatchRowsExpr(E e, std::shared_ptr<const std::set<const void*>> batched)
      : expr(std::move(e)), stages(std::move(batched)) {}

  shape<rank> extents() const { return expr.extents(); }
  bool is_flat() const { return expr.is_flat(); }
  KOKKOS_FORCEINLINE_FUNCTION value_type evaluate(const multi_index<rank>& i) const { return expr.evaluate(i); }
  KOKKOS_FORCEINLINE_FUNCTION value_type evaluate_flat(std::size_t n) const { return expr.evaluate_flat(n); }
  auto row(const multi_index<rank>& i) const { return detail::row_of(expr, i); }
  template <class F>
  void for_each_child(F&& f) const {
    f(expr);
  }
  bool conflicts(const detail::buffer_span& out, bool pointwise) const { return expr.conflicts(out, pointwise); }
};

namespace detail {

template <class X>
struct is_batch_rows : std::false_type {};
template <class E>
struct is_batch_rows<BatchRowsExpr<E>> : std::true_type {};

// The row-fused plan of a BatchRowsExpr: its batched stages innermost first, and the other
// materializations (computed beforehand by `before`).
struct batch_rows_plan {
  std::vector<row_stage> stages;
  std::vector<std::function<void()>> before;
  std::set<const void*> seen;
  std::string row_kernel;  // the label of a batched stage computed row by row (row_kernel_stage)
  bool ok = true;
};

// A batched stage that computes one batch row at a time with a kernel of concrete type (a
// matrix-vector product's row-dot, ContractExpr::row_kernel): the row-fused kernel inlines it.
template <class X>
concept row_kernel_stage = requires(const X& x, std::size_t b) {
  x.row_kernel(b)->row(b);
  { x.row_kernel(b)->row_bytes() } -> std::convertible_to<std::size_t>;
  { x.row_kernel_label() } -> std::convertible_to<std::string>;
};

// A stage computed row by row (row_kernel_stage) runs inline when one of its rows reads at most
// this many bytes (4096 floats): the output reads the same row of x just after, from L1.  With
// 8192-float rows the inline plan ran 3-10 % slower than staged (file comment).
inline constexpr std::size_t batch_rows_inline_max_bytes = 16384;

template <expression X, class Before>
void plan_batch_rows(const X& x, const std::set<const void*>& batched, std::size_t batch, batch_rows_plan& plan,
                     const buffer_span& destination, Before&& before) {
  if constexpr (materialization<X>) {
    const void* key = x.buffer.stamp.data();
    if (!batched.count(key)) {
      before(x);
      return;
    }
    if (!plan.seen.insert(key).second) return;
    x.for_each_operand([&](const auto& c) { plan_batch_rows(c, batched, batch, plan, destination, before); });
    // A stage that reads the destination would see rows the kernel has already written (the
    // staged plan finishes every stage before writing).
    if (x.operand_reads(destination)) {
      plan.ok = false;
      return;
    }
    if constexpr (row_kernel_stage<X>) {
      if (const auto k = x.row_kernel(batch); k && k->row_bytes() <= batch_rows_inline_max_bytes) {
        plan.row_kernel = x.row_kernel_label();
        return;
      }
    }
    if (auto s = x.row_stage(batch)) plan.stages.push_back(std::move(*s));
    else plan.ok = false;
  } else if constexpr (has_children<X>) {
    x.for_each_child([&](const auto& c) { plan_batch_rows(c, batched, batch, plan, destination, before); });
  }
}

// Shorter batch rows (output elements per batch row) keep the staged plan (file comment).
inline constexpr std::size_t batch_rows_min_row = 256;

// Whether the row-fused plan may apply to a result of `batch` rows and n elements (before
// planning), and whether the plan made for it is one to run (after; the file comment says why).
template <class E>
bool batch_rows_candidate(const BatchRowsExpr<E>& e, std::size_t batch, std::size_t n) {
  return e.stages && e.stages->size() == 1 && batch >= 2 && n / batch >= batch_rows_min_row;
}
inline bool batch_rows_worth_it(const batch_rows_plan& plan, bool flat) {
  if (!plan.row_kernel.empty()) return plan.ok && plan.stages.empty() && !flat;  // read broadcast: not flat
  return plan.ok && plan.stages.size() == 1;
}

// Calls f once, on the first batched materialization of x (not looking inside it), and says
// whether there was one.  The row-fused plan has a single batched stage; copies of its node share
// its buffer, so the first is the one.
template <expression X, class F>
bool with_batched_stage(const X& x, const std::set<const void*>& batched, F&& f) {
  if constexpr (materialization<X>) {
    if (!batched.count(x.buffer.stamp.data())) return false;
    f(x);
    return true;
  } else if constexpr (has_children<X>) {
    bool found = false;
    x.for_each_child([&](const auto& c) { found = found || with_batched_stage(c, batched, f); });
    return found;
  } else {
    return false;
  }
}

// Batch rows per work item: about 8192 output elements (host_rows_per_item).
inline std::size_t batch_rows_per_item(std::size_t batch, std::size_t row_elements, std::size_t concurrency) {
  return host_rows_per_item(batch, row_elements, concurrency, 8192);
}

// The output rows' kernels are built once per launch, not per work item: each holds a copy of
// the expression, and copying its Kokkos views costs two atomic reference-count updates per view.
// With one batch row per item (the seed forced through this plan, one thread) that cost was about
// 28 ns per row: 1.15 ms instead of 0.83-0.87 ms for 10000 rows of 256 floats.
template <class T, std::size_t R, class E>
struct batch_rows_kernel {
  const std::vector<row_stage>* stages;
  output_target<T, R> out;
  flat_host_kernel<T, E> flat_rows;      // flat: chunk b is batch row b
  strided_host_kernel<T, R, E> strided;  // otherwise
  std::size_t batch, rows_per_item, per_batch;  // per_batch: output rows (strided) or elements (flat)
  bool flat;

  void operator()(const std::int64_t w) const {
    const std::size_t b0 = static_cast<std::size_t>(w) * rows_per_item;
    const std::size_t b1 = std::min(batch, b0 + rows_per_item);
    for (const row_stage& s : *stages) s.run(b0, b1);
    if (flat) {
      for (std::size_t b = b0; b < b1; ++b) flat_rows(static_cast<std::int64_t>(b));
    } else {
      strided.run_rows(b0 * per_batch, b1 * per_batch);
    }
  }
};

// The row-fused kernel whose one batched stage is computed row by row (row_kernel_stage): for
// each batch row, its stage row (K::row) and then its output rows, while the row of x the stage
// read is still in L1 (the file comment has the measurements).
template <class T, std::size_t R, class E, class K>
struct batch_rows_inline_kernel {
  K stage;
  strided_host_kernel<T, R, E> strided;  // the stage's rows are read broadcast: never flat
  std::size_t batch, rows_per_item, per_batch;  // per_batch: output rows per batch row

  void operator()(const std::int64_t w) const {
    const std::size_t b0 = static_cast<std::size_t>(w) * rows_per_item;
    const std::size_t b1 = std::min(batch, b0 + rows_per_item);
    if (per_batch == 1) {  // rank 2: output row b is batch row b
      strided.run_rows(b0, b1, 0, ~std::size_t{0}, [this](std::size_t b) { stage.row(b); });
    } else {
      strided.run_rows(b0 * per_batch, b1 * per_batch, 0, ~std::size_t{0}, [this](std::size_t r) {
        if (r % per_batch == 0) stage.row(r / per_batch);
      });
    }
  }
};

// Runs the row-fused plan of `e` into `out`, or returns false (nothing run) when it does not
// apply; `epoch` is the evaluation's.
template <class ExecSpace, class T, std::size_t R, class E>
bool run_batch_rows(const ExecSpace& space, const output_target<T, R>& out, const BatchRowsExpr<E>& e,
                    const buffer_span& destination, std::uint64_t epoch) {
  if constexpr (!runs_on_host<ExecSpace> || R < 2) {  // rank 1: one element per batch row
    (void)space, (void)out, (void)e, (void)destination, (void)epoch;
    return false;
  } else {
    const std::size_t batch = out.ext[0];
    const std::size_t n = size_of(e.extents());
    if (!batch_rows_candidate(e, batch, n)) return false;
    batch_rows_plan plan;
    plan_batch_rows(e.expr, *e.stages, batch, plan, destination, [&](const auto& x) {
      plan.before.push_back([&x, epoch, &space] { prepare(x, epoch, space); });
    });
    const bool flat = plan_elementwise(e.expr, out.contiguous).flat;
    if (!batch_rows_worth_it(plan, flat)) return false;
    for (const auto& f : plan.before) f();
    // Per batch row: output elements (flat) or output rows of the last axis (strided).
    const std::size_t per_batch = flat ? n / batch : n / batch / out.ext[R - 1];
    const auto conc = static_cast<std::size_t>(ExecSpace::concurrency());
    const std::size_t rows = batch_rows_per_item(batch, n / batch, conc);
    const auto items = static_cast<std::int64_t>((batch + rows - 1) / rows);
    const strided_host_kernel<T, R, E> strided{out, e.expr, 1, out.ext[R - 1], rows_exact(e.expr)};
    const std::string name = std::string("kax::eval<batch rows,") + dtype_name<T>() + ",rank" + std::to_string(R) + ">";
    const Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>> policy(space, 0, items);
    if (!plan.row_kernel.empty()) {
      with_batched_stage(e.expr, *e.stages, [&](const auto& x) {
        if constexpr (row_kernel_stage<std::remove_cvref_t<decltype(x)>>) {
          using K = std::remove_cvref_t<decltype(*x.row_kernel(batch))>;
          Kokkos::parallel_for(name, policy,
                               batch_rows_inline_kernel<T, R, E, K>{*x.row_kernel(batch), strided, batch, rows, per_batch});
        }
      });
      return true;
    }
    const flat_host_kernel<T, E> flat_rows{out.data, e.expr, n, n / batch};
    Kokkos::parallel_for(name, policy,
                         batch_rows_kernel<T, R, E>{&plan.stages, out, flat_rows, strided, batch, rows, per_batch, flat});
    return true;
  }
}

// kax::plan_of's line for the row-fused plan, or an empty string when the staged plan runs.
template <class E>
bool describe_batch_rows(const BatchRowsExpr<E>& e, plan_description& plan) {
  if constexpr (!runs_on_host<Kokkos::DefaultExecutionSpace>) {
    (void)e, (void)plan;
    return false;
  } else {
    const auto s = e.extents();
    const std::size_t batch = s[0], n = size_of(s);
    if (!batch_rows_candidate(e, batch, n)) return false;
    batch_rows_plan rows_plan;
    plan_description before;
    plan_batch_rows(e.expr, *e.stages, batch, rows_plan, buffer_span{}, [&](const auto& x) { describe(x, before); });
    if (!batch_rows_worth_it(rows_plan, plan_elementwise(e.expr, true).flat)) return false;
    for (auto& k : before.kernels) plan.add(std::move(k));
    plan.temporaries += before.temporaries + rows_plan.stages.size() + (rows_plan.row_kernel.empty() ? 0 : 1);
    const auto conc = static_cast<std::size_t>(Kokkos::DefaultExecutionSpace::concurrency());
    const std::size_t rows = batch_rows_per_item(batch, n / batch, conc);
    std::string line = std::string("kax::eval<batch rows,") + dtype_name<value_type_of<E>>() + ",rank" +
                       std::to_string(rank_of<E>) + "> (RangePolicy, " + std::to_string((batch + rows - 1) / rows) +
                       " items of " + std::to_string(rows) + " batch rows; per row:";
    for (const auto& st : rows_plan.stages) line += " " + st.label + " ->";
    if (!rows_plan.row_kernel.empty()) line += " " + rows_plan.row_kernel + " ->";
    line += " " + plan_elementwise(e.expr, true).template label<value_type_of<E>, rank_of<E>>() + ") -> output " +
            typed_shape<value_type_of<E>>(s);
    plan.add(line);
    return true;
  }
}

}  // namespace detail
}  // namespace kax
