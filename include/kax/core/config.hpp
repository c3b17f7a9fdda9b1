// kax/core/config.hpp — the one place kax includes Kokkos and papers over 3.4 vs 4.x differences.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <type_traits>

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
using host_execution_space = Kokkos::DefaultHostExecutionSpace;

// Where kax::Array allocates.  By default the default execution space's memory (device memory on
// a GPU build: read it on the host through kax::to_host).  With KAX_MANAGED_MEMORY=1 on a CUDA
// build, arrays live in CUDA managed memory (Kokkos::CudaUVMSpace): kernels still run on the GPU,
// and host code may also read and write elements directly (the test suite's mode; docs/backends.md).
#if defined(KAX_MANAGED_MEMORY) && KAX_MANAGED_MEMORY && defined(KOKKOS_ENABLE_CUDA)
using default_memory_space = Kokkos::CudaUVMSpace;
#else
using default_memory_space = Kokkos::DefaultExecutionSpace::memory_space;
#endif

namespace detail {
// True when kernels of ExecSpace run on the host (OpenMP, Serial, Threads): host kernels get
// chunked ranges with `omp simd` inner loops, kax's vectorizable math and Eigen's GEMM; others get
// one index per thread.  (Not the same as "the host may read kax's arrays": managed memory is
// host-accessible too.)
template <class ExecSpace>
inline constexpr bool runs_on_host = std::is_same_v<typename ExecSpace::memory_space, Kokkos::HostSpace>;
}  // namespace detail

// Whether the default execution space's kernels run on the host (detail::runs_on_host).
inline constexpr bool default_space_is_host = detail::runs_on_host<default_execution_space>;

}  // namespace kax
