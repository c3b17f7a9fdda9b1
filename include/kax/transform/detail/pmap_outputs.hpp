// kax/transform/detail/pmap_outputs.hpp — where pmap's device programs put their results: one
// output array per value f returns, with the device axis at its out_axes entry (each device
// writes its slice in place), a donated argument reused as that array, or, for kax::none, each
// device's own value.
#pragma once

#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "kax/core/factories.hpp"
#include "kax/exec/assign.hpp"
#include "kax/expr/as_expr.hpp"
#include "kax/transform/axes.hpp"
#include "kax/transform/vmap.hpp"

namespace kax::detail {

template <class X>
struct is_kax_array : std::false_type {};
template <class T, std::size_t R, class M>
struct is_kax_array<Array<T, R, M>> : std::true_type {};

// One output of the device programs: the array every device writes its slice of (device axis at
// `axis`), or for kax::none each device's own value (device 0's is returned).
template <class Y, class S>
struct output_slot {
  using E = decltype(as_expr(std::declval<const Y&>()));
  using T = value_type_of<E>;
  static constexpr std::size_t R = rank_of<E>;
  static constexpr bool unstacked = std::is_same_v<S, none_t>;
  using result = std::conditional_t<unstacked, Array<T, R>, Array<T, R + 1>>;

  result out;
  std::size_t axis = 0;

  // Device 0, after every device has built its expression: allocates the output, or takes a
  // donated argument of the same type and shape (`donated`: pointers to donated arguments that
  // are mapped along axis 0; `used` marks those already taken by another output).
  template <class Donated>
  void allocate(const std::vector<shape<R>>& shapes, const S& spec, const std::string& who, const Donated& donated,
                std::vector<bool>& used) {
    for (const auto& s : shapes)
      if (s != shapes.front()) {
        std::string msg = who + ": the devices' results have different shapes:";
        for (std::size_t d = 0; d < shapes.size(); ++d)
          msg += "\n  * device " + std::to_string(d) + ": " + shape_string(shapes[d]);
        throw shape_error(msg);
      }
    if constexpr (!unstacked) {
      if constexpr (std::is_same_v<S, leading_axis_t>) axis = 0;
      else axis = normalize_axis(spec, R + 1, (who + " (out_axes)").c_str());
      shape<R + 1> full{};
      for (std::size_t k = 0, j = 0; k < R + 1; ++k) full[k] = k == axis ? shapes.size() : shapes.front()[j++];
      bool took = false;
      std::apply(
          [&](const auto*... a) {
            std::size_t k = 0;
            [[maybe_unused]] auto take = [&](const auto* x) {
              if constexpr (std::is_same_v<std::remove_cvref_t<decltype(*x)>, result>) {
                if (!took && x && !used[k] && axis == 0 && x->extents() == full) {
                  out = *x;
                  used[k] = took = true;
                }
              }
              ++k;
            };
            (take(a), ...);
          },
          donated);
      if (!took) out = detail::uninitialized<T, R + 1>(full, "kax::pmap output");
    }
  }

  // Device d's evaluation of its value into its slice.
  template <class Space>
  void write(const Space& space, std::size_t d, const E& e, result& own) const {
    if constexpr (unstacked) {
      own = detail::uninitialized<T, R>(e.extents(), "kax::pmap output");
      evaluate_into_view<T, R, default_memory_space>(own.view(), e);
      (void)space;
      (void)d;
    } else {
      const shape<R + 1> full = out.extents();
      const shape<R + 1> st = row_major_strides(full);
      output_target<T, R> t{out.data() + d * st[axis], {}, {}, axis == 0};
      for (std::size_t k = 0, j = 0; k < R + 1; ++k) {
        if (k == axis) continue;
        t.ext[j] = full[k];
        t.strides[j++] = st[k];
      }
      evaluate_into<Space, default_memory_space>(space, t, e);
    }
  }
};

// The outputs of f as a flat list: one slot per element of a returned tuple, or one.
template <class Y, class S>
auto output_spec(const S& spec) {
  if constexpr (tuple_like<Y>) {
    constexpr std::size_t n = std::tuple_size_v<std::remove_cvref_t<Y>>;
    if constexpr (nested_spec<S>) {
      constexpr std::size_t m = std::tuple_size_v<std::remove_cvref_t<decltype(entries_of(spec))>>;
      static_assert(m == 1 || m == n, "kax::pmap: out_axes must have one entry, or one per element of the returned tuple");
      if constexpr (m == 1) {
        return [&]<std::size_t... I>(std::index_sequence<I...>) {
          return std::make_tuple(((void)I, std::get<0>(entries_of(spec)))...);
        }(std::make_index_sequence<n>{});
      } else {
        return entries_of(spec);
      }
    } else {
      return [&]<std::size_t... I>(std::index_sequence<I...>) {
        return std::make_tuple(((void)I, spec)...);
      }(std::make_index_sequence<n>{});
    }
  } else {
    if constexpr (nested_spec<S>) {
      static_assert(std::tuple_size_v<std::remove_cvref_t<decltype(entries_of(spec))>> == 1,
                    "kax::pmap: out_axes has several entries but the function returns a single value");
      return std::make_tuple(std::get<0>(entries_of(spec)));
    } else {
      return std::make_tuple(spec);
    }
  }
}

template <class Y>
auto as_tuple(Y&& y) {
  if constexpr (tuple_like<Y>) return std::apply([](auto&&... e) { return std::make_tuple(e...); }, y);
  else return std::make_tuple(std::forward<Y>(y));
}

}  // namespace kax::detail
