// kax/transform/vmap.hpp — kax::vmap: vectorizing map (jax.vmap).
//
//   auto f = [](auto x, auto w) { return kax::dot(x, w) + kax::sin(x); };   // one example
//   kax::Array<float, 2> y = kax::vmap(f, kax::in_axes(0, kax::none))(X, w); // X (B, D), w (D,)
//
// vmap(f)(args...) calls f once, on placeholders that have the shapes of one example
// (transform/detail/mapped.hpp), and rewrites the expression graph f returns so that the batch
// axis is part of it (transform/detail/batching.hpp).  The result is an ordinary lazy kax
// expression (or a std::tuple of them when f returns a tuple): nothing runs until it is assigned
// or kax::eval'd, and then the whole batch runs as the same fused kernels one big expression would
// (elementwise work in one kernel, reductions and contractions as batched stages, matrix products
// as batched GEMMs).  f is never called per example.
#pragma once

#include <array>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "kax/core/errors.hpp"
#include "kax/expr/as_expr.hpp"
#include "kax/transform/axes.hpp"
#include "kax/parallel/collectives.hpp"
#include "kax/transform/detail/batching.hpp"
#include "kax/transform/detail/collective_batching.hpp"

namespace kax {

namespace detail {

// Identifies one vmap call: the vmapped function object's type and the argument types.  An inner
// vmap's arguments hold the outer placeholders, so nested levels never share a tag.
template <class Self, class Args>
struct vmap_tag {};

template <class X>
struct is_tuple_like : std::false_type {};
template <class... X>
struct is_tuple_like<std::tuple<X...>> : std::true_type {};
template <class X, std::size_t N>
struct is_tuple_like<std::array<X, N>> : std::true_type {};
template <class X>
inline constexpr bool tuple_like = is_tuple_like<std::remove_cvref_t<X>>::value;

template <class X>
struct is_std_array : std::false_type {};
template <class X, std::size_t N>
struct is_std_array<std::array<X, N>> : std::true_type {};

template <class S>
inline constexpr bool nested_spec = is_axes_spec<std::remove_cvref_t<S>>::value;

// The spec of element I of a tuple argument or output: its nested entry, or the one entry that
// covers every element.
template <std::size_t I, class S>
decltype(auto) element_spec(const S& spec) {
  if constexpr (nested_spec<S>) return std::get<I>(entries_of(spec));
  else return spec;
}

// One mapped axis of one argument, for the size check and its message.
struct mapped_axis {
  std::size_t size;
  std::string where;  // "axis 0 of argument 1, of shape (3, 4),"
};

// Records the mapped axes of an argument (recursing into tuples), or throws axis_error for an
// axis outside the argument's rank.
template <class X, class S>
void collect_axes(const X& x, const S& spec, const std::string& name, std::vector<mapped_axis>& out,
                  const std::string& who = "kax::vmap") {
  if constexpr (tuple_like<X>) {
    constexpr std::size_t n = std::tuple_size_v<std::remove_cvref_t<X>>;
    if constexpr (nested_spec<S>) {
      static_assert(std::tuple_size_v<std::remove_cvref_t<decltype(entries_of(spec))>> == n,
                    "kax::vmap: a nested in_axes entry must have one entry per element of its "
                    "tuple argument");
    }
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (collect_axes(std::get<I>(x), element_spec<I>(spec),
                    name + "[" + std::to_string(I) + "]", out, who),
       ...);
    }(std::make_index_sequence<n>{});
  } else {
    static_assert(operand<X>,
                  "kax::vmap: arguments must be kax arrays, expressions, scalars, or std::tuple / "
                  "std::array of them");
    static_assert(!nested_spec<S>, "kax::vmap: a nested in_axes entry is given for an argument that is not a tuple");
    if constexpr (std::is_same_v<S, long>) {
      constexpr std::size_t R = rank_of<expr_t<X>>;
      shape<R> s{};
      if constexpr (!scalar<X>) s = as_expr(x).extents();
      const long r = static_cast<long>(R);
      if (spec < -r || spec >= r || R == 0) {
        const long need = spec < 0 ? -spec : spec + 1;
        throw axis_error(who + " was requested to map " + name + " along axis " + std::to_string(spec) +
                         ", which implies that its rank should be at least " + std::to_string(need) +
                         ", but is only " + std::to_string(R) + " (its shape is " + shape_string(s) + ")");
      }
      const std::size_t ax = static_cast<std::size_t>(spec < 0 ? spec + r : spec);
      out.push_back({s[ax], "axis " + std::to_string(ax) + " of " + name + ", of shape " + shape_string(s) + ","});
    }
  }
}

// The batch size: every mapped axis (and axis_size, when given) must agree.
inline std::size_t common_batch_size(const std::vector<mapped_axis>& axes, std::optional<std::size_t> requested,
                                     const std::string& who = "kax::vmap") {
  if (axes.empty()) {
    if (!requested)
      throw axis_error(who + " must have at least one non-none value in in_axes" +
                       (who == "kax::vmap" ? ", or be given kax::axis_size(n)" : ""));
    return *requested;
  }
  const std::size_t b = requested ? *requested : axes.front().size;
  bool consistent = true;
  for (const auto& a : axes) consistent = consistent && a.size == b;
  if (consistent) return b;
  std::string msg = who + " got inconsistent sizes for array axes to be mapped:";
  if (requested) msg += "\n  * kax::axis_size is " + std::to_string(*requested);
  for (const auto& a : axes) msg += "\n  * " + a.where + " has size " + std::to_string(a.size);
  throw shape_error(msg);
}

// What f receives for an argument: a placeholder for a mapped array, the argument itself when
// it is not mapped, a tuple of those for a tuple (a std::array stays a std::array when one entry
// covers all its elements).
template <class Tag, class X, class S>
auto placeholder(const X& x, const S& spec) {
  if constexpr (tuple_like<X>) {
    using T = std::remove_cvref_t<X>;
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      if constexpr (!nested_spec<S> && is_std_array<T>::value) {
        using P = decltype(placeholder<Tag>(std::get<0>(x), spec));
        return std::array<P, sizeof...(I)>{placeholder<Tag>(std::get<I>(x), spec)...};
      } else {
        return std::make_tuple(
            placeholder<Tag>(std::get<I>(x), element_spec<I>(spec))...);
      }
    }(std::make_index_sequence<std::tuple_size_v<T>>{});
  } else if constexpr (std::is_same_v<S, long> && !scalar<X> && rank_of<expr_t<X>> >= 1) {
    constexpr long r = static_cast<long>(rank_of<expr_t<X>>);
    return MappedExpr<expr_t<X>, Tag>(as_expr(x), static_cast<std::size_t>(spec < 0 ? spec + r : spec));
  } else {
    return x;  // not mapped (a mapped rank-0 argument was rejected by collect_axes)
  }
}

