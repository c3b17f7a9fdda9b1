#!/usr/bin/env bash
# Sets everything up and runs kax's flagship example (README):
# scripts/setup.sh, then build/ configured with kokkos=openmp, then build/examples/vmap_batching
# (the seed's batched workload: vmap of `dot(x, w) + sin(x)`, with the plan kax makes for it).
#
#   scripts/run-example.sh [arguments for the example]
#   KAX_EXAMPLE=name    another program of examples/ (reductions, elementwise, attention, eigen_interop, ...)
#   OMP_NUM_THREADS=n   threads (default: all cores)
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh >/dev/null
if [ -f build/meson-private/coredata.dat ]; then
  meson setup --reconfigure build -Dkokkos=openmp >/dev/null
else
  rm -rf build
  meson setup build -Dkokkos=openmp >/dev/null
fi
example=${KAX_EXAMPLE:-vmap_batching}
ninja -C build -j"${KAX_JOBS:-$(nproc)}" "examples/$example" >&2

# Kokkos' OpenMP backend wants threads bound; these are its recommended settings.
export OMP_PROC_BIND=${OMP_PROC_BIND:-spread} OMP_PLACES=${OMP_PLACES:-threads}
exec "build/examples/$example" "$@"
