// kax/transform/grad.hpp — reverse-mode autodiff: kax::grad, kax::value_and_grad (jax.grad,
// jax.value_and_grad), with argnums and has_aux.
//
//   auto loss = [](const auto& w, const auto& x, const auto& y) {
//     return kax::mean(kax::square(kax::matmul(x, w) - y));
//   };
//   kax::Array<float, 2> dw = kax::grad(loss)(w, x, y);                 // d loss / d w
//   auto [value, grads] = kax::value_and_grad(loss, kax::argnums<0, 2>)(w, x, y);  // tuple
//
// f is an ordinary generic lambda that returns a rank-0 expression (or, with kax::has_aux, a
// std::pair of one and anything else).  The differentiated arguments are kax::Arrays of a
// floating dtype, or std::tuple / std::array of them ("pytrees"); their gradients come back in the
// same structure.  Other arguments are passed to f unchanged.
//
// How it runs (docs/autodiff.md): f is called once, on copies of the differentiated arguments
// that are marked as traced, and builds its expression graph as usual.  One evaluation computes
// the loss and every reduction and contraction in the graph; those results stay frozen as the
// residuals, with the GEMM operands it evaluated into memory (expr/detail/residuals.hpp).  Then
// the backward pass (detail/vjp.hpp) walks the graph's type from the root, building each
// cotangent as a lazy expression, and evaluates only where the gradient must exist: into each
// argument's gradient, and at reductions and contractions.
//
// f must build its result lazily from its arguments: an expression evaluated inside f (assigned
// to an Array, passed to kax::eval) is a constant to kax::grad, as a value computed outside
// jax.grad's trace would be; kax::grad rejects that with a clear error where it can see it.
#pragma once

#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include "kax/core/array.hpp"
#include "kax/exec/assign.hpp"
#include "kax/plan/stages.hpp"
#include "kax/transform/detail/pmap_outputs.hpp"
#include "kax/transform/detail/vjp.hpp"
#include "kax/transform/vmap.hpp"

namespace kax {

// jax.grad(f, argnums=(0, 2)): kax::grad(f, kax::argnums<0, 2>).
template <std::size_t... I>
struct argnums_t {
  static_assert(sizeof...(I) >= 1, "kax::argnums: name at least one argument");
};
template <std::size_t... I>
inline constexpr argnums_t<I...> argnums{};

// jax.grad(f, has_aux=True): f returns std::pair{loss, aux}; aux comes back beside the gradient.
struct has_aux_t {
  explicit constexpr has_aux_t() = default;
};
inline constexpr has_aux_t has_aux{};

namespace detail {

// A differentiable argument: a floating-point Array, or a tuple / std::array of them.
template <class X>
constexpr bool differentiable_arg() {
  using T = std::remove_cvref_t<X>;
  if constexpr (is_kax_array<T>::value) {
    return std::is_floating_point_v<typename T::value_type>;
  } else if constexpr (tuple_like<T>) {
    return []<std::size_t... I>(std::index_sequence<I...>) {
      return (differentiable_arg<std::tuple_element_t<I, T>>() && ...);
    }(std::make_index_sequence<std::tuple_size_v<T>>{});
  } else {
    return false;
  }
}

// Traced copies of a differentiated argument (same structure).
template <class X>
auto trace_arg(backward_context& ctx, const X& x) {
  if constexpr (is_kax_array<X>::value) {
    return ctx.trace(x);
  } else {
    return std::apply([&](const auto&... e) { return X{trace_arg(ctx, e)...}; }, x);
  }
}

// The gradients of a traced argument (same structure).
template <class X>
auto gradient_of(backward_context& ctx, const X& traced) {
  if constexpr (is_kax_array<X>::value) {
    return ctx.gradient(traced);
  } else {
    return std::apply([&](const auto&... e) { return X{gradient_of(ctx, e)...}; }, traced);
  }
}

template <std::size_t K, std::size_t... I>
inline constexpr bool listed = ((K == I) || ...);

// aux: expressions are evaluated (reusing the forward pass's results); anything else is returned.
template <class A>
auto evaluate_aux(const A& a) {
  if constexpr (expression<A>) {
    return Array<value_type_of<A>, rank_of<A>>(a);
  } else if constexpr (tuple_like<A>) {
    return std::apply([](const auto&... e) { return std::make_tuple(evaluate_aux(e)...); }, a);
  } else {
    return a;
  }
}

// The result of f: the loss expression, and aux when there is one.
template <bool Aux, class Y>
decltype(auto) loss_of(const Y& y) {
  if constexpr (Aux) return std::get<0>(y);
  else return (y);
}

// The loss's value: a rank-0 Array.  A reduction at the root was computed into its own buffer by
// the forward pass; anything else is evaluated on top of the frozen residuals.
template <class E>
Array<value_type_of<E>, 0> loss_value(const E& e) {
  if constexpr (materialization<E>) {
    // Uninitialized: a zero-filled Array would cost a fill kernel before the copy.
    auto v = uninitialized<value_type_of<E>, 0, default_memory_space>(shape<0>{}, "kax::grad loss");
    Kokkos::deep_copy(v.view(), Kokkos::subview(e.buffer.values, 0));
    return v;
  } else {
    return Array<value_type_of<E>, 0>(e);
  }
}

// Differentiated argument x of vmap(grad(f)) with its in_axes entry, as a batched array with the
// batch axis in front; an unmapped one (kax::none) is broadcast, so that each example has its own
// copy and the gradient of that copy is the example's gradient.
template <class X, class S>
auto batch_leaves(const X& x, const S& spec, std::size_t batch) {
  if constexpr (tuple_like<X>) {
    constexpr std::size_t n = std::tuple_size_v<X>;
    return [&]<std::size_t... J>(std::index_sequence<J...>) {
      if constexpr (is_std_array<X>::value) {
        using B = decltype(batch_leaves(std::get<0>(x), element_spec<0>(spec), batch));
        return std::array<B, n>{batch_leaves(std::get<J>(x), element_spec<J>(spec), batch)...};
      } else {
        return std::make_tuple(batch_leaves(std::get<J>(x), element_spec<J>(spec), batch)...);
      }
    }(std::make_index_sequence<n>{});
  } else {
    using T = typename X::value_type;
    constexpr std::size_t R = X::rank;
    if constexpr (std::is_same_v<S, none_t>) {
      shape<R + 1> s{};
      s[0] = batch;
      for (std::size_t k = 0; k < R; ++k) s[k + 1] = x.extent(k);
      return Array<T, R + 1>(broadcast_to(expand_dims(x, 0), s));
    } else {
      static_assert(std::is_same_v<S, long>, "kax::vmap(kax::grad(f)): a nested in_axes entry for an array");
      const std::size_t ax = normalize_axis(spec, R, "kax::vmap(kax::grad(f))");
      if (ax == 0) return Array<T, R>(x);
      std::array<long, R> perm{};
      perm[0] = static_cast<long>(ax);
      for (std::size_t k = 1; k < R; ++k) perm[k] = static_cast<long>(k <= ax ? k - 1 : k);
      return Array<T, R>(transpose(x, perm));
    }
  }
}

// While f runs, evaluating a traced argument is an error (exec/assign.hpp).
struct tracing_scope {
  tracing_scope() { ++grad_tracing(); }
  ~tracing_scope() { --grad_tracing(); }
  tracing_scope(const tracing_scope&) = delete;
  tracing_scope& operator=(const tracing_scope&) = delete;
};

template <bool WithValue, bool Aux, class F, std::size_t... I>
struct grad_function {
  F f;
  static constexpr bool is_grad_function = true;

