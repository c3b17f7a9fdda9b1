// kax/core/factories.hpp — zeros, ones, full, empty, arange, from, copy (jnp's constructors).
#pragma once

#include <algorithm>
#include <cmath>
#include <concepts>
#include <string>
#include <vector>

#include "kax/core/array.hpp"

namespace kax {

namespace detail {

template <element_dtype T, std::size_t R, class M = default_memory_space>
Array<T, R, M> uninitialized(const shape<R>& s, const char* label = "kax::Array") {
  using V = typename Array<T, R, M>::view_type;
  return Array<T, R, M>(make_view<V, R>(label, s, false, std::make_index_sequence<R>{}));
}

}  // namespace detail

// jnp.full(shape, value)
template <dtype T, std::size_t R>
Array<T, R> full(const shape<R>& s, T value) {
  auto a = detail::uninitialized<T, R>(s);
  Kokkos::deep_copy(a.view(), value);
  return a;
}

// jnp.zeros(shape): zeros<float>(B, D) or zeros<float>(shape<2>{B, D}).
template <dtype T, std::size_t R>
Array<T, R> zeros(const shape<R>& s) {
  return full<T, R>(s, T(0));
}
template <dtype T, std::integral... I>
Array<T, sizeof...(I)> zeros(I... extents) {
  return zeros<T, sizeof...(I)>(shape<sizeof...(I)>{static_cast<std::size_t>(extents)...});
}

// jnp.ones(shape)
template <dtype T, std::size_t R>
Array<T, R> ones(const shape<R>& s) {
  return full<T, R>(s, T(1));
}
template <dtype T, std::integral... I>
Array<T, sizeof...(I)> ones(I... extents) {
  return ones<T, sizeof...(I)>(shape<sizeof...(I)>{static_cast<std::size_t>(extents)...});
}

// jnp.empty(shape): contents unspecified (no initialization kernel).
template <dtype T, std::size_t R>
Array<T, R> empty(const shape<R>& s) {
  return detail::uninitialized<T, R>(s);
}
template <dtype T, std::integral... I>
Array<T, sizeof...(I)> empty(I... extents) {
  return empty<T, sizeof...(I)>(shape<sizeof...(I)>{static_cast<std::size_t>(extents)...});
}

// An array holding a copy of host data in row-major order; the vector's size must match.
template <dtype T, std::size_t R>
Array<T, R> from(const std::vector<T>& values, const shape<R>& s) {
  if (values.size() != size_of(s))
    throw shape_error("kax::from: " + std::to_string(values.size()) +
                      " values cannot fill an array of shape " + shape_string(s));
  auto a = detail::uninitialized<T, R>(s);
  // vector<bool> has no data(): go through a plain buffer.
  std::vector<std::conditional_t<std::same_as<T, bool>, char, T>> buffer(values.begin(), values.end());
  using host_view = Kokkos::View<typename detail::view_data<T, R>::type, Kokkos::LayoutRight,
                                 Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  const host_view src = detail::wrap_pointer<host_view, T, R>(
      reinterpret_cast<T*>(buffer.data()), s, std::make_index_sequence<R>{});
  Kokkos::deep_copy(a.view(), src);
  return a;
}

// A rank-1 array holding a copy of `values`.
template <dtype T>
Array<T, 1> from(const std::vector<T>& values) {
  return from<T, 1>(values, shape<1>{values.size()});
}

// jnp.arange(start, stop, step): evenly spaced values in [start, stop).
template <dtype T>
Array<T, 1> arange(T start, T stop, T step = T(1)) {
  if (step == T(0)) throw shape_error("kax::arange: step must not be zero");
  const double count = std::ceil((static_cast<double>(stop) - static_cast<double>(start)) /
                                 static_cast<double>(step));
  const std::size_t n = count > 0 ? static_cast<std::size_t>(count) : 0;
  auto a = detail::uninitialized<T, 1>(shape<1>{n});
  const auto v = a.view();
  Kokkos::parallel_for(
      "kax::arange", Kokkos::RangePolicy<default_execution_space, Kokkos::IndexType<std::int64_t>>(
                         0, static_cast<std::int64_t>(n)),
      KOKKOS_LAMBDA(const std::int64_t i) { v(i) = static_cast<T>(start + static_cast<T>(i) * step); });
  return a;
}

// jnp.arange(stop)
template <dtype T>
Array<T, 1> arange(T stop) {
  return arange<T>(T(0), stop, T(1));
}

// An independent copy (same memory space): jnp.array(x, copy=True).
template <dtype T, std::size_t R, class M>
Array<T, R, M> copy(const Array<T, R, M>& a) {
  auto out = detail::uninitialized<T, R, M>(a.extents());
  Kokkos::deep_copy(out.view(), a.view());
  return out;
}

}  // namespace kax
