// kax/exec/spaces.hpp — which execution space runs a kernel, and whether it runs on the host.
#pragma once

#include <type_traits>

#include "kax/core/config.hpp"

namespace kax::detail {

// Host spaces (OpenMP, Serial, Threads) get chunked, `omp simd` kernels; others one index per thread.
template <class ExecSpace>
inline constexpr bool runs_on_host =
    std::is_same_v<typename ExecSpace::memory_space, Kokkos::HostSpace>;

// The execution space that can write memory of `MemorySpace` (default space, else the host's).
template <class MemorySpace>
using exec_space_for = std::conditional_t<
    Kokkos::SpaceAccessibility<default_execution_space, MemorySpace>::accessible,
    default_execution_space, host_execution_space>;

}  // namespace kax::detail
