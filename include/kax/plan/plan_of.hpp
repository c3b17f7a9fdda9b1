// kax/plan/plan_of.hpp — kax::plan_of: what evaluating an expression into a new Array launches.
#pragma once

#include <string>

#include "kax/exec/batch_rows.hpp"
#include "kax/plan/elementwise_plan.hpp"
#include "kax/plan/stages.hpp"

namespace kax {

namespace detail {
template <expression E>
bool describe_row_fused(const E& e, plan_description& plan) {
  if constexpr (is_batch_rows<E>::value) return describe_batch_rows(e, plan);
  else return (void)e, (void)plan, false;
}
}  // namespace detail

// A readable description of how kax evaluates `e` into a fresh Array (for debugging and tests):
//   2 kernels, 1 temporary
//     1. kax::gemm<float32> (Eigen GEMM, 1 batch) -> temporary float32(10000, 1)
//     2. kax::eval<elementwise,strided,float32,rank2> (RangePolicy) -> output float32(10000, 256)
// Each reduction or contraction is listed once, before the kernels that read it.
template <expression E>
std::string plan_of(const E& e) {
  detail::plan_description plan;
  if constexpr (materialization<E>) {
    plan.seen.insert(e.buffer.values.data());
    e.describe_stage(plan, true);
  } else if (!detail::describe_row_fused(e, plan)) {
    detail::describe(e, plan);
    const auto p = detail::plan_elementwise(e, true);
    plan.add(p.template label<value_type_of<E>, rank_of<E>>() + " (RangePolicy) -> output " +
             detail::typed_shape<value_type_of<E>>(e.extents()));
  }
  const std::size_t k = plan.kernels.size(), t = plan.temporaries;
  std::string out = std::to_string(k) + (k == 1 ? " kernel, " : " kernels, ") + std::to_string(t) +
                    (t == 1 ? " temporary" : " temporaries");
  for (std::size_t i = 0; i < k; ++i) out += "\n  " + std::to_string(i + 1) + ". " + plan.kernels[i];
  return out;
}

}  // namespace kax
