// kax/parallel/devices.hpp — the device model: kax::devices(), local_device_count(),
// process_index(), process_count(), and kax::initialize({.host_devices = N}).
//
// On a host build (Kokkos OpenMP/Serial) a process has N virtual host devices, as JAX's
// --xla_force_host_platform_device_count gives: N from kax::initialize({.host_devices = N}), else
// the environment variable KAX_HOST_DEVICES, else 1.  pmap runs one program per device, each on a
// oneTBB task of its own (exec/host_tasks.hpp), so devices really run concurrently, each with its
// share of the cores.  On a GPU build (the default memory space is not host memory) a process has
// one device, the Kokkos device.  With MPI (kax/parallel/mpi.hpp), the global device list spans
// the ranks: device ids are process_index * local_device_count + local id, as in multi-process
// JAX.
#pragma once

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "kax/core/config.hpp"
#include "kax/core/errors.hpp"

namespace kax {

// What kax::initialize accepts.  Zero means "not given": the environment or the default decides.
struct initialize_options {
  int host_devices = 0;                            // KAX_HOST_DEVICES, default 1
  std::chrono::milliseconds collective_timeout{0};  // KAX_COLLECTIVE_TIMEOUT (seconds), default 60 s
};

// One device of the global device list.
struct Device {
  int id = 0;             // global id: process_index * local_device_count + local_id
  int process_index = 0;  // the process (MPI rank) that owns it
  int local_id = 0;       // its index among its process's devices
  const char* platform = "cpu";

  // JAX's spelling: "CpuDevice(id=0)", "CudaDevice(id=0)".
  std::string to_string() const {
    const std::string kind = std::string(platform) == "cpu" ? "CpuDevice" : std::string(platform) == "cuda" ? "CudaDevice"
                                                                                                           : "GpuDevice";
    return kind + "(id=" + std::to_string(id) + ")";
  }
  friend bool operator==(const Device& a, const Device& b) { return a.id == b.id; }
};

namespace detail {

// Process-wide settings, fixed on first use (or by kax::initialize before it).
struct runtime_state {
  std::mutex m;
  bool frozen = false;  // read by someone: later initialize calls may not change it
  int host_devices = 0;
  std::chrono::milliseconds timeout{0};
  int process_index = 0;  // set by the MPI layer
  int process_count = 1;
};

inline runtime_state& runtime() {
  static runtime_state s;
  return s;
}

inline int env_int(const char* name, int fallback, const char* what) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (*end != '\0' || n < 1 || n > 4096)
    throw error(std::string("kax: ") + name + "=" + v + " is not a valid " + what + " (a positive integer)");
  return static_cast<int>(n);
}

// Whether Views may be shared between threads.  A Kokkos built with no parallel host backend
// (Serial only, as Debian's libtrilinos-kokkos-dev) counts View references without atomics
// (KOKKOS_INTERNAL_NOT_PARALLEL in 3.x, KOKKOS_ENABLE_ATOMICS_BYPASS in 4.x), so host devices,
// which run concurrently and share arrays, are not available there.
#if defined(KOKKOS_INTERNAL_NOT_PARALLEL) || defined(KOKKOS_ENABLE_ATOMICS_BYPASS)
inline constexpr bool kokkos_thread_safe = false;
#else
inline constexpr bool kokkos_thread_safe = true;
#endif

inline void freeze_locked(runtime_state& s) {
  if (s.frozen) return;
  if (s.host_devices == 0) s.host_devices = env_int("KAX_HOST_DEVICES", 1, "number of host devices");
  if (!kokkos_thread_safe && s.host_devices > 1) {
    std::fprintf(stderr,
                 "kax: %d host devices requested, using 1: this Kokkos build has no parallel host backend "
                 "(Serial only), so its View reference counts are not thread-safe and devices cannot run "
                 "concurrently; use a Kokkos with OpenMP or Threads\n",
                 s.host_devices);
    s.host_devices = 1;
  }
  if (s.timeout.count() == 0)
    s.timeout = std::chrono::seconds(env_int("KAX_COLLECTIVE_TIMEOUT", 60, "collective timeout in seconds"));
  s.frozen = true;
}

inline const runtime_state& settings() {
  runtime_state& s = runtime();
  const std::lock_guard<std::mutex> lock(s.m);
  freeze_locked(s);
  return s;
}

inline constexpr bool host_devices_build = default_space_is_host;

inline const char* platform_name() {
#if defined(KOKKOS_ENABLE_CUDA)
  if constexpr (!host_devices_build) return "cuda";
#elif defined(KOKKOS_ENABLE_HIP)
  if constexpr (!host_devices_build) return "rocm";
#endif
  return host_devices_build ? "cpu" : "gpu";
}

}  // namespace detail

// Sets the number of host devices and the collective timeout for this process.  Call it before
// the first use of devices (pmap, kax::devices()); a later call that would change them throws.
inline void initialize(const initialize_options& options) {
  detail::runtime_state& s = detail::runtime();
  const std::lock_guard<std::mutex> lock(s.m);
  if (options.host_devices < 0) throw error("kax::initialize: host_devices must be positive");
  if (s.frozen) {
    const bool same_devices = options.host_devices == 0 || options.host_devices == s.host_devices;
    const bool same_timeout = options.collective_timeout.count() == 0 || options.collective_timeout == s.timeout;
    if (!same_devices || !same_timeout)
      throw error("kax::initialize: the device configuration is already fixed (" + std::to_string(s.host_devices) +
                  " host devices); call kax::initialize before the first pmap or kax::devices()");
    return;
  }
  if (options.host_devices > 0) s.host_devices = options.host_devices;
  if (options.collective_timeout.count() > 0) s.timeout = options.collective_timeout;
}

// Devices of this process (JAX: jax.local_device_count()).
inline int local_device_count() {
  return detail::host_devices_build ? detail::settings().host_devices : 1;
}
// This process's index and the number of processes (MPI ranks; 0 and 1 without MPI).
inline int process_index() { return detail::settings().process_index; }
inline int process_count() { return detail::settings().process_count; }
// All devices of all processes (jax.devices()), ordered by id.
inline int device_count() { return local_device_count() * process_count(); }

inline std::vector<Device> devices() {
  std::vector<Device> out;
  const int local = local_device_count();
  for (int p = 0; p < process_count(); ++p)
    for (int d = 0; d < local; ++d) out.push_back({p * local + d, p, d, detail::platform_name()});
  return out;
}
// This process's devices (jax.local_devices()).
inline std::vector<Device> local_devices() {
  std::vector<Device> out;
  const int local = local_device_count();
  const int p = process_index();
  for (int d = 0; d < local; ++d) out.push_back({p * local + d, p, d, detail::platform_name()});
  return out;
}

// How long a collective waits for the other devices before it gives up with kax::collective_timeout.
inline std::chrono::milliseconds collective_timeout_limit() { return detail::settings().timeout; }

}  // namespace kax