  // kax::vmap(kax::grad(f), in_axes)(args...) (transform/vmap.hpp calls this): per-example
  // gradients, each with the batch axis in front.  It is the gradient of the sum over the batch
  // of vmap(f), taken with respect to batched copies of the differentiated arguments: example b
  // reads only its own copy, so the copy's gradient is example b's.  One batched forward pass and
  // one batched backward pass (batched GEMMs), not a loop over examples.
  template <class Specs, class... X>
  auto per_example(std::size_t batch, const Specs& specs, const X&... args) const {
    static_assert(!Aux, "kax::vmap(kax::grad(f, kax::has_aux)) is not supported");
    auto batched = [&]<std::size_t... K>(std::index_sequence<K...>) {
      return std::tuple<decltype(batched_one<K>(batch, specs, args...))...>{batched_one<K>(batch, specs, args...)...};
    }(std::index_sequence_for<X...>{});
    auto inner = [&]<std::size_t... K>(std::index_sequence<K...>) {
      return in_axes(inner_spec<K>(std::get<K>(specs))...);
    }(std::index_sequence_for<X...>{});
    auto total = [g = f, inner](const auto&... a) {
      auto per = vmap(g, inner)(a...);
      return std::make_pair(sum(per), per);
    };
    const grad_function<true, true, decltype(total), I...> gradient{total};
    auto [value_aux, grads] = std::apply(gradient, batched);
    if constexpr (WithValue) return std::make_pair(std::move(value_aux.second), std::move(grads));
    else return grads;
  }

