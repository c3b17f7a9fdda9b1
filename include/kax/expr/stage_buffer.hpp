// kax/expr/stage_buffer.hpp — where a materialization point (a reduction or contraction) keeps
// its result between the kernel that computes it and the kernels that read it.
//
// Fusion rule (DESIGN.md): a reduction feeding further work is computed once, never per output
// element.  Such a node owns a stage_buffer, allocated when the node is built.  Copies of the
// node (an expression stored in `auto` and used twice, softmax's max inside both numerator and
// denominator) share the buffer and its `stamp`, so within one evaluation the planner computes
// it once; every new evaluation recomputes it (inputs may have changed since: expressions are
// lazy).  Because of that sharing, one expression object must not be evaluated from two threads
// at once (as with Eigen expressions); separately built expressions are independent.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "kax/core/array.hpp"
#include "kax/exec/spaces.hpp"
#include "kax/expr/concepts.hpp"
#include "kax/expr/detail/row.hpp"

namespace kax {

// Nodes whose value is computed by a kernel of its own before its consumers run derive from this.
struct materialization_base {};

template <class E>
concept materialization = expression<E> && std::derived_from<std::remove_cvref_t<E>, materialization_base>;

namespace detail {

// Whether every node's row evaluator in `e` is exact.  A node whose rows cannot follow its output
// row in some configuration (a squeeze of the operand's last axis, where an earlier operand axis
// becomes the output's last) says so with `rows_exact()`; kernels then read `e` through generic
// rows (evaluate per element).  Stage buffers' rows are always exact.
template <class E>
bool rows_exact(const E& e) {
  if constexpr (requires { e.rows_exact(); }) {
    if (!e.rows_exact()) return false;
  }
  if constexpr (materialization<E>) {
    return true;
  } else if constexpr (requires { e.for_each_child([](const auto&) {}); }) {
    bool ok = true;
    e.for_each_child([&ok](const auto& c) { ok = ok && rows_exact(c); });
    return ok;
  } else {
    return true;
  }
}

// A fresh number for each top-level evaluation (0 is never handed out: "not computed yet").
inline std::uint64_t next_evaluation_epoch() {
  static std::atomic<std::uint64_t> counter{0};
  return ++counter;
}

template <class T, std::size_t R>
struct stage_buffer {
  using memory_space = default_memory_space;
  Kokkos::View<T*, Kokkos::LayoutRight, memory_space> values;
  Kokkos::View<std::uint64_t, Kokkos::HostSpace> stamp;  // epoch of the last computation
  multi_index<R> strides{};

  stage_buffer() = default;
  explicit stage_buffer(const shape<R>& s)
      : values(Kokkos::view_alloc(std::string("kax::stage"), Kokkos::WithoutInitializing),
               size_of(s)),
        stamp(Kokkos::view_alloc(std::string("kax::stage stamp"), Kokkos::WithoutInitializing)),
        strides(to_multi_index(row_major_strides(s))) {
    stamp() = 0;  // set on the host: building an expression launches no kernel
    if constexpr (std::is_same_v<memory_space, Kokkos::HostSpace>) advise_huge_pages(values.data(), values.span() * sizeof(T));
  }

  // kax::grad keeps the forward pass's results for the backward pass (transform/grad.hpp): a
  // frozen buffer counts as computed in every evaluation until it is thawed.
  static constexpr std::uint64_t frozen = ~std::uint64_t{0};
  bool computed_in(std::uint64_t epoch) const { return stamp() == epoch || stamp() == frozen; }
  void mark(std::uint64_t epoch) const { stamp() = epoch; }

  KOKKOS_INLINE_FUNCTION T read(const multi_index<R>& i) const {
    std::size_t off = 0;
    for (std::size_t k = 0; k < R; ++k) off += i[k] * strides[k];
    return values.data()[off];
  }
  detail::strided_row<T> row(const multi_index<R>& i) const {
    std::size_t off = 0;
    for (std::size_t k = 0; k + 1 < R; ++k) off += i[k] * strides[k];
    if constexpr (R == 0) return {values.data(), 1};  // read at 0 only
    else return {values.data() + off, strides[R - 1]};
  }
  KOKKOS_INLINE_FUNCTION T read_flat(std::size_t n) const { return values.data()[R == 0 ? 0 : n]; }
};

// A materialization computed batch row by batch row inside the row-fused kernel of a vmapped
// expression (exec/batch_rows.hpp): run(b0, b1) writes the buffer's elements whose axis-0 index
// is in [b0, b1), reading only the operands' rows [b0, b1); serial (the kernel is the parallel
// loop).  `label` names it in kax::plan_of.
struct row_stage {
  std::function<void(std::size_t, std::size_t)> run;
  std::string label;
};

// Computes a materialization node into its stage buffer unless this evaluation already did
// (node.compute_into(space, out, epoch) runs its operand's stages and then its own kernels): on
// `space`, or on the space that can write the buffer when `space` cannot.
template <class Node, class Space>
void materialize_once(const Node& node, const Space& space, std::uint64_t epoch) {
  if (node.buffer.computed_in(epoch)) return;
  using buffer_space = typename std::remove_cvref_t<decltype(node.buffer)>::memory_space;
  if constexpr (Kokkos::SpaceAccessibility<Space, buffer_space>::accessible)
    node.compute_into(space, node.buffer.values.data(), epoch);
  else
    node.compute_into(exec_space_for<buffer_space>{}, node.buffer.values.data(), epoch);
  node.buffer.mark(epoch);
}

}  // namespace detail
}  // namespace kax
