// kax/transform/pmap.hpp — kax::pmap: parallel map over devices with named-axis collectives
// (jax.pmap).
//
//   auto f = [](auto x) { return x / kax::psum<"i">(kax::sum(x)); };
//   kax::Array<float, 2> y = kax::pmap<"i">(f)(x);   // x: (n, d) with n <= kax::local_device_count()
//
// The mapped axis (in_axes, default 0 for every argument) is split across the devices: device d
// runs f on slice d of every mapped argument (unmapped, kax::none, arguments are shared), on a
// host task of its own (exec/host_tasks.hpp), so the devices run concurrently.  Each device's
// expression graph is split at its collectives (parallel/collectives.hpp): every stage is a fused
// kernel on that device, and the devices exchange values between stages.  The results are
// written in place into one array with the device axis at out_axes (default 0); kax::none
// returns device 0's value (for values every device agrees on, e.g. after a psum).
//
// Unlike vmap, pmap runs when called and returns Arrays (a std::tuple of them when f returns a
// tuple), as jax.pmap returns computed arrays.  Over MPI (parallel/mpi.hpp) every process calls
// pmap with its own local slices (leading axis = kax::local_device_count()) and the collectives
// span the devices of all processes; axis_index is the global device index.
#pragma once

#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "kax/core/factories.hpp"
#include "kax/exec/assign.hpp"
#include "kax/exec/host_tasks.hpp"
#include "kax/expr/layout/slice.hpp"
#include "kax/expr/layout/unit_axes.hpp"
#include "kax/parallel/collectives.hpp"
#include "kax/parallel/devices.hpp"
#include "kax/transform/detail/pmap_outputs.hpp"
#include "kax/transform/donate.hpp"
#include "kax/transform/vmap.hpp"

namespace kax {

// jax.pmap(f, donate_argnums=(0,)) (transform/donate.hpp): a donated kax::Array that is mapped
// along axis 0 and has exactly the shape and dtype of an output (device axis 0) becomes that
// output instead of a new allocation.  Each device writes only its own slice, after reading it.

namespace detail {

template <class O>
struct is_donation : std::false_type {};
template <std::size_t... I>
struct is_donation<donate_argnums_t<I...>> : std::true_type {};

inline donate_argnums_t<> donation_of() { return {}; }
template <class O, class... Rest>
auto donation_of(const O&, const Rest&... rest) {
  if constexpr (is_donation<O>::value) return O{};
  else return donation_of(rest...);
}

// Compile-time check that every collective in f's result names the pmap's axis (JAX raises
// NameError at trace time; here the program does not compile).
template <fixed_string Name, class E>
void check_axis_names(const E& e) {
  using N = std::remove_cvref_t<E>;
  if constexpr (collective_node<N>) {
    static_assert(same_string<N::name, Name>(),
                  "kax::pmap: the function uses a collective over an axis name that this pmap does not bind "
                  "(kax::pmap<\"i\"> binds only \"i\"; JAX: unbound axis name)");
  }
  if constexpr (requires { e.for_each_child([](const auto&) {}); })
    e.for_each_child([](const auto& c) { check_axis_names<Name>(c); });
  if constexpr (requires { e.for_each_operand([](const auto&) {}); })
    e.for_each_operand([](const auto& c) { check_axis_names<Name>(c); });
}

// Device d's view of an argument: slice d of the mapped axis, the argument itself when unmapped,
// tuples alike.  A mapped Array becomes an Array: along axis 0 it shares the buffer (a subview),
// along another axis the device copies its slice (in its own task, concurrently with the others).
// A mapped expression becomes a lazy slice of it, fused into the device's kernels.
template <class X, class S>
auto device_arg(const X& x, const S& spec, std::size_t d) {
  if constexpr (tuple_like<X>) {
    using T = std::remove_cvref_t<X>;
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      if constexpr (!nested_spec<S> && is_std_array<T>::value) {
        using P = decltype(device_arg(std::get<0>(x), spec, d));
        return std::array<P, sizeof...(I)>{device_arg(std::get<I>(x), spec, d)...};
      } else {
        return std::make_tuple(device_arg(std::get<I>(x), element_spec<I>(spec), d)...);
      }
    }(std::make_index_sequence<std::tuple_size_v<T>>{});
  } else if constexpr (std::is_same_v<S, long> && !scalar<X> && rank_of<expr_t<X>> >= 1) {
    using E = expr_t<X>;
    constexpr std::size_t R = rank_of<E>;
    const std::size_t axis = static_cast<std::size_t>(spec < 0 ? spec + static_cast<long>(R) : spec);
    std::array<range, R> ranges{};
    ranges[axis] = range(static_cast<long>(d), static_cast<long>(d + 1));
    auto lazy = [&] { return squeeze(slice(as_expr(x), ranges), std::array<long, 1>{static_cast<long>(axis)}); };
    if constexpr (is_kax_array<std::remove_cvref_t<X>>::value) {
      using A = std::remove_cvref_t<X>;
      using Out = Array<typename A::value_type, R - 1, typename A::memory_space>;
      if (axis != 0) return Out(lazy());
      auto sub = [&]<std::size_t... K>(std::index_sequence<K...>) {
        return Kokkos::subview(x.view(), d, ((void)K, Kokkos::ALL)...);
      }(std::make_index_sequence<R - 1>{});
      typename Out::view_type v = sub;
      return Out(v);
    } else {
      return lazy();
    }
  } else {
    return x;
  }
}

template <fixed_string Name, class F, class In, class Out, class Donate = donate_argnums_t<>>
class pmapped {
 public:
  pmapped(F f, In in, Out out) : f_(std::move(f)), in_(std::move(in)), out_(std::move(out)) {}

