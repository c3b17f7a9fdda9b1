// kax/optim/tree.hpp — the pytrees kax::optim works on: a kax::Array, or a std::tuple or
// std::array of pytrees (nesting allowed).  tree_map / tree_for_each walk matching leaves of
// several trees, tree_zeros_like allocates optimizer state, apply_updates is optax.apply_updates.
//
// Optimizers launch their own per-leaf kernels (for_each_element below) instead of evaluating kax
// expressions: a step writes three arrays per leaf (adam: mu, nu, params), and kax's fused
// kernels have one output, so expressions would cost three kernels that each re-read the inputs.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "kax/core/array.hpp"
#include "kax/core/config.hpp"
#include "kax/core/errors.hpp"
#include "kax/core/factories.hpp"
#include "kax/exec/spaces.hpp"
#include "kax/plan/elementwise_plan.hpp"
#include "kax/core/detail/simd_warnings_off.hpp"  // after every other include

namespace kax::optim {

namespace detail {

template <class T>
struct is_array : std::false_type {};
template <element_dtype T, std::size_t R, class M>
struct is_array<Array<T, R, M>> : std::true_type {};

template <class T>
struct is_tuple : std::false_type {};
template <class... T>
struct is_tuple<std::tuple<T...>> : std::true_type {};

template <class T>
struct is_std_array : std::false_type {};
template <class T, std::size_t N>
struct is_std_array<std::array<T, N>> : std::true_type {};

// Whether T is a pytree whose leaves all satisfy Leaf<leaf type>::value.
template <class T, template <class> class Leaf>
constexpr bool all_leaves() {
  if constexpr (is_array<T>::value) {
    return Leaf<T>::value;
  } else if constexpr (is_tuple<T>::value) {
    return []<std::size_t... K>(std::index_sequence<K...>) {
      return (all_leaves<std::tuple_element_t<K, T>, Leaf>() && ...);
    }(std::make_index_sequence<std::tuple_size_v<T>>{});
  } else if constexpr (is_std_array<T>::value) {
    return all_leaves<typename T::value_type, Leaf>();
  } else {
    return false;
  }
}

template <class T>
struct any_leaf : std::true_type {};
template <class A>
struct floating_leaf : std::is_floating_point<typename A::value_type> {};

// Same nesting, and leaf for leaf the same Array type (dtype, rank, memory space).
template <class A, class B>
constexpr bool same_structure() {
  if constexpr (is_array<A>::value || is_array<B>::value) {
    return std::is_same_v<A, B>;
  } else if constexpr (is_tuple<A>::value && is_tuple<B>::value) {
    if constexpr (std::tuple_size_v<A> != std::tuple_size_v<B>) {
      return false;
    } else {
      return []<std::size_t... K>(std::index_sequence<K...>) {
        return (same_structure<std::tuple_element_t<K, A>, std::tuple_element_t<K, B>>() && ...);
      }(std::make_index_sequence<std::tuple_size_v<A>>{});
    }
  } else if constexpr (is_std_array<A>::value && is_std_array<B>::value) {
    return std::tuple_size_v<A> == std::tuple_size_v<B> &&
           same_structure<typename A::value_type, typename B::value_type>();
  } else {
    return false;
  }
}

}  // namespace detail

// A kax::Array, or a std::tuple / std::array of pytrees (jax.tree_util's containers, restricted
// to the ones whose structure C++ knows at compile time).
template <class T>
concept pytree = detail::all_leaves<std::remove_cvref_t<T>, detail::any_leaf>();

// A pytree whose leaves are float or double arrays (what optimizers update).
template <class T>
concept floating_pytree = detail::all_leaves<std::remove_cvref_t<T>, detail::floating_leaf>();

// Whether two pytrees have the same structure: nesting, and leaf for leaf dtype, rank and memory
// space (extents are checked at run time).
template <class A, class B>
inline constexpr bool same_structure_v =
    detail::same_structure<std::remove_cvref_t<A>, std::remove_cvref_t<B>>();

template <class F, pytree T, pytree... Rest>
auto tree_map(F&& f, const T& tree, const Rest&... rest);
template <class F, pytree T, pytree... Rest>
void tree_for_each(F&& f, const T& tree, const Rest&... rest);

namespace detail {

// Child K of every tree (a tuple element or a std::array element).  A function of its own, so
// that `rest...` and the caller's K... are expanded by different pack expansions.
template <std::size_t K, class T>
const auto& child(const T& tree) {
  if constexpr (is_tuple<T>::value) return std::get<K>(tree);
  else return tree[K];
}
template <std::size_t K, class F, class T, class... Rest>
auto map_child(F& f, const T& tree, const Rest&... rest) {
  return tree_map(f, child<K>(tree), child<K>(rest)...);
}
template <std::size_t K, class F, class T, class... Rest>
void for_each_child(F& f, const T& tree, const Rest&... rest) {
  tree_for_each(f, child<K>(tree), child<K>(rest)...);
}

}  // namespace detail

// jax.tree_util.tree_map(f, tree, *rest): f(leaf, rest_leaves...) for each leaf; the results form
// a tree of the same nesting.  Leaves are visited in order (tuple elements left to right).
template <class F, pytree T, pytree... Rest>
auto tree_map(F&& f, const T& tree, const Rest&... rest) {
  if constexpr (detail::is_array<T>::value) {
    return f(tree, rest...);
  } else {
    constexpr std::size_t n = std::tuple_size_v<T>;
    return [&]<std::size_t... K>(std::index_sequence<K...>) {
      // Braced initialization: evaluated left to right, unlike make_tuple's arguments.
      if constexpr (detail::is_tuple<T>::value) {
        return std::tuple<decltype(detail::map_child<K>(f, tree, rest...))...>{
            detail::map_child<K>(f, tree, rest...)...};
      } else {
        using U = decltype(tree_map(f, std::declval<const typename T::value_type&>(),
                                    std::declval<const typename Rest::value_type&>()...));
        return std::array<U, n>{detail::map_child<K>(f, tree, rest...)...};
      }
    }(std::make_index_sequence<n>{});
  }
}

// f(leaf, rest_leaves...) for each leaf, in order; nothing is returned.
template <class F, pytree T, pytree... Rest>
void tree_for_each(F&& f, const T& tree, const Rest&... rest) {
  if constexpr (detail::is_array<T>::value) {
    f(tree, rest...);
  } else {
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      (detail::for_each_child<K>(f, tree, rest...), ...);
    }(std::make_index_sequence<std::tuple_size_v<T>>{});
  }
}

