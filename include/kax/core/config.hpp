// kax/core/config.hpp — the one place kax includes Kokkos and papers over 3.4 vs 4.x differences.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>

#ifndef KOKKOS_VERSION
#error "kax: Kokkos_Core.hpp did not define KOKKOS_VERSION"
#endif
static_assert(KOKKOS_VERSION >= 30400, "kax: needs Kokkos 3.4 or newer");

namespace kax {

// Kokkos moved the math functions from Kokkos::Experimental to Kokkos in 3.7.
#if KOKKOS_VERSION >= 30700
namespace kmath = ::Kokkos;
#else
namespace kmath = ::Kokkos::Experimental;
#endif

using default_execution_space = Kokkos::DefaultExecutionSpace;
using default_memory_space = Kokkos::DefaultExecutionSpace::memory_space;
using host_execution_space = Kokkos::DefaultHostExecutionSpace;

// True when kernels of the default execution space run on the host (OpenMP, Serial, Threads):
// host kernels get `omp simd` inner loops and kax's vectorizable math.
inline constexpr bool default_space_is_host =
    Kokkos::SpaceAccessibility<Kokkos::HostSpace, default_memory_space>::accessible;

}  // namespace kax
