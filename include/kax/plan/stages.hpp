// kax/plan/stages.hpp — the planner's two walks over an expression graph.
//
// An evaluation is a sequence of stages: first every materialization point (reductions,
// contractions), innermost first, each computed once into its stage buffer; then the one fused
// kernel that writes the destination.  Everything else (elementwise, broadcast, layout) fuses
// into whichever kernel reads it.
//   prepare(e, epoch, space)  runs the materialization stages of `e` (each at most once per epoch)
//   describe(e, plan)         lists the same stages without running them, for kax::plan_of
// Materialization nodes provide materialize(space, epoch) and describe_stage(plan); other composite
// nodes expose their operands through for_each_child.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "kax/expr/stage_buffer.hpp"

namespace kax::detail {

// What kax::plan_of reports: one line per kernel, and the temporaries they write.
struct plan_description {
  std::vector<std::string> kernels;
  std::size_t temporaries = 0;
  std::set<const void*> seen;  // stage buffers already listed (a node shared by copies)

  void add(std::string line) { kernels.push_back(std::move(line)); }
};

template <class E>
concept has_children = requires(const E& e) { e.for_each_child([](const auto&) {}); };
template <class E>
concept has_operands = requires(const E& e) { e.for_each_operand([](const auto&) {}); };

// Calls f on each operand of `e`, looking through materializations (their for_each_operand) as
// well as other composite nodes (for_each_child); nothing for leaves.  For walks that must reach
// every leaf of a graph (kax::grad's).
template <class E, class F>
void visit_operands(const E& e, F&& f) {
  if constexpr (has_operands<E>) e.for_each_operand(f);
  else if constexpr (has_children<E>) e.for_each_child(f);
}

// Stages run on `space` (the caller's execution space instance) where it can write the stage
// buffers, so kax::eval(Kokkos::Serial{}, e) runs every kernel of `e` on Serial.
template <expression E, class Space>
void prepare(const E& e, std::uint64_t epoch, const Space& space) {
  if constexpr (materialization<E>) {
    e.materialize(space, epoch);
  } else if constexpr (has_children<E>) {
    e.for_each_child([epoch, &space](const auto& child) { prepare(child, epoch, space); });
  }
}

template <expression E>
void describe(const E& e, plan_description& plan) {
  if constexpr (materialization<E>) {
    if (!plan.seen.insert(e.buffer.values.data()).second) return;
    e.describe_stage(plan, false);
  } else if constexpr (has_children<E>) {
    e.for_each_child([&plan](const auto& child) { describe(child, plan); });
  }
}

template <class T, std::size_t R>
std::string typed_shape(const shape<R>& s) {
  return std::string(dtype_name<T>()) + shape_string(s);
}

}  // namespace kax::detail
