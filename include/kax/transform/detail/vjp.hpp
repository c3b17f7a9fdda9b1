// kax/transform/detail/vjp.hpp — kax::grad's backward pass: the vector-Jacobian product of an
// expression graph, one rule per node type (JAX's transpose rules).
//
// The forward graph is the differentiated function's result, built once on traced copies of the
// arguments (transform/grad.hpp).  Its reductions and contractions are computed once by the
// forward evaluation and then frozen (stage_buffer::frozen): they are the residuals the backward
// pass reads, where JAX saves them on its tape.  Elementwise work is not stored but recomputed
// inside the backward kernels, which is what XLA's fusion does too, with one exception: an
// operand of a contraction that is itself computed (an activation feeding the next layer's
// matmul) is read from the copy the forward GEMM made of it (expr/detail/residuals.hpp), since
// the backward needs it in memory for the weight's gradient anyway.
//
// backprop(ctx, node, g) sends the cotangent g (a lazy expression of node's shape) to node's
// operands, bottom-up through the graph's type, at compile time:
//   leaf of a traced argument   g is evaluated into (or added to) the argument's gradient
//   elementwise, layout         g becomes a new lazy expression for each operand (no kernel)
//   broadcasting                the operand's cotangent is summed down to its shape (SumToExpr)
//   reduction                   g is evaluated once (it is small), then broadcast back
//   contraction                 g is evaluated once; each operand's cotangent is a contraction
//                               of g with the other operand (GEMMs for matmul)
// So each gradient of an argument costs one kernel per use of the argument in f, plus one per
// reduction and two per contraction that the gradient flows through.  Subgraphs that reach no
// traced argument are skipped at run time (no work for the data operand of matmul(x, w)).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "kax/core/array.hpp"
#include "kax/exec/assign.hpp"
#include "kax/exec/batch_rows.hpp"
#include "kax/expr/adjoint/pad.hpp"
#include "kax/expr/adjoint/sum_to.hpp"
#include "kax/expr/binary.hpp"
#include "kax/expr/contract/contract_expr.hpp"
#include "kax/expr/contract/label_expr.hpp"
#include "kax/expr/contractions.hpp"
#include "kax/expr/detail/residuals.hpp"
#include "kax/expr/layout/broadcast_to.hpp"
#include "kax/expr/layout/concatenate.hpp"
#include "kax/expr/layout/reshape.hpp"
#include "kax/expr/layout/slice.hpp"
#include "kax/expr/layout/transpose.hpp"
#include "kax/expr/layout/unit_axes.hpp"
#include "kax/expr/operators.hpp"
#include "kax/expr/reduce.hpp"
#include "kax/expr/scalar.hpp"
#include "kax/expr/unary.hpp"
#include "kax/expr/where.hpp"
#include "kax/nn/detail/param_unary.hpp"
#include "kax/nn/detail/reductions.hpp"
#include "kax/plan/stages.hpp"
#include "kax/transform/detail/vjp_ops.hpp"

namespace kax::detail {

template <class>
inline constexpr bool no_grad_rule = false;

template <class E>
struct is_scalar_expr : std::false_type {};
template <class T, bool W>
struct is_scalar_expr<ScalarExpr<T, W>> : std::true_type {};

// Reads and writes Array::trace_ (core/array.hpp).
struct tracer {
  template <class T, std::size_t R, class M>
  static Array<T, R, M> traced(const Array<T, R, M>& a, std::uint32_t id) {
    Array<T, R, M> copy = a;
    copy.trace_ = id;
    return copy;
  }
  static std::uint32_t next_id() {
    static std::atomic<std::uint32_t> counter{0};
    std::uint32_t id = ++counter;
    if (id == 0) id = ++counter;  // 0 means "not traced"
    return id;
  }
};

// One differentiated argument: its buffer, and its gradient once the first cotangent arrives.
struct grad_slot {
  std::uint32_t id = 0;
  const void* param_data = nullptr;
  const void* type = nullptr;  // type_key of the Array type, checked where a leaf is matched
  std::shared_ptr<void> grad;      // Array<T, R, M> of the argument's shape, allocated up front
  bool written = false;
};

struct backward_context {
  std::vector<grad_slot> slots;
  std::vector<Kokkos::View<std::uint64_t, Kokkos::HostSpace>> frozen;
  residual_sink residuals;  // GEMM operands the forward pass evaluated (expr/detail/residuals.hpp)
  std::uint64_t floor = 0;  // stage buffers stamped after this were computed by this grad call

