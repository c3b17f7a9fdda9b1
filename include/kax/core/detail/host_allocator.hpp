// kax/core/detail/host_allocator.hpp — keeps freed host buffers in the process for reuse.
//
// kax evaluations allocate their temporaries (stage buffers, kax::grad's cotangents and
// gradients) per call, as jax.Array results are.  With glibc's defaults, buffers over the dynamic
// mmap threshold are mmapped and unmapped per call, and freed heap tops are trimmed, so every
// training step faults its ~14 MB of temporaries in again: measured at 19% of a 3-layer MLP step
// and 2x its backward pass.  ScopeGuard therefore raises glibc's mmap threshold to its maximum
// (32 MiB on 64-bit) and the trim threshold to 512 MiB: freed buffers stay in malloc's heap and the
// next step reuses them, as XLA's caching allocator reuses device memory.  KAX_MALLOC_TUNING=0
// leaves malloc as it is (for programs that tune it themselves).
#pragma once

#include <cstdlib>
#include <cstring>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace kax::detail {

inline void tune_host_allocator() {
#if defined(__GLIBC__)
  const char* env = std::getenv("KAX_MALLOC_TUNING");
  if (env != nullptr && std::strcmp(env, "0") == 0) return;
  mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
  mallopt(M_TRIM_THRESHOLD, 512 * 1024 * 1024);
#endif
}

}  // namespace kax::detail