  template <class... X>
  auto operator()(const X&... args) const {
    static_assert(((I < sizeof...(X)) && ...),
                  "kax::grad: an argnums entry is not smaller than the number of arguments");
    static_assert((differentiable_arg<std::tuple_element_t<I, std::tuple<X...>>>() && ...),
                  "kax::grad: differentiated arguments must be kax::Arrays of a floating dtype, or "
                  "std::tuple / std::array of them");
    backward_context ctx;
    // Differentiated arguments are replaced by traced copies (they share the buffers).
    auto call_args = [&]<std::size_t... K>(std::index_sequence<K...>) {
      return std::tuple<decltype(pick<K>(ctx, args...))...>{pick<K>(ctx, args...)...};
    }(std::index_sequence_for<X...>{});
    auto y = [&] {
      const tracing_scope tracing;
      return std::apply(f, call_args);
    }();
    using Y = decltype(y);
    if constexpr (Aux) {
      static_assert(tuple_size_is_2<Y>(),
                    "kax::grad: with kax::has_aux, f must return std::pair{loss, aux}");
    }
    const auto& loss = loss_of<Aux>(y);
    using L = std::remove_cvref_t<decltype(loss)>;
    static_assert(expression<L> || array_like<L>,
                  "kax::grad: f must return a kax expression (the loss)");
    auto root = as_expr(loss);
    using E = decltype(root);
    static_assert(rank_of<E> == 0,
                  "kax::grad: f must return a scalar (rank-0) expression, e.g. kax::sum(...); use "
                  "kax::vmap(kax::grad(f)) for per-example gradients");
    static_assert(std::is_floating_point_v<value_type_of<E>>, "kax::grad: f must return a floating-point scalar");

    // Forward: every reduction and contraction once (the root too), then frozen as residuals.
    using space = exec_space_for<default_memory_space>;
    {
      const residual_scope keep(ctx.residuals);  // GEMM operand copies stay for the backward pass
      prepare(root, next_evaluation_epoch(), space{});
    }
    auto value = loss_value(root);
    // aux before the freeze: a vmapped aux (vmap(value_and_grad)) evaluates through the batch-row
    // plan, which computes its own stages and must not find them marked as computed.
    auto aux = [&] {
      if constexpr (Aux) return evaluate_aux(std::get<1>(y));
      else return 0;
    }();
    ctx.freeze(root);
    // Backward, from d loss / d loss = 1.
    backprop(ctx, root, ScalarExpr<value_type_of<E>, false>(value_type_of<E>(1)));
    auto grads = [&] {
      if constexpr (sizeof...(I) == 1) {
        return gradient_of(ctx, std::get<I...>(call_args));
      } else {
        return std::make_tuple(gradient_of(ctx, std::get<I>(call_args))...);
      }
    }();
    if constexpr (Aux) {
      if constexpr (WithValue) return std::make_pair(std::make_pair(value, std::move(aux)), std::move(grads));
      else return std::make_pair(std::move(grads), std::move(aux));
    } else {
      if constexpr (WithValue) return std::make_pair(value, std::move(grads));
      else return grads;
    }
  }

 private:
  template <class Y>
  static constexpr bool tuple_size_is_2() {
    if constexpr (requires { std::tuple_size<Y>::value; }) return std::tuple_size_v<Y> == 2;
    else return false;
  }

  template <std::size_t K, class Specs, class... X>
  static auto batched_one(std::size_t batch, const Specs& specs, const X&... args) {
    const auto& x = std::get<K>(std::forward_as_tuple(args...));
    if constexpr (listed<K, I...>) return batch_leaves(x, std::get<K>(specs), batch);
    else return x;
  }

  template <std::size_t K, class S>
  static auto inner_spec(const S& spec) {
    if constexpr (listed<K, I...>) return 0L;
    else return spec;
  }

  template <std::size_t K, class... X>
  static auto pick(backward_context& ctx, const X&... args) {
    const auto& x = std::get<K>(std::forward_as_tuple(args...));
    if constexpr (listed<K, I...>) return trace_arg(ctx, x);
    else return x;
  }
};

// The options of grad/value_and_grad: argnums (default argnums<0>) and has_aux, in any order.
template <class... O>
struct grad_options {
  using nums = argnums_t<0>;
};
template <std::size_t... I, class... Rest>
struct grad_options<argnums_t<I...>, Rest...> {
  using nums = argnums_t<I...>;
};
template <class First, class... Rest>
struct grad_options<First, Rest...> : grad_options<Rest...> {};

template <class O>
inline constexpr bool grad_option = std::is_same_v<O, has_aux_t>;
template <std::size_t... I>
inline constexpr bool grad_option<argnums_t<I...>> = true;

template <bool WithValue, class F, class... O>
auto make_grad(F f, O...) {
  static_assert((grad_option<O> && ...), "kax::grad: options are kax::argnums<...> and kax::has_aux");
  constexpr bool aux = (std::is_same_v<O, has_aux_t> || ...);
  return [&]<std::size_t... I>(argnums_t<I...>) {
    return grad_function<WithValue, aux, F, I...>{std::move(f)};
  }(typename grad_options<O...>::nums{});
}

}  // namespace detail

// jax.grad(f): the gradient of f's scalar result with respect to argument 0 (or kax::argnums<...>).
template <class F, class... O>
auto grad(F f, O... options) {
  return detail::make_grad<false>(std::move(f), options...);
}

// jax.value_and_grad(f): the pair {value, gradient}.
template <class F, class... O>
auto value_and_grad(F f, O... options) {
  return detail::make_grad<true>(std::move(f), options...);
}

}  // namespace kax
