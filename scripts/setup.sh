#!/usr/bin/env bash
# Installs everything kax needs on Debian 12 and builds Kokkos 3.4.01 (OpenMP + Serial) from
# Debian's trilinos source package into a cached prefix. Idempotent: a second run takes seconds.
#
#   scripts/setup.sh            apt packages + Kokkos OpenMP build
#   scripts/setup.sh --cuda     the same, then Kokkos 3.4.01 with CUDA (+ OpenMP + Serial) built with
#                               nvcc from $CUDA_HOME (default /usr/local/cuda) for KAX_CUDA_ARCH
#                               (a Kokkos 3.4 arch option, default AMPERE80: sm_80 code, whose PTX
#                               also runs on Hopper); prints that prefix instead
#   KAX_CACHE=dir               where the Kokkos prefix and the private apt state live
#                               (default ~/.cache/kax)
# Prints the Kokkos prefix on its last line of stdout, for `meson setup -Dkokkos_prefix=...`.
set -euo pipefail

cache=${KAX_CACHE:-$HOME/.cache/kax}
prefix=$cache/kokkos-3.4.01-openmp
cuda_prefix=$cache/kokkos-3.4.01-cuda
log() { echo "[kax setup] $*" >&2; }
want_cuda=0
[ "${1:-}" = --cuda ] && want_cuda=1

packages=(meson ninja-build pkg-config cmake g++ clang libeigen3-dev libtbb-dev catch2
          libbenchmark-dev libomp-dev libopenmpi-dev openmpi-bin libtrilinos-kokkos-dev python3-numpy
          dpkg-dev xz-utils)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  log "installing: ${missing[*]}"
  sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
fi