// One output of f, rewritten and placed: out_axes k moves the batch axis to k, kax::none leaves
// an unbatched output as it is; an unbatched output with an axis is broadcast along the batch.
template <class Tag, class Y, class S>
auto place_output(batch_context<Tag>& ctx, const Y& y, const S& spec) {
  static_assert(operand<Y>,
                "kax::vmap: the function must return kax arrays, expressions, scalars, or a "
                "std::tuple / std::array of them");
  static_assert(!nested_spec<S>, "kax::vmap: a nested out_axes entry is given for an output that is not a tuple");
  auto e = as_expr(y);
  using B = decltype(batch_node(ctx, e));
  constexpr std::size_t R = rank_of<decltype(e)>;
  if constexpr (std::is_same_v<S, none_t>) {
    static_assert(!B::is_batched,
                  "kax::vmap: an output depends on a mapped argument, but its out_axes entry is "
                  "kax::none (JAX: vmap has mapped output but out_axes is None)");
    return y;
  } else {
    auto batched_out = [&] {
      if constexpr (B::is_batched) return batch_node(ctx, e).expr;
      else return BroadcastToExpr<decltype(e), R + 1>(e, with_batch(ctx.size, e.extents()));
    }();
    if constexpr (std::is_same_v<S, leading_axis_t>) {
      // The batch is axis 0: mark it for the row-fused plan (exec/batch_rows.hpp).  A stage at
      // the root already writes the destination directly.
      if constexpr (B::is_batched && !materialization<decltype(batched_out)>)
        return BatchRowsExpr<decltype(batched_out)>(std::move(batched_out), ctx.batched_stages);
      else return batched_out;
    } else {
      const std::size_t ax = normalize_axis(spec, R + 1, "kax::vmap (out_axes)");
      return move_from_front(std::move(batched_out), ax);
    }
  }
}

