// kax/core/detail/huge_pages.hpp — asks Linux for transparent huge pages on large host buffers.
//
// glibc serves allocations of 32 MiB and more with a fresh mmap each time, so every new large
// Array (an evaluation's output, a pmap result, a stage buffer) page-faults on first touch, 4 KiB
// at a time: writing a new (2, 2^22) float array took 9 ms against 0.8 ms for a reused one.
// With transparent huge pages in `madvise` mode (Debian's default), MADV_HUGEPAGE on the buffer
// before its first touch cuts that about 3x (7.4 -> 2.4 ms measured).  It is a hint: errors are
// ignored, and nothing happens elsewhere.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace kax::detail {

inline constexpr std::size_t huge_page_hint_bytes = std::size_t{4} << 20;

inline void advise_huge_pages([[maybe_unused]] void* data, [[maybe_unused]] std::size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (data == nullptr || bytes < huge_page_hint_bytes) return;
  const auto begin = (reinterpret_cast<std::uintptr_t>(data) + 4095) & ~std::uintptr_t{4095};
  const auto end = (reinterpret_cast<std::uintptr_t>(data) + bytes) & ~std::uintptr_t{4095};
  if (end > begin) (void)madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#endif
}

}  // namespace kax::detail