  template <class... Args>
  auto operator()(const Args&... args) const {
    const std::string who = std::string("kax::pmap<\"") + Name.str() + "\">";
    if constexpr (!std::is_same_v<In, all_leading_t>) {
      static_assert(std::tuple_size_v<std::remove_cvref_t<decltype(entries_of(in_))>> == sizeof...(Args),
                    "kax::pmap: in_axes must have one entry per argument of the call");
    }
    auto spec = [&](auto i) -> decltype(auto) {
      if constexpr (std::is_same_v<In, all_leading_t>) return 0L;
      else return std::get<decltype(i)::value>(entries_of(in_));
    };
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      std::vector<mapped_axis> axes;
      (collect_axes(args, spec(std::integral_constant<std::size_t, I>{}), "argument " + std::to_string(I), axes, who),
       ...);
      const std::size_t n = common_batch_size(axes, std::nullopt, who);
      check_device_count(n, who);
      for (const axis_binding& b : axis_bindings())
        if (b.group)
          throw error(who + ": called inside the device program of kax::pmap<\"" + b.name +
                      "\">; nested pmap is not supported (use vmap with kax::axis_name inside pmap)");

      using Y = std::invoke_result_t<const F&, decltype(device_arg(args, spec(std::integral_constant<std::size_t, I>{}), 0))...>;
      using Specs = decltype(output_spec<Y>(out_));
      auto slots = make_slots<Y>(std::make_index_sequence<std::tuple_size_v<Specs>>{});
      const Specs specs = output_spec<Y>(out_);
      using Own = decltype(own_values(slots));
      std::vector<Own> own(n);

      auto net = process_count() > 1 ? cross_process_hook() : nullptr;
      auto group = std::make_shared<axis_group>(Name.str(), static_cast<int>(n), collective_timeout_limit(), net);
      std::vector<std::exception_ptr> failures(n);
      using Shapes = decltype(shape_lists(slots));
      Shapes shapes = shape_lists(slots);
      resize_all(shapes, n);
      const auto donated = donated_arrays(Donate{}, std::forward_as_tuple(args...),
                                          [&](auto i) { return spec(i); });
      std::vector<bool> used(std::tuple_size_v<std::remove_cvref_t<decltype(donated)>>, false);

      exec::run_tasks(n, [&](std::size_t d) {
        try {
          const axis_scope bound(axis_binding{Name.str(), group, static_cast<int>(d), 0});
          auto y = as_tuple(std::invoke(f_, device_arg(args, spec(std::integral_constant<std::size_t, I>{}), d)...));
          auto exprs = std::apply([](const auto&... e) { return std::make_tuple(as_expr(e)...); }, y);
          std::apply([](const auto&... e) { (check_axis_names<Name>(e), ...); }, exprs);
          record_shapes(shapes, exprs, d);
          group->barrier(static_cast<int>(d), who);
          if (d == 0) allocate_all(slots, shapes, specs, who, donated, used);
          group->barrier(static_cast<int>(d), who);
          write_all(slots, exprs, d, own[d]);
        } catch (...) {
          failures[d] = std::current_exception();
          group->abort(who + ": device " + std::to_string(group->global_index(static_cast<int>(d))) + " failed");
        }
      });
      rethrow_root_cause(failures);
      return results<tuple_like<Y>>(slots, own);
    }(std::index_sequence_for<Args...>{});
  }

 private:
  // Pointers to the donated arguments that can hold an output: kax::Arrays mapped along axis 0
  // (others are null, so an output never takes them).
  template <std::size_t... D, class Args, class Spec>
  static auto donated_arrays(donate_argnums_t<D...>, const Args& args, Spec&& spec) {
    [[maybe_unused]] auto one = [&](auto i) {
      constexpr std::size_t k = decltype(i)::value;
      static_assert(k < std::tuple_size_v<Args>, "kax::pmap: a donate_argnums index is not an argument of the call");
      using X = std::remove_cvref_t<std::tuple_element_t<k, Args>>;
      const X* p = nullptr;
      if constexpr (is_kax_array<X>::value) {
        using S = std::remove_cvref_t<decltype(spec(i))>;
        if constexpr (std::is_same_v<S, long>) {
          if (spec(i) == 0) p = &std::get<k>(args);
        }
      }
      return p;
    };
    return std::make_tuple(one(std::integral_constant<std::size_t, D>{})...);
  }

