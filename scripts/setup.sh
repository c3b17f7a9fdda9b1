#!/usr/bin/env bash
# Installs everything kax needs on Debian 12 and builds Kokkos 3.4.01 (OpenMP + Serial) from
# Debian's trilinos source package into a cached prefix. Idempotent: a second run takes seconds.
#
#   scripts/setup.sh            apt packages + Kokkos OpenMP build
#   KAX_CACHE=dir               where the Kokkos prefix and the private apt state live
#                               (default ~/.cache/kax)
# Prints the Kokkos prefix on its last line of stdout, for `meson setup -Dkokkos_prefix=...`.
set -euo pipefail

cache=${KAX_CACHE:-$HOME/.cache/kax}
prefix=$cache/kokkos-3.4.01-openmp
log() { echo "[kax setup] $*" >&2; }

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

if [ -f "$prefix/.kax-complete" ]; then
  log "Kokkos (OpenMP) cached at $prefix"
  echo "$prefix"
  exit 0
fi

# A private apt configuration with a deb-src line, so the machine's own sources stay untouched.
apt_dir=$cache/apt
mkdir -p "$apt_dir/lists/partial" "$apt_dir/archives/partial" "$cache/src"
echo "deb-src http://deb.debian.org/debian bookworm main" > "$apt_dir/sources.list"
apt_opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
          -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache::Archives=$apt_dir/archives"
          -o "APT::Sandbox::User=root" -q)
cd "$cache/src"
if ! ls trilinos_*.orig.tar.* >/dev/null 2>&1; then
  log "fetching Debian's trilinos source package"
  apt-get "${apt_opts[@]}" update >&2
  apt-get "${apt_opts[@]}" source --download-only trilinos >&2
fi
tarball=$(ls trilinos_*.orig.tar.* | head -n1)
if [ ! -f kokkos/CMakeLists.txt ]; then
  log "extracting packages/kokkos from $tarball"
  rm -rf kokkos extract && mkdir extract
  tar -xf "$tarball" -C extract --wildcards '*/packages/kokkos/*'
  mv extract/*/packages/kokkos kokkos && rm -rf extract
fi

log "building Kokkos with OpenMP + Serial into $prefix"
rm -rf build-openmp
cmake -S kokkos -B build-openmp -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_COMPILER=g++ -DCMAKE_CXX_STANDARD=17 -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
  -DCMAKE_INSTALL_PREFIX="$prefix" -DKokkos_ENABLE_OPENMP=ON -DKokkos_ENABLE_SERIAL=ON \
  -DKokkos_ENABLE_TESTS=OFF -DKokkos_ENABLE_EXAMPLES=OFF >&2
cmake --build build-openmp -j"$(nproc)" >&2
cmake --install build-openmp >&2
touch "$prefix/.kax-complete"
rm -rf build-openmp
log "Kokkos (OpenMP) installed at $prefix"
echo "$prefix"