template <class Tag, class Y, class S>
auto place_outputs(batch_context<Tag>& ctx, const Y& y, const S& spec) {
  if constexpr (tuple_like<Y>) {
    constexpr std::size_t n = std::tuple_size_v<std::remove_cvref_t<Y>>;
    if constexpr (nested_spec<S>) {
      static_assert(std::tuple_size_v<std::remove_cvref_t<decltype(entries_of(spec))>> == n,
                    "kax::vmap: out_axes must have one entry, or one entry per element of the "
                    "tuple the function returns");
    }
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return std::make_tuple(
          place_outputs(ctx, std::get<I>(y), element_spec<I>(spec))...);
    }(std::make_index_sequence<n>{});
  } else {
    return place_output(ctx, y, spec);
  }
}

// The top-level out_axes: one entry applies to every output, several match a returned tuple.
template <class Tag, class Y, class S>
auto place_all_outputs(batch_context<Tag>& ctx, const Y& y, const S& spec) {
  if constexpr (nested_spec<S>) {
    constexpr std::size_t n = std::tuple_size_v<std::remove_cvref_t<decltype(entries_of(spec))>>;
    if constexpr (n == 1) return place_outputs(ctx, y, std::get<0>(entries_of(spec)));
    else {
      static_assert(tuple_like<Y>,
                    "kax::vmap: out_axes has several entries but the function returns a single value");
      return place_outputs(ctx, y, spec);
    }
  } else {
    return place_outputs(ctx, y, spec);
  }
}

// kax::grad(f)'s callable (transform/grad.hpp), which vmap hands the batch to (per-example
// gradients).  A named concept: nvcc's front end misjudges this requires-expression when it is
// written inline in vmapped's call operator.
template <class F>
concept grad_callable = requires { F::is_grad_function; };

template <class F, class In, class Out, class AxisName = void>
class vmapped {
 public:
  using axis_name_type = AxisName;

  vmapped(F f, In in, Out out, std::optional<std::size_t> size)
      : f_(std::move(f)), in_(std::move(in)), out_(std::move(out)), size_(size) {}

  template <class... Args>
  auto operator()(const Args&... args) const {
    using Tag = vmap_tag<vmapped, std::tuple<std::remove_cvref_t<Args>...>>;
    if constexpr (!std::is_same_v<In, all_leading_t>) {
      static_assert(std::tuple_size_v<std::remove_cvref_t<decltype(entries_of(in_))>> == sizeof...(Args),
                    "kax::vmap: in_axes must have one entry per argument of the call");
    }
    auto spec = [&](auto i) -> decltype(auto) {
      if constexpr (std::is_same_v<In, all_leading_t>) return 0L;
      else return std::get<decltype(i)::value>(entries_of(in_));
    };
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      std::vector<mapped_axis> axes;
      (collect_axes(args, spec(std::integral_constant<std::size_t, I>{}), "argument " + std::to_string(I), axes),
       ...);
      batch_context<Tag> ctx;
      ctx.size = common_batch_size(axes, size_);
      if constexpr (grad_callable<F>) {
        // vmap(grad(f)): per-example gradients, computed eagerly by kax::grad (transform/grad.hpp).
        static_assert(std::is_same_v<Out, leading_axis_t>,
                      "kax::vmap(kax::grad(f)): out_axes other than 0 are not supported");
        static_assert(std::is_void_v<AxisName>, "kax::vmap(kax::grad(f)): axis_name is not supported");
        return f_.per_example(ctx.size, std::make_tuple(spec(std::integral_constant<std::size_t, I>{})...), args...);
      } else {
      static_assert(std::is_invocable_v<const F&, decltype(placeholder<Tag>(
                                                      args, spec(std::integral_constant<std::size_t, I>{})))...>,
                    "kax::vmap: the function cannot be called with one example of each mapped "
                    "argument (its rank without the mapped axis), or its body does not compile for "
                    "them (see the errors that follow)");
      // Collectives over this vmap's axis name find it while f builds its graph.
      std::optional<axis_scope> bound;
      if constexpr (!std::is_void_v<AxisName>) bound.emplace(axis_binding{AxisName::name.str(), nullptr, 0, ctx.size});
      auto y = std::invoke(f_, placeholder<Tag>(args, spec(std::integral_constant<std::size_t, I>{}))...);
      bound.reset();
      return place_all_outputs(ctx, y, out_);
      }
    }(std::index_sequence_for<Args...>{});
  }

 private:
  F f_;
  In in_;
  Out out_;
  std::optional<std::size_t> size_;
};

