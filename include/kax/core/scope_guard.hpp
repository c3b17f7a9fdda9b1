// kax/core/scope_guard.hpp — brings Kokkos (and later MPI) up for a scope and down after it.
#pragma once

#include "kax/core/config.hpp"

namespace kax {

// Initializes Kokkos unless it already is (then leaves it to its owner), finalizes on scope exit
// if it initialized.  Kokkos' own command-line flags are honoured and removed from argv
// (--kokkos-threads=2 in Kokkos 3.4; --kokkos-num-threads=2 from 3.7).
class ScopeGuard {
 public:
  ScopeGuard() {
    if (!Kokkos::is_initialized()) {
      Kokkos::initialize();
      owns_ = true;
    }
  }
  ScopeGuard(int& argc, char* argv[]) {
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
};

}  // namespace kax
