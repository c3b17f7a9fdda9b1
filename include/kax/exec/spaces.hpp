// kax/exec/spaces.hpp — which execution space runs a kernel, and whether it runs on the host.
#pragma once

#include <type_traits>

#include "kax/core/config.hpp"

namespace kax::detail {

// runs_on_host<ExecSpace> (host spaces get chunked, `omp simd` kernels) is in core/config.hpp.

// The execution space that can write memory of `MemorySpace` (default space, else the host's).
template <class MemorySpace>
using exec_space_for = std::conditional_t<
    Kokkos::SpaceAccessibility<default_execution_space, MemorySpace>::accessible,
    default_execution_space, host_execution_space>;

}  // namespace kax::detail
