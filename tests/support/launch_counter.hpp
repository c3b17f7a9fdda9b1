// tests/support/launch_counter.hpp — counts Kokkos kernel launches and allocations through Kokkos
// Tools callbacks while alive (how the tests prove fusion and staging), and restores "no tools"
// on destruction so that other tests run without them.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <Kokkos_Core.hpp>

namespace kax_test {

class launch_counter {
 public:
  launch_counter() {
    kernels = 0;
    allocations = 0;
    bytes = 0;
    labels.clear();
    Kokkos::Tools::Experimental::set_begin_parallel_for_callback(&on_launch);
    Kokkos::Tools::Experimental::set_begin_parallel_reduce_callback(&on_launch);
    Kokkos::Tools::Experimental::set_begin_parallel_scan_callback(&on_launch);
    Kokkos::Tools::Experimental::set_allocate_data_callback(&on_allocate);
  }
  ~launch_counter() {
    Kokkos::Tools::Experimental::set_begin_parallel_for_callback(nullptr);
    Kokkos::Tools::Experimental::set_begin_parallel_reduce_callback(nullptr);
    Kokkos::Tools::Experimental::set_begin_parallel_scan_callback(nullptr);
    Kokkos::Tools::Experimental::set_allocate_data_callback(nullptr);
  }
  launch_counter(const launch_counter&) = delete;
  launch_counter& operator=(const launch_counter&) = delete;

  static inline int kernels = 0;
  static inline int allocations = 0;
  static inline std::uint64_t bytes = 0;
  static inline std::vector<std::string> labels;

  // Every label launched so far, one per line (for failure messages).
  static std::string all() {
    std::string out = "kernels launched:";
    for (const auto& l : labels) out += "\n  " + l;
    return out;
  }
  static std::size_t count_prefix(const std::string& p) {
    return static_cast<std::size_t>(
        std::count_if(labels.begin(), labels.end(), [&](const std::string& s) { return s.rfind(p, 0) == 0; }));
  }
  static bool launched(const std::string& label) {
    return std::find(labels.begin(), labels.end(), label) != labels.end();
  }

 private:
  static void on_launch(const char* name, std::uint32_t, std::uint64_t*) {
    ++kernels;
    labels.emplace_back(name);
  }
  static void on_allocate(Kokkos_Profiling_SpaceHandle, const char*, const void*, std::uint64_t n) {
    ++allocations;
    bytes += n;
  }
};

inline bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace kax_test
