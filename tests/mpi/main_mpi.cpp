// The runner of the MPI tests: MPI (via kax::ScopeGuard, built with KAX_HAVE_MPI) and Kokkos are
// initialized once per process; every rank runs every test case, since pmap's collectives need
// all ranks.  Each rank prints its own report; mpirun fails if any rank fails.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "kax/core/scope_guard.hpp"

int main(int argc, char* argv[]) {
  kax::ScopeGuard guard(argc, argv);
  return Catch::Session().run(argc, argv);
}
