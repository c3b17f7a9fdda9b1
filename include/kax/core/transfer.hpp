// kax/core/transfer.hpp — moving arrays between device and host memory.
#pragma once

#include <vector>

#include "kax/core/array.hpp"
#include "kax/core/factories.hpp"

namespace kax {

// A host-accessible array with a's values (jax.device_get).  Shares the buffer when a already
// lives in host-accessible memory; otherwise copies (and waits for pending kernels).
template <element_dtype T, std::size_t R, class M>
Array<T, R, Kokkos::HostSpace> to_host(const Array<T, R, M>& a) {
  if constexpr (std::is_same_v<M, Kokkos::HostSpace>) {
    return a;
  } else {
    auto out = detail::uninitialized<T, R, Kokkos::HostSpace>(a.extents(), "kax::to_host");
    Kokkos::deep_copy(out.view(), a.view());
    return out;
  }
}

// jax.device_get
template <element_dtype T, std::size_t R, class M>
Array<T, R, Kokkos::HostSpace> device_get(const Array<T, R, M>& a) {
  return to_host(a);
}

// An array in the default (device) memory space with a's values (jax.device_put(x)).
template <element_dtype T, std::size_t R, class M>
Array<T, R> device_put(const Array<T, R, M>& a) {
  if constexpr (std::is_same_v<M, default_memory_space>) {
    return a;
  } else {
    auto out = detail::uninitialized<T, R>(a.extents(), "kax::device_put");
    Kokkos::deep_copy(out.view(), a.view());
    return out;
  }
}

// The values in row-major order, on the host.
template <element_dtype T, std::size_t R, class M>
std::vector<T> to_vector(const Array<T, R, M>& a) {
  const auto h = to_host(a);
  Kokkos::fence();
  std::vector<T> out(h.size());
  const T* p = h.data();
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = p[i];
  return out;
}

}  // namespace kax