  static void check_device_count(std::size_t n, const std::string& who) {
    const auto local = static_cast<std::size_t>(local_device_count());
    if (n == 0) throw shape_error(who + ": the mapped axis has size 0; pmap needs at least one device");
    if (process_count() > 1 && n != local)
      throw shape_error(who + ": with " + std::to_string(process_count()) +
                        " processes, every process maps its local devices: the mapped axis has size " + std::to_string(n) +
                        ", but this process has " + std::to_string(local) + " devices (kax::local_device_count())");
    if (n > local)
      throw shape_error(who + ": the mapped axis has size " + std::to_string(n) + ", but only " + std::to_string(local) +
                        " devices are available (kax::local_device_count(); host devices: KAX_HOST_DEVICES or "
                        "kax::initialize({.host_devices = N}))");
  }

  template <class Y, std::size_t... K>
  static auto make_slots(std::index_sequence<K...>) {
    using Specs = decltype(output_spec<Y>(std::declval<const Out&>()));
    using Ys = decltype(as_tuple(std::declval<Y>()));
    return std::make_tuple(output_slot<std::tuple_element_t<K, Ys>, std::remove_cvref_t<std::tuple_element_t<K, Specs>>>{}...);
  }

  template <class... Slot>
  static auto own_values(const std::tuple<Slot...>&) -> std::tuple<typename Slot::result...>;
  template <class... Slot>
  static auto shape_lists(const std::tuple<Slot...>&) {
    return std::tuple<std::vector<shape<Slot::R>>...>{};
  }
  template <class... V>
  static void resize_all(std::tuple<V...>& s, std::size_t n) {
    std::apply([n](auto&... v) { (v.resize(n), ...); }, s);
  }
  template <class Shapes, class Exprs>
  static void record_shapes(Shapes& shapes, const Exprs& exprs, std::size_t d) {
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      ((std::get<K>(shapes)[d] = std::get<K>(exprs).extents()), ...);
    }(std::make_index_sequence<std::tuple_size_v<Exprs>>{});
  }
  template <class Slots, class Shapes, class Specs, class Donated>
  static void allocate_all(Slots& slots, const Shapes& shapes, const Specs& specs, const std::string& who,
                           const Donated& donated, std::vector<bool>& used) {
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      (std::get<K>(slots).allocate(std::get<K>(shapes), std::get<K>(specs), who, donated, used), ...);
    }(std::make_index_sequence<std::tuple_size_v<Slots>>{});
  }
  template <class Slots, class Exprs, class OwnT>
  static void write_all(const Slots& slots, const Exprs& exprs, std::size_t d, OwnT& own) {
    const default_execution_space space{};
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      (std::get<K>(slots).write(space, d, std::get<K>(exprs), std::get<K>(own)), ...);
    }(std::make_index_sequence<std::tuple_size_v<Slots>>{});
    space.fence();
  }
  template <bool Tuple, class Slots, class OwnV>
  static auto results(Slots& slots, std::vector<OwnV>& own) {
    auto all = [&]<std::size_t... K>(std::index_sequence<K...>) {
      return std::make_tuple(pick<K>(slots, own)...);
    }(std::make_index_sequence<std::tuple_size_v<Slots>>{});
    if constexpr (!Tuple) return std::get<0>(std::move(all));
    else return all;
  }
  template <std::size_t K, class Slots, class OwnV>
  static auto pick(Slots& slots, std::vector<OwnV>& own) {
    auto& slot = std::get<K>(slots);
    if constexpr (std::remove_cvref_t<decltype(slot)>::unstacked) return std::get<K>(own[0]);
    else return slot.out;
  }

  F f_;
  In in_;
  Out out_;
};

}  // namespace detail

// jax.pmap(f, axis_name="i", in_axes, out_axes):
//   kax::pmap<"i">(f)                                  every argument mapped along axis 0
//   kax::pmap<"i">(f, kax::in_axes(0, kax::none))       one entry per argument
//   kax::pmap<"i">(f, kax::out_axes(kax::none))         device 0's value (same on every device)
//   kax::pmap<"i">(f, kax::donate_argnums<0>)           argument 0's buffer may hold the result
// Returns a callable that runs f on every device and returns the results.
template <fixed_string Name, class F, class... Opt>
auto pmap(F f, Opt... opts) {
  static_assert(((detail::is_instance<in_axes_t, Opt>::value || detail::is_instance<out_axes_t, Opt>::value ||
                  detail::is_donation<Opt>::value) && ...),
                "kax::pmap: options are kax::in_axes(...), kax::out_axes(...) and kax::donate_argnums<i...>");
  auto in = detail::option_of<in_axes_t>(detail::all_leading_t{}, opts...);
  auto out = detail::option_of<out_axes_t>(detail::leading_axis_t{}, opts...);
  using Donate = decltype(detail::donation_of(opts...));
  return detail::pmapped<Name, F, decltype(in), decltype(out), Donate>(std::move(f), std::move(in), std::move(out));
}

}  // namespace kax
