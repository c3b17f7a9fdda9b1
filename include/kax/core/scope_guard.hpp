// kax/core/scope_guard.hpp — brings Kokkos (and MPI, in builds with KAX_HAVE_MPI) up for a scope
// and down after it.
#pragma once

#include <optional>

#include "kax/core/config.hpp"
#include "kax/core/detail/host_allocator.hpp"
#if defined(KAX_HAVE_MPI)
#include "kax/parallel/mpi.hpp"
#endif

namespace kax {

// Initializes Kokkos unless it already is (then leaves it to its owner), finalizes on scope exit
// if it initialized; keeps freed host buffers for reuse (detail/host_allocator.hpp).  Kokkos' own command-line flags are honoured and removed from argv
// (--kokkos-threads=2 in Kokkos 3.4; --kokkos-num-threads=2 from 3.7).
class ScopeGuard {
 public:
  ScopeGuard() {
#if defined(KAX_HAVE_MPI)
    mpi_.emplace(nullptr, nullptr);
#endif
    detail::tune_host_allocator();
    if (!Kokkos::is_initialized()) {
      Kokkos::initialize();
      owns_ = true;
    }
  }
  ScopeGuard(int& argc, char* argv[]) {
#if defined(KAX_HAVE_MPI)
    mpi_.emplace(&argc, &argv);
#endif
    detail::tune_host_allocator();
    if (!Kokkos::is_initialized()) {
      Kokkos::initialize(argc, argv);
      owns_ = true;
    }
  }
  ~ScopeGuard() {
    if (owns_ && Kokkos::is_initialized()) Kokkos::finalize();
  }
  ScopeGuard(const ScopeGuard&) = delete;
  ScopeGuard& operator=(const ScopeGuard&) = delete;

 private:
  bool owns_ = false;
#if defined(KAX_HAVE_MPI)
  std::optional<detail::mpi_session> mpi_;  // declared last: MPI goes down after Kokkos
#endif
};

}  // namespace kax
