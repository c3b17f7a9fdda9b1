#!/usr/bin/env bash
# Sets everything up and runs kax's full test suite (README; .ci/run calls this):
# Debian packages and the OpenMP Kokkos (scripts/setup.sh), then build/ configured with
# kokkos=openmp and MPI, everything built (library checks, tests, examples, benchmarks), `meson test`.
# The last line of output is `N passed, N failed`; the exit status is non-zero on any failure.
#
#   scripts/test.sh [meson test options, e.g. --suite expr]
#   KAX_JOBS=n   parallel compile jobs (default: the number of cores)
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh >/dev/null
exec bash scripts/build-and-test.sh build -Dkokkos=openmp -Dmpi=enabled -- "$@"