inline std::optional<std::size_t> requested_size(const axis_size& a) { return a.value; }
template <class O>
std::optional<std::size_t> requested_size(const O&) {
  return std::nullopt;
}

template <class F, class In, class Out, class AxisName, class Args>
struct tag_axis_name<vmap_tag<vmapped<F, In, Out, AxisName>, Args>> {
  using type = AxisName;
};

template <template <class...> class T, class X>
struct is_instance : std::false_type {};
template <template <class...> class T, class... A>
struct is_instance<T, T<A...>> : std::true_type {};

// The option of kind T among `opts`, or `fallback`.
template <template <class...> class T, class D, class... O>
auto option_of(D fallback, const O&... opts) {
  static_assert((is_instance<T, O>::value + ... + 0) <= 1, "kax::vmap: an option is given twice");
  [[maybe_unused]] auto pick = [](const auto& o) {
    if constexpr (is_instance<T, std::remove_cvref_t<decltype(o)>>::value) return std::tuple(o);
    else return std::tuple<>{};
  };
  auto found = std::tuple_cat(pick(opts)...);
  if constexpr (std::tuple_size_v<decltype(found)> == 1) return std::get<0>(found);
  else return fallback;
}

inline void axis_name_of() {}
template <class O, class... Rest>
auto axis_name_of(const O&, const Rest&... rest) {
  if constexpr (is_axis_name<O>::value) return O{};
  else return axis_name_of(rest...);
}

}  // namespace detail

// jax.vmap(f, in_axes, out_axes, axis_size): options in any order, each at most once:
//   kax::vmap(f)                                          every argument mapped along axis 0
//   kax::vmap(f, kax::in_axes(0, kax::none))              one entry per argument
//   kax::vmap(f, kax::in_axes(1), kax::out_axes(-1))      out_axes: one entry, or one per output
//   kax::vmap(f, kax::in_axes(kax::none), kax::axis_size(8))  no mapped argument: a batch of 8
//   kax::vmap(f, kax::axis_name<"i">)                    collectives over "i" in f reduce over the batch
// Returns a callable; calling it returns the batched lazy expression (or a tuple of them).
template <class F, class... Opt>
auto vmap(F f, Opt... opts) {
  static_assert(((detail::is_instance<in_axes_t, Opt>::value || detail::is_instance<out_axes_t, Opt>::value ||
                  std::is_same_v<Opt, axis_size> || detail::is_axis_name<Opt>::value) && ...),
                "kax::vmap: options are kax::in_axes(...), kax::out_axes(...), kax::axis_size(n) and "
                "kax::axis_name<\"name\">");
  static_assert((detail::is_axis_name<Opt>::value + ... + 0) <= 1, "kax::vmap: axis_name is given twice");
  static_assert((std::is_same_v<Opt, axis_size> + ... + 0) <= 1, "kax::vmap: axis_size is given twice");
  auto in = detail::option_of<in_axes_t>(detail::all_leading_t{}, opts...);
  auto out = detail::option_of<out_axes_t>(detail::leading_axis_t{}, opts...);
  std::optional<std::size_t> size;
  ((size = size ? size : detail::requested_size(opts)), ...);
  using AxisName = decltype(detail::axis_name_of(opts...));
  return detail::vmapped<F, decltype(in), decltype(out), AxisName>(std::move(f), std::move(in), std::move(out), size);
}

}  // namespace kax