  backward_context() : floor(next_evaluation_epoch()) {}
  backward_context(const backward_context&) = delete;
  backward_context& operator=(const backward_context&) = delete;
  // The residuals are released with the expressions; stamps go back to "not computed".
  ~backward_context() {
    for (auto& s : frozen) s() = 0;
  }

  template <class T, std::size_t R, class M>
  Array<T, R, M> trace(const Array<T, R, M>& a) {
    grad_slot s;
    s.id = tracer::next_id();
    s.param_data = a.data();
    s.type = &type_key<Array<T, R, M>>;
    s.grad = std::make_shared<Array<T, R, M>>(uninitialized<T, R, M>(a.extents(), "kax::grad gradient"));
    slots.push_back(std::move(s));
    return tracer::traced(a, slots.back().id);
  }

  grad_slot* slot(std::uint32_t id) {
    if (id == 0) return nullptr;
    for (auto& s : slots)
      if (s.id == id) return &s;
    return nullptr;
  }

  // The gradient of the argument traced as `copy` (zeros when no cotangent reached it).
  template <class T, std::size_t R, class M>
  Array<T, R, M> gradient(const Array<T, R, M>& copy) {
    grad_slot& s = *slot(copy.as_leaf().trace);
    auto& g = *static_cast<Array<T, R, M>*>(s.grad.get());
    if (!s.written) Kokkos::deep_copy(g.view(), T(0));
    s.written = true;
    return g;
  }

  // Whether `e` reads a traced argument of this grad call (only such operands get cotangents).
  template <class E>
  bool reaches(const E& e) {
    if constexpr (!std::is_floating_point_v<value_type_of<E>>) {
      return false;
    } else if constexpr (is_array_leaf<E>::value) {
      return slot(e.trace) != nullptr;
    } else {
      bool found = false;
      visit_operands(e, [&](const auto& c) { found = found || reaches(c); });
      return found;
    }
  }

  // Marks the stage buffers that this grad call computed in `e` as computed for good, so that the
  // backward kernels read them instead of recomputing them.
  template <class E>
  void freeze(const E& e) {
    if constexpr (materialization<E>) {
      const auto st = e.buffer.stamp;
      if (st() > floor && st() != std::remove_cvref_t<decltype(e.buffer)>::frozen) {
        st() = std::remove_cvref_t<decltype(e.buffer)>::frozen;
        frozen.push_back(st);
      }
    }
    visit_operands(e, [&](const auto& c) { freeze(c); });  // [&]: a leaf has no operands (clang: unused [this])
  }