# The Kokkos source: packages/kokkos of Debian's trilinos source package (Kokkos 3.4.01), fetched
# with a private apt configuration holding a deb-src line, so the machine's own sources stay
# untouched.
fetch_kokkos_source() {
  local apt_dir=$cache/apt
  mkdir -p "$apt_dir/lists/partial" "$apt_dir/archives/partial" "$cache/src"
  echo "deb-src http://deb.debian.org/debian bookworm main" > "$apt_dir/sources.list"
  local apt_opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
                  -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache::Archives=$apt_dir/archives"
                  -o "APT::Sandbox::User=root" -q)
  cd "$cache/src"
  if ! ls trilinos_*.orig.tar.* >/dev/null 2>&1; then
    log "fetching Debian's trilinos source package"
    apt-get "${apt_opts[@]}" update >&2
    apt-get "${apt_opts[@]}" source --download-only trilinos >&2
  fi
  local tarball
  tarball=$(ls trilinos_*.orig.tar.* | head -n1)
  if [ ! -f kokkos/CMakeLists.txt ]; then
    log "extracting packages/kokkos from $tarball"
    rm -rf kokkos extract && mkdir extract
    tar -xf "$tarball" -C extract --wildcards '*/packages/kokkos/*'
    mv extract/*/packages/kokkos kokkos && rm -rf extract
  fi
}

# install_kokkos SRC BUILD PREFIX CMAKE_ARGS...: configures (Release, C++17, PIC, no tests or
# examples), builds and installs the Kokkos in SRC into PREFIX, marks PREFIX complete and removes
# the build directory.  Runs in $cache/src.
install_kokkos() {
  local src=$1 build=$2 dest=$3; shift 3
  rm -rf "$build"
  cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_STANDARD=17 \
    -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DCMAKE_INSTALL_PREFIX="$dest" \
    -DKokkos_ENABLE_TESTS=OFF -DKokkos_ENABLE_EXAMPLES=OFF "$@" >&2
  cmake --build "$build" -j"$(nproc)" >&2
  cmake --install "$build" >&2
  touch "$dest/.kax-complete"
  rm -rf "$build"
}

build_openmp() {
  fetch_kokkos_source
  log "building Kokkos with OpenMP + Serial into $prefix"
  install_kokkos kokkos build-openmp "$prefix" -DCMAKE_CXX_COMPILER=g++ \
    -DKokkos_ENABLE_OPENMP=ON -DKokkos_ENABLE_SERIAL=ON
  log "Kokkos (OpenMP) installed at $prefix"
}

# Kokkos 3.4.01 predates CUDA 12 and 13 and Hopper.  Four source changes make it build and serve C++20 with
# nvcc 13 (applied to a copy, kokkos-cuda/; docs/backends.md lists them):
#  1. bin/nvcc_wrapper: the default architecture sm_35 (removed from nvcc 12) becomes sm_80, and
#     -std=c++20 is passed to nvcc (3.4's wrapper only knows up to c++17 and would silently
#     compile device code as C++17).
#  2. Kokkos_Cuda_Half.hpp: cuda_fp16.h's conversions no longer accept half_t through its explicit
#     operator __half, and __half2double is gone: cast explicitly, go through float.
#  3. Kokkos_CudaSpace.cpp: cudaMemPrefetchAsync takes a cudaMemLocation and flags since CUDA 13.
#  4. Kokkos_Cuda_Instance.cpp: Cuda::initialize aborts unless the GPU's compute capability has the
#     major version the kernels were compiled for; sm_80 PTX (which nvcc embeds beside the sm_80
#     code) runs on newer GPUs through the driver's JIT, so only an older GPU is refused now (a
#     newer one gets Kokkos' existing "may reduce performance" warning).
patch_kokkos_for_cuda() {
  local src=$1
  sed -i 's/^default_arch="sm_35"/default_arch="sm_80"/' "$src/bin/nvcc_wrapper"
  sed -i 's/^  --std=c++11|-std=c++11|--std=c++14|-std=c++14)$/  --std=c++11|-std=c++11|--std=c++14|-std=c++14|--std=c++20|-std=c++20)/' \
    "$src/bin/nvcc_wrapper"
  sed -i -E 's/return __half2double\(val\);/return static_cast<double>(__half2float(static_cast<__half>(val)));/;
             s/return (__half2[a-z_]+)\(val\);/return \1(static_cast<__half>(val));/' \
    "$src/core/src/Cuda/Kokkos_Cuda_Half.hpp"
  python3 - "$src/core/src/Cuda/Kokkos_CudaSpace.cpp" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
old = """    CUDA_SAFE_CALL(cudaMemPrefetchAsync(ptr, bytes, space.cuda_device(),
                                        space.cuda_stream()));"""
new = """#if CUDA_VERSION >= 13000
    cudaMemLocation location{};
    location.type = cudaMemLocationTypeDevice;
    location.id   = space.cuda_device();
    CUDA_SAFE_CALL(
        cudaMemPrefetchAsync(ptr, bytes, location, 0, space.cuda_stream()));
#else
    CUDA_SAFE_CALL(cudaMemPrefetchAsync(ptr, bytes, space.cuda_device(),
                                        space.cuda_stream()));
#endif"""
assert old in s, "Kokkos_CudaSpace.cpp: the cudaMemPrefetchAsync call to patch is not there"
open(p, "w").write(s.replace(old, new))
PY
  python3 - "$src/core/src/Cuda/Kokkos_Cuda_Instance.cpp" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
old = "    if (compiled_major != cudaProp.major || compiled_minor > cudaProp.minor) {"
new = ("    if (compiled_major > cudaProp.major ||\n"
       "        (compiled_major == cudaProp.major && compiled_minor > cudaProp.minor)) {")
assert old in s, "Kokkos_Cuda_Instance.cpp: the compute capability check to patch is not there"
open(p, "w").write(s.replace(old, new))
PY
  grep -q 'default_arch="sm_80"' "$src/bin/nvcc_wrapper"
  grep -q -- '-std=c++20)' "$src/bin/nvcc_wrapper"
}

build_cuda() {
  local cuda_home=${CUDA_HOME:-/usr/local/cuda} arch=${KAX_CUDA_ARCH:-AMPERE80}
  if [ ! -x "$cuda_home/bin/nvcc" ]; then
    log "no nvcc at $cuda_home/bin/nvcc (set CUDA_HOME): cannot build Kokkos' CUDA backend"
    exit 1
  fi
  fetch_kokkos_source
  log "building Kokkos with CUDA ($arch) + OpenMP + Serial into $cuda_prefix"
  rm -rf kokkos-cuda build-cuda
  cp -r kokkos kokkos-cuda
  patch_kokkos_for_cuda "$PWD/kokkos-cuda"
  PATH=$cuda_home/bin:$PATH install_kokkos kokkos-cuda build-cuda "$cuda_prefix" \
    -DCMAKE_CXX_COMPILER="$PWD/kokkos-cuda/bin/nvcc_wrapper" -DKokkos_ENABLE_CUDA=ON \
    -DKokkos_ENABLE_CUDA_LAMBDA=ON -DKokkos_ENABLE_OPENMP=ON -DKokkos_ENABLE_SERIAL=ON \
    "-DKokkos_ARCH_$arch=ON"
  log "Kokkos (CUDA) installed at $cuda_prefix"
}

if [ -f "$prefix/.kax-complete" ]; then
  log "Kokkos (OpenMP) cached at $prefix"
else
  (build_openmp)
fi
if ((want_cuda)); then
  if [ -f "$cuda_prefix/.kax-complete" ]; then
    log "Kokkos (CUDA) cached at $cuda_prefix"
  else
    (build_cuda)
  fi
  echo "$cuda_prefix"
else
  echo "$prefix"
fi
