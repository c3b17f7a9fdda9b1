// The test runner: Kokkos is initialized once for the whole process (Catch2 v2 main).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "kax/core/scope_guard.hpp"

int main(int argc, char* argv[]) {
  kax::ScopeGuard guard(argc, argv);
  return Catch::Session().run(argc, argv);
}