  // Evaluates `e` into `out` on the default execution space, reusing the frozen residuals.
  template <class T, std::size_t R, class E>
  void write(const output_target<T, R>& out, const E& e) {
    using space = exec_space_for<default_memory_space>;
    evaluate_into<space, default_memory_space>(space{}, out, e);
    freeze(e);
  }
};

template <class E>
struct is_sum_to : std::false_type {};
template <class E, std::size_t R>
struct is_sum_to<SumToExpr<E, R>> : std::true_type {};

template <class E>
auto settle(backward_context& ctx, const E& e);

// Evaluates the cotangent g into `out`, or with `acc` (a leaf reading `out`) adds it there.  A
// broadcast's adjoint that really sums (a bias's gradient: the sum over the batch) is not left to
// SumToExpr's per-element loops over an expression: the expression is evaluated first by a flat,
// vectorized kernel, then summed from memory; a sum down to a scalar is a parallel reduction.
template <class T, std::size_t R, class Acc, class G>
void emit(backward_context& ctx, const output_target<T, R>& out, const Acc* acc, const G& g) {
  if constexpr (is_sum_to<G>::value) {
    using A = std::remove_cvref_t<decltype(g.arg)>;
    constexpr std::size_t lead = G::lead;
    // Nothing summed over a reduction or contraction (a weight's gradient from its GEMM): the
    // kernel writes the destination itself, with no copy.
    if constexpr (materialization<A> && lead == 0) {
      if (g.summed == 0 && acc == nullptr) {
        emit(ctx, out, acc, g.arg);
        return;
      }
    }
    // Summed over exactly the leading axes (a bias's gradient: the sum over the batch): a
    // reduction kernel, vectorized along the kept axes.
    if constexpr (lead > 0) {
      bool leading = g.summed > 0;
      for (std::size_t s = 0; s < g.summed; ++s) leading = leading && g.summed_axis[s] < lead;
      if (leading) {
        std::array<std::size_t, lead> axes{};
        for (std::size_t k = 0; k < lead; ++k) axes[k] = k;
        const auto a = settle(ctx, g.arg);
        using AL = std::remove_cvref_t<decltype(a)>;
        emit(ctx, out, acc, ReduceExpr<sum_reducer, AL, lead, false>(a, axes, "kax::grad"));
        return;
      }
    }
    if constexpr (!is_array_leaf<A>::value) {
      if (g.summed > 0) {
        const auto a = settle(ctx, g.arg);
        emit(ctx, out, acc, SumToExpr<std::remove_cvref_t<decltype(a)>, R>(a, g.ext));
        return;
      }
    } else if constexpr (R == 0 && rank_of<A> > 0) {
      if (g.summed > 0) {
        std::array<std::size_t, rank_of<A>> all{};
        for (std::size_t k = 0; k < rank_of<A>; ++k) all[k] = k;
        emit(ctx, out, acc, ReduceExpr<sum_reducer, A, rank_of<A>, false>(g.arg, all, "kax::grad"));
        return;
      }
    }
  }
  if (acc) ctx.write(out, BinaryExpr<add_op, Acc, G>(*acc, g));
  else ctx.write(out, g);
}

// `e` evaluated into a fresh dense Array of element type T (a cotangent, a residual).
template <class T, class E>
Array<T, rank_of<E>, default_memory_space> evaluate_fresh(backward_context& ctx, const E& e, const char* label) {
  constexpr std::size_t R = rank_of<E>;
  auto a = uninitialized<T, R, default_memory_space>(e.extents(), label);
  emit(ctx, dense_target(a.data(), a.extents()), static_cast<const ArrayLeaf<T, R, default_memory_space>*>(nullptr), e);
  return a;
}

// A cotangent that several kernels will read, evaluated once: leaves and constants stay as they
// are, anything else becomes an Array.
template <class E>
auto settle(backward_context& ctx, const E& e) {
  if constexpr (is_array_leaf<E>::value || is_scalar_expr<E>::value) {
    return e;
  } else {
    if constexpr (is_sum_to<E>::value) {
      // An already evaluated cotangent that sums nothing here is read in place.
      using A = std::remove_cvref_t<decltype(e.arg)>;
      if constexpr (std::is_same_v<A, ArrayLeaf<value_type_of<E>, rank_of<E>, default_memory_space>>) {
        if (e.summed == 0 && e.arg.contiguous) return e.arg;
      }
    }
    return evaluate_fresh<value_type_of<E>>(ctx, e, "kax::grad cotangent").as_leaf();
  }
}

// ---- the rules --------------------------------------------------------------------------------
// Declared first: the rules call each other through `backprop`, by unqualified name.
template <class E, class G>
void backprop(backward_context& ctx, const E& node, const G& g);

template <class T, std::size_t R, class M, class G>
void rule(backward_context& ctx, const ArrayLeaf<T, R, M>& leaf, const G& g);
template <class Op, class E, class G>
void rule(backward_context& ctx, const UnaryExpr<Op, E>& node, const G& g);
template <class Op, class E, class G>
void rule(backward_context& ctx, const kax::nn::detail::ParamUnaryExpr<Op, E>& node, const G& g);
template <class Op, class L, class R, class G>
void rule(backward_context& ctx, const BinaryExpr<Op, L, R>& node, const G& g);
template <class C, class A, class B, class G>
void rule(backward_context& ctx, const WhereExpr<C, A, B>& node, const G& g);
template <template <class> class Red, class E, std::size_t NR, bool Keep, class G>
void rule(backward_context& ctx, const ReduceExpr<Red, E, NR, Keep>& node, const G& g);
template <class A, class B, std::size_t NL, std::size_t NO, class G>
void rule(backward_context& ctx, const ContractExpr<A, B, NL, NO>& node, const G& g);
template <std::size_t NL, class E, class G>
void rule(backward_context& ctx, const LabelExpr<NL, E>& node, const G& g);
template <class E, class G>
void rule(backward_context& ctx, const TransposeExpr<E>& node, const G& g);
template <class E, std::size_t R2, class G>
void rule(backward_context& ctx, const ReshapeExpr<E, R2>& node, const G& g);
template <class E, std::size_t R2, class G>
void rule(backward_context& ctx, const UnitAxesExpr<E, R2>& node, const G& g);
template <class E, std::size_t R2, class G>
void rule(backward_context& ctx, const BroadcastToExpr<E, R2>& node, const G& g);
template <class E, class G>
void rule(backward_context& ctx, const SliceExpr<E>& node, const G& g);
template <class... E, class G>
void rule(backward_context& ctx, const ConcatenateExpr<E...>& node, const G& g);
template <class E, class G>
void rule(backward_context& ctx, const BatchRowsExpr<E>& node, const G& g);

template <class E, class G>
void rule(backward_context&, const E&, const G&) {
  static_assert(no_grad_rule<E>,
                "kax::grad: no gradient rule for this expression node (collectives, vmap "
                "placeholders and jit arguments cannot be differentiated inside kax::grad)");
}

// Leaves other than arrays (scalars, random numbers, other transforms' placeholders) are
// constants: no cotangent flows into them, and no rule is instantiated for them.
template <class E>
inline constexpr bool constant_leaf =
    !is_array_leaf<E>::value && !has_children<E> && !has_operands<E>;

template <class E, class G>
void backprop(backward_context& ctx, const E& node, const G& g) {
  static_assert(rank_of<G> == rank_of<E>, "kax::grad: internal error, cotangent rank differs from the node's");
  if constexpr (std::is_floating_point_v<value_type_of<E>> && !constant_leaf<E>) {
    if (!ctx.reaches(node)) return;
    rule(ctx, node, g);
  }
}

// A traced argument: the cotangent is written into its gradient (the first time, when it covers
// the whole argument) or added to it.  The leaf may read the argument through other strides
// (vmap's moved axes); the gradient has the argument's layout, so the same offsets address it.
template <class T, std::size_t R, class M, class G>
void rule(backward_context& ctx, const ArrayLeaf<T, R, M>& leaf, const G& g) {
  grad_slot& s = *ctx.slot(leaf.trace);
  if (s.type != &type_key<Array<T, R, M>>)
    throw std::logic_error("kax::grad: internal error, a traced leaf's type differs from its argument's");
  if constexpr (!std::is_same_v<M, default_memory_space>) {
    static_assert(no_grad_rule<M>, "kax::grad: arguments must live in the default memory space");
  } else {
    const T* base = static_cast<const T*>(s.param_data);
    const std::ptrdiff_t offset = leaf.view.data() - base;
    const shape<R> ext = leaf.extents();
    auto& grad = *static_cast<Array<T, R, M>*>(s.grad.get());
    const bool whole = offset == 0 && leaf.contiguous && grad.extents() == ext;
    for (std::size_t k = 0; k < R; ++k)
      if (leaf.strides[k] == 0 && ext[k] > 1)
        throw std::logic_error("kax::grad: internal error, a traced leaf with a broadcast stride");
    if (!s.written && !whole) {
      Kokkos::deep_copy(grad.view(), T(0));
      s.written = true;
    }
    T* dst = grad.data() + offset;
    const output_target<T, R> out{dst, leaf.ext, leaf.strides, leaf.contiguous};
    if (!s.written) {
      emit(ctx, out, static_cast<const ArrayLeaf<T, R, M>*>(nullptr), g);
      s.written = true;
    } else {
      using view_type = typename Array<T, R, M>::view_type;
      shape<R> st{};
      for (std::size_t k = 0; k < R; ++k) st[k] = leaf.strides[k];
      const ArrayLeaf<T, R, M> acc(wrap_pointer<view_type, T, R>(dst, ext, std::make_index_sequence<R>{}), ext, st);
      emit(ctx, out, &acc, g);
    }
  }
}

template <class Op, class E, class G>
void rule(backward_context& ctx, const UnaryExpr<Op, E>& node, const G& g) {
  if constexpr (std::is_same_v<Op, negate_op>) {
    backprop(ctx, node.arg, UnaryExpr<negate_op, G>(g));
  } else if constexpr (requires { typename Op::template result_t<float>; } &&
                       std::is_same_v<Op, cast_op<value_type_of<UnaryExpr<Op, E>>>>) {
    backprop(ctx, node.arg, g);  // astype between floating dtypes: the cotangent converts back
  } else {
    using D = typename vjp::unary_rule<Op>::type;
    static_assert(!std::is_void_v<D>, "kax::grad: no gradient rule for this elementwise function");
    if constexpr (!std::is_same_v<D, vjp::none>) backprop(ctx, node.arg, BinaryExpr<D, E, G>(node.arg, g));
  }
}

// gelu(x, approximate) with the flag known at run time: both derivatives, one selected.
template <class Op, class E, class G>
void rule(backward_context& ctx, const kax::nn::detail::ParamUnaryExpr<Op, E>& node, const G& g) {
  static_assert(std::is_same_v<Op, kax::nn::detail::gelu_op>, "kax::grad: no gradient rule for this function");
  using tanh_form = BinaryExpr<vjp::gelu_tanh_grad, E, G>;
  using erf_form = BinaryExpr<vjp::gelu_erf_grad, E, G>;
  backprop(ctx, node.arg,
           WhereExpr<ScalarExpr<bool, false>, tanh_form, erf_form>(
               ScalarExpr<bool, false>(node.op.approximate), tanh_form(node.arg, g), erf_form(node.arg, g)));
}

// An operand of a broadcasting node receives the cotangent summed down to its own shape.
template <class X, class G>
void to_operand(backward_context& ctx, const X& x, const G& g) {
  if constexpr (rank_of<X> <= rank_of<G> && std::is_floating_point_v<value_type_of<X>> && !constant_leaf<X>) {
    if (!ctx.reaches(x)) return;
    backprop(ctx, x, sum_to<rank_of<X>>(g, x.extents()));
  }
}

template <class Op, class L, class R, class G>
void rule(backward_context& ctx, const BinaryExpr<Op, L, R>& node, const G& g) {
  const L& x = node.lhs;
  const R& y = node.rhs;
  if constexpr ((std::is_same_v<Op, add_op> || std::is_same_v<Op, sub_op>) && rank_of<L> != rank_of<R> &&
                !constant_leaf<L> && !constant_leaf<R>) {
    // A broadcast sum (a bias added to a layer's output): the lower-rank operand's gradient is a
    // reduction of g and the other side usually ends in a contraction; both read g, so it is
    // evaluated once here instead of once for each.
    const auto gs = settle(ctx, g);
    to_operand(ctx, x, gs);
    if constexpr (std::is_same_v<Op, add_op>) to_operand(ctx, y, gs);
    else to_operand(ctx, y, UnaryExpr<negate_op, std::remove_cvref_t<decltype(gs)>>(gs));
  } else if constexpr (std::is_same_v<Op, add_op>) {
    to_operand(ctx, x, g);
    to_operand(ctx, y, g);
  } else if constexpr (std::is_same_v<Op, sub_op>) {
    to_operand(ctx, x, g);
    to_operand(ctx, y, UnaryExpr<negate_op, G>(g));
  } else if constexpr (std::is_same_v<Op, mul_op>) {
    if (ctx.reaches(x)) to_operand(ctx, x, g * y);
    if (ctx.reaches(y)) to_operand(ctx, y, g * x);
  } else if constexpr (std::is_same_v<Op, div_op>) {
    if (ctx.reaches(x)) to_operand(ctx, x, g / y);
    if (ctx.reaches(y)) to_operand(ctx, y, -(g * x) / (y * y));
  } else if constexpr (std::is_same_v<Op, pow_op>) {
    if (ctx.reaches(x)) to_operand(ctx, x, g * BinaryExpr<vjp::pow_dx, L, R>(x, y));
    if (ctx.reaches(y)) to_operand(ctx, y, g * BinaryExpr<vjp::pow_dy, L, R>(x, y));
  } else if constexpr (std::is_same_v<Op, maximum_op>) {
    if (ctx.reaches(x)) to_operand(ctx, x, g * BinaryExpr<vjp::maximum_dx, L, R>(x, y));
    if (ctx.reaches(y)) to_operand(ctx, y, g * BinaryExpr<vjp::maximum_dx, R, L>(y, x));
  } else if constexpr (std::is_same_v<Op, minimum_op>) {
    if (ctx.reaches(x)) to_operand(ctx, x, g * BinaryExpr<vjp::minimum_dx, L, R>(x, y));
    if (ctx.reaches(y)) to_operand(ctx, y, g * BinaryExpr<vjp::minimum_dx, R, L>(y, x));
  } else if constexpr (std::is_same_v<value_type_of<BinaryExpr<Op, L, R>>, bool>) {
    // Comparisons and logic: piecewise constant, no gradient.
  } else {
    static_assert(no_grad_rule<Op>, "kax::grad: no gradient rule for this binary function");
  }
}

template <class C, class A, class B, class G>
void rule(backward_context& ctx, const WhereExpr<C, A, B>& node, const G& g) {
  using T = value_type_of<G>;
  using zero = ScalarExpr<T, true>;
  if (ctx.reaches(node.on_true))
    to_operand(ctx, node.on_true, WhereExpr<C, G, zero>(node.cond, g, zero(T(0))));
  if (ctx.reaches(node.on_false))
    to_operand(ctx, node.on_false, WhereExpr<C, zero, G>(node.cond, zero(T(0)), g));
}

// The output of a reduction (shape `out`), read back at every element of its operand (shape
// `in`): unit axes where the reduced axes were dropped, then a broadcast.
template <std::size_t NR, bool Keep, class G, std::size_t RI>
auto spread(G g, const std::array<std::size_t, NR>& axes, const shape<RI>& in) {
  constexpr std::size_t RO = rank_of<G>;
  shape<RI> kept{};
  multi_index<RO> src{}, live{};
  for (std::size_t k = 0, j = 0; k < RI; ++k) {
    const bool red = std::find(axes.begin(), axes.end(), k) != axes.end();
    kept[k] = red ? 1 : in[k];
    if (red && !Keep) continue;
    src[j] = k;
    live[j++] = 1;
  }
  UnitAxesExpr<G, RI> u(std::move(g), kept, src, live);
  return BroadcastToExpr<UnitAxesExpr<G, RI>, RI>(std::move(u), in);
}

template <template <class> class Red, class A, class B>
inline constexpr bool same_reducer = std::is_same_v<Red<double>, B>;

template <template <class> class Red, class E, std::size_t NR, bool Keep, class G>
void rule(backward_context& ctx, const ReduceExpr<Red, E, NR, Keep>& node, const G& g) {
  using node_t = ReduceExpr<Red, E, NR, Keep>;
  const auto in = node.arg.extents();
  std::size_t count = 1;
  for (std::size_t a : node.axes) count *= in[a];
  const auto gm = settle(ctx, g);
  using GM = std::remove_cvref_t<decltype(gm)>;
  if constexpr (same_reducer<Red, node_t, sum_reducer<double>>) {
    backprop(ctx, node.arg, spread<NR, Keep>(gm, node.axes, in));
  } else if constexpr (same_reducer<Red, node_t, mean_reducer<double>>) {
    backprop(ctx, node.arg, spread<NR, Keep>(gm, node.axes, in) * (1.0 / static_cast<double>(count)));
  } else if constexpr (same_reducer<Red, node_t, prod_reducer<double>>) {
    // d prod / d x_i = prod / x_i (inputs are assumed nonzero where the gradient is wanted).
    auto scaled = BinaryExpr<mul_op, GM, node_t>(gm, node);
    backprop(ctx, node.arg, spread<NR, Keep>(scaled, node.axes, in) / node.arg);
  } else if constexpr (same_reducer<Red, node_t, max_reducer<double>> ||
                       same_reducer<Red, node_t, min_reducer<double>> ||
                       same_reducer<Red, node_t, kax::nn::detail::max_initial_reducer<double>>) {
    // The cotangent is shared equally by the elements equal to the result (JAX's chooser rule).
    using T = value_type_of<node_t>;
    auto hit = kax::astype<T>(node.arg == spread<NR, Keep>(node, node.axes, in));
    ReduceExpr<sum_reducer, decltype(hit), NR, true> ties(hit, node.axes, "kax::grad(max)");
    backprop(ctx, node.arg,
             spread<NR, Keep>(gm, node.axes, in) * hit / BroadcastToExpr<decltype(ties), rank_of<E>>(ties, in));
  } else {
    static_assert(no_grad_rule<node_t>, "kax::grad: no gradient rule for this reduction");
  }
}

// The label maps of an operand's cotangent in an einsum: the operand's labels first, in its axis
// order, then the others.  Repeated labels (a diagonal, "ii") are rejected.
inline void reject_diagonal(const char* who) {
  throw shape_error(std::string(who) + ": the gradient of an einsum with a repeated subscript in one "
                                       "operand (a diagonal) is not supported");
}

template <std::size_t NL, std::size_t RA>
std::array<std::size_t, NL> labels_first(const multi_index<RA>& label, const char* who) {
  std::array<std::size_t, NL> id{};
  std::array<bool, NL> taken{};
  for (std::size_t a = 0; a < RA; ++a) {
    if (taken[label[a]]) reject_diagonal(who);
    taken[label[a]] = true;
    id[label[a]] = a;
  }
  std::size_t next = RA;
  for (std::size_t l = 0; l < NL; ++l)
    if (!taken[l]) id[l] = next++;
  return id;
}

// The cotangent of operand `a` of contract(a, b) with output cotangent `gm`: the contraction of
// gm with b onto a's labels (matmul's dA = dC B^T), then summed over axes where a broadcast.
template <std::size_t NL, std::size_t NO, class LA, class LB, class GM>
auto operand_cotangent(const LA& la, const LB& lb, const GM& gm) {
  constexpr std::size_t RA = LA::arg_rank, RB = LB::arg_rank;
  static_assert(RA <= NL, "kax::grad: internal error, operand with more axes than labels");
  const auto id = labels_first<NL, RA>(la.label, "kax::grad(einsum)");
  shape<NL> ext{};
  for (std::size_t l = 0; l < NL; ++l) ext[id[l]] = la.ext[l];
  multi_index<NO> lg{};
  for (std::size_t o = 0; o < NO; ++o) lg[o] = id[o];
  multi_index<RB> lbn{};
  for (std::size_t b = 0; b < RB; ++b) lbn[b] = id[lb.label[b]];
  auto full = contract<NL, RA>(gm, lb.arg, ext, lg, lbn, "kax::grad(einsum)");
  return sum_to<RA>(std::move(full), la.arg.extents());
}

// Operand `Side` of a contraction as the other operand's cotangent reads it.  A computed operand
// (ContractExpr::residual_operand: gelu(h W + b) feeding the next matmul) is read from memory:
// the copy the forward pass's GEMM made of it, or, where the forward took another path, the
// operand evaluated now, once, instead of inside a contraction that reads each element many times.
template <int Side, class A, class B, std::size_t NL, std::size_t NO>
auto contraction_operand(backward_context& ctx, const ContractExpr<A, B, NL, NO>& node) {
  using node_t = ContractExpr<A, B, NL, NO>;
  const auto& operand = [&]() -> const auto& {
    if constexpr (Side == 0) return node.lhs();
    else return node.rhs();
  }();
  using X = std::remove_cvref_t<decltype(operand.arg)>;
  if constexpr (!node_t::template residual_operand<X>) {
    return operand;
  } else {
    using T = typename node_t::promoted_type;
    constexpr std::size_t R = rank_of<X>;
    using kept_t = Array<T, R, default_memory_space>;
    if (const kept_t* kept = ctx.residuals.find<kept_t>(node.buffer.stamp.data(), Side))
      return LabelExpr<NL, ArrayLeaf<T, R, default_memory_space>>(kept->as_leaf(), operand.ext, operand.label);
    const auto a = evaluate_fresh<T>(ctx, operand.arg, "kax::grad residual");
    ctx.residuals.keep(node.buffer.stamp.data(), Side, a);  // for copies of this node
    return LabelExpr<NL, ArrayLeaf<T, R, default_memory_space>>(a.as_leaf(), operand.ext, operand.label);
  }
}

template <class A, class B, std::size_t NL, std::size_t NO, class G>
void rule(backward_context& ctx, const ContractExpr<A, B, NL, NO>& node, const G& g) {
  if constexpr (rank_of<A> > NL || rank_of<B> > NL) {
    reject_diagonal("kax::grad(einsum)");  // more axes than labels: some label repeats
  } else {
  const bool to_a = ctx.reaches(node.lhs().arg), to_b = ctx.reaches(node.rhs().arg);
  if (!to_a && !to_b) return;
  const auto gm = settle(ctx, g);
  if (to_a) backprop(ctx, node.lhs().arg, operand_cotangent<NL, NO>(node.lhs(), contraction_operand<1>(ctx, node), gm));
  if (to_b) backprop(ctx, node.rhs().arg, operand_cotangent<NL, NO>(node.rhs(), contraction_operand<0>(ctx, node), gm));
  }
}

// An operand in label space (einsum's one-operand form, outer products): the cotangent summed
// over the labels the operand does not have, then over the axes where it broadcast.
template <std::size_t NL, class E, class G>
void rule(backward_context& ctx, const LabelExpr<NL, E>& node, const G& g) {
  constexpr std::size_t RA = rank_of<E>;
  if constexpr (RA > NL) {
    reject_diagonal("kax::grad(einsum)");
  } else {
    const auto id = labels_first<NL, RA>(node.label, "kax::grad(einsum)");
    shape<NL> ext{};
    for (std::size_t l = 0; l < NL; ++l) ext[id[l]] = node.ext[l];
    multi_index<NL> lg{};
    for (std::size_t l = 0; l < NL; ++l) lg[l] = id[l];
    auto full = contract<NL, RA>(g, ext, lg, "kax::grad(einsum)");
    backprop(ctx, node.arg, sum_to<RA>(std::move(full), node.arg.extents()));
  }
}

template <class E, class G>
void rule(backward_context& ctx, const TransposeExpr<E>& node, const G& g) {
  constexpr std::size_t R = rank_of<E>;
  std::array<long, R> inverse{};
  for (std::size_t k = 0; k < R; ++k) inverse[node.perm[k]] = static_cast<long>(k);
  backprop(ctx, node.arg, TransposeExpr<G>(g, inverse));
}

template <class E, std::size_t R2, class G>
void rule(backward_context& ctx, const ReshapeExpr<E, R2>& node, const G& g) {
  constexpr std::size_t R = rank_of<E>;
  const auto in = node.arg.extents();
  std::array<long, R> s{};
  for (std::size_t k = 0; k < R; ++k) s[k] = static_cast<long>(in[k]);
  backprop(ctx, node.arg, ReshapeExpr<G, R>(g, s));
}

// expand_dims/squeeze: the inverse map of unit axes.
template <class E, std::size_t R2, class G>
void rule(backward_context& ctx, const UnitAxesExpr<E, R2>& node, const G& g) {
  constexpr std::size_t R = rank_of<E>;
  multi_index<R2> src{}, live{};
  for (std::size_t k = 0; k < R; ++k)
    if (node.live[k]) {
      src[node.src[k]] = k;
      live[node.src[k]] = 1;
    }
  backprop(ctx, node.arg, UnitAxesExpr<G, R>(g, node.arg.extents(), src, live));
}

template <class E, std::size_t R2, class G>
void rule(backward_context& ctx, const BroadcastToExpr<E, R2>& node, const G& g) {
  to_operand(ctx, node.arg, g);
}

template <class E, class G>
void rule(backward_context& ctx, const SliceExpr<E>& node, const G& g) {
  backprop(ctx, node.arg, PadExpr<G>(g, node.arg.extents(), node.first, node.step));
}

template <class... E, class G>
void rule(backward_context& ctx, const ConcatenateExpr<E...>& node, const G& g) {
  constexpr std::size_t R = rank_of<G>;
  [&]<std::size_t... K>(std::index_sequence<K...>) {
    auto one = [&](const auto& x, std::size_t k) {
      if (!ctx.reaches(x)) return;
      shape<R> ext = node.ext;
      ext[node.axis] = node.ends[k] - node.starts[k];
      Kokkos::Array<std::int64_t, R> first{}, step{};
      for (std::size_t d = 0; d < R; ++d) step[d] = 1;
      first[node.axis] = static_cast<std::int64_t>(node.starts[k]);
      backprop(ctx, x, SliceExpr<G>(g, ext, first, step));
    };
    (one(std::get<K>(node.args), K), ...);
  }(std::index_sequence_for<E...>{});
}

template <class E, class G>
void rule(backward_context& ctx, const BatchRowsExpr<E>& node, const G& g) {
  backprop(ctx, node.expr, g);
}

}  // namespace kax::detail