// optax.tree_utils.tree_zeros_like: a zero-filled array of the same shape for each leaf.
template <pytree T>
T tree_zeros_like(const T& tree) {
  return tree_map([](const auto& a) { return std::remove_cvref_t<decltype(a)>(a.extents()); },
                  tree);
}

namespace detail {

// A fresh, uninitialized array for each leaf (kernels overwrite every element).
template <pytree T>
T tree_empty_like(const T& tree) {
  return tree_map(
      []<class A>(const A& a) {
        return kax::detail::uninitialized<typename A::value_type, A::rank,
                                          typename A::memory_space>(a.extents());
      },
      tree);
}

// Throws kax::shape_error unless every leaf of `a` has the extents of the matching leaf of `b`.
template <pytree A, pytree B>
void check_extents(const std::string& who, const char* a_name, const A& a, const char* b_name,
                   const B& b) {
  std::size_t leaf = 0;
  tree_for_each(
      [&](const auto& x, const auto& y) {
        if (x.extents() != y.extents())
          throw shape_error(who + ": " + a_name + " leaf " + std::to_string(leaf) + " has shape " +
                            shape_string(x.extents()) + " but " + b_name + " leaf " +
                            std::to_string(leaf) + " has shape " + shape_string(y.extents()));
        ++leaf;
      },
      a, b);
}

// Host: chunk c covers [c*chunk, min(n, (c+1)*chunk)) with an `omp simd` inner loop, as kax's own
// host kernels (exec/kernels.hpp).  In-place updates are safe under `omp simd`: iteration i
// reads and writes only element i.
template <class Body>
struct host_chunk_kernel {
  Body body;
  std::size_t n;
  std::size_t chunk;

  void operator()(const std::int64_t c) const {
    const std::size_t begin = static_cast<std::size_t>(c) * chunk;
    const std::size_t end = begin + chunk < n ? begin + chunk : n;
#pragma omp simd
    for (std::size_t i = begin; i < end; ++i) body(i);
  }
};

// Device: one element per thread.
template <class Body>
struct device_kernel {
  Body body;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t i) const {
    body(static_cast<std::size_t>(i));
  }
};

// One kernel, labelled `label`, running body(i) for i in [0, n) on the space that owns the memory.
template <class MemorySpace, class Body>
void for_each_element(const char* label, std::size_t n, const Body& body) {
  if (n == 0) return;
  using space = kax::detail::exec_space_for<MemorySpace>;
  using index = Kokkos::IndexType<std::int64_t>;
  if constexpr (kax::detail::runs_on_host<space>) {
    const std::size_t chunk =
        kax::detail::host_chunk(n, static_cast<std::size_t>(space::concurrency()));
    const auto chunks = static_cast<std::int64_t>((n + chunk - 1) / chunk);
    Kokkos::parallel_for(label, Kokkos::RangePolicy<space, index>(0, chunks),
                         host_chunk_kernel<Body>{body, n, chunk});
  } else {
    Kokkos::parallel_for(label, Kokkos::RangePolicy<space, index>(0, static_cast<std::int64_t>(n)),
                         device_kernel<Body>{body});
  }
}

template <class T>
struct add_kernel {
  const T* p;
  const T* u;
  T* out;
  KOKKOS_INLINE_FUNCTION void operator()(const std::size_t i) const { out[i] = p[i] + u[i]; }
};

}  // namespace detail

// optax.apply_updates(params, updates): params + updates, leaf by leaf, into fresh arrays (one
// kernel per leaf).
template <pytree P, pytree U>
P apply_updates(const P& params, const U& updates) {
  static_assert(same_structure_v<P, U>,
                "kax::optim::apply_updates: params and updates must have the same structure "
                "(nesting, and leaf for leaf the same dtype and rank)");
  static_assert(floating_pytree<P>,
                "kax::optim::apply_updates: parameters must be float or double arrays");
  if constexpr (!same_structure_v<P, U> || !floating_pytree<P>) {
    return P{};  // the static_asserts above have reported the error
  } else {
    detail::check_extents("kax::optim::apply_updates", "updates", updates, "params", params);
    return tree_map(
        []<class A>(const A& p, const A& u) {
          using T = typename A::value_type;
          auto out = kax::detail::uninitialized<T, A::rank, typename A::memory_space>(p.extents());
          detail::for_each_element<typename A::memory_space>(
              "kax::optim::apply_updates", p.size(),
              detail::add_kernel<T>{p.data(), u.data(), out.data()});
          return out;
        },
        params, updates);
  }
}

}  // namespace kax::optim

#include "kax/core/detail/simd_warnings_on.hpp"
