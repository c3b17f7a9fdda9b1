// kax/exec/host_tasks.hpp — concurrent host-side work: oneTBB when kax is built with it
// (meson option `tbb`, which defines KAX_HAVE_TBB), plain std::thread otherwise.  pmap and
// shard_map run one program per host device through this; async dispatch will too.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#if defined(KAX_HAVE_TBB)
#include <tbb/global_control.h>
#include <tbb/task_arena.h>
#endif

namespace kax::exec {

#if defined(KAX_HAVE_TBB)
namespace detail {

// One arena of n worker slots (none reserved for the calling thread) per task count, kept for the
// process: creating an arena and raising TBB's thread limit on every pmap call cost about as much
// as a small pmap.  The limit is raised to n + 1 threads (n workers and the waiting caller), so
// every task gets a thread even on a machine with fewer cores, which programs that synchronize
// with each other (collectives) need; TBB otherwise caps workers at the core count.  Only one
// limit is kept alive: TBB applies the smallest of all live max_allowed_parallelism limits.
inline tbb::task_arena& task_arena_for(std::size_t n) {
  static std::mutex m;
  static std::unique_ptr<tbb::global_control> limit;
  static std::vector<std::unique_ptr<tbb::task_arena>> arenas;
  const std::lock_guard<std::mutex> lock(m);
  if (arenas.size() <= n) arenas.resize(n + 1);
  if (!arenas[n]) {
    const std::size_t active = tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism);
    if (active < n + 1) {
      auto raised = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism, n + 1);
      limit = std::move(raised);  // the old, smaller limit goes only after the new one exists
    }
    arenas[n] = std::make_unique<tbb::task_arena>(static_cast<int>(n), /*reserved_for_masters=*/0);
  }
  return *arenas[n];
}

}  // namespace detail
#endif

// Which engine run_tasks uses: "oneTBB" or "std::thread".
inline const char* host_task_engine() {
#if defined(KAX_HAVE_TBB)
  return "oneTBB";
#else
  return "std::thread";
#endif
}

// Runs f(0) ... f(n-1) concurrently, each on a thread of its own, and waits for all of them.  If
// tasks throw, the first exception (by completion) is rethrown after every task has finished.
// With n > 1 the calling thread only waits: it is Kokkos' OpenMP master, and kernels it launched
// would use the whole OpenMP pool beside the other tasks' threads (oversubscribing the cores),
// while a kernel launched from another thread runs on that thread alone.
template <class F>
void run_tasks(std::size_t n, F&& f) {
  if (n == 0) return;
  if (n == 1) {
    f(std::size_t{0});
    return;
  }
  std::exception_ptr first;
  std::mutex m;
  std::condition_variable done_cv;
  std::size_t done = 0;
  auto guarded = [&](std::size_t i) {
    try {
      f(i);
    } catch (...) {
      const std::lock_guard<std::mutex> lock(m);
      if (!first) first = std::current_exception();
    }
    const std::lock_guard<std::mutex> lock(m);
    if (++done == n) done_cv.notify_all();
  };
#if defined(KAX_HAVE_TBB)
  tbb::task_arena& arena = detail::task_arena_for(n);
  for (std::size_t i = 0; i < n; ++i) arena.enqueue([&guarded, i] { guarded(i); });
  {
    std::unique_lock<std::mutex> lock(m);
    done_cv.wait(lock, [&] { return done == n; });
  }
#else
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (std::size_t i = 0; i < n; ++i) threads.emplace_back(guarded, i);
  for (auto& t : threads) t.join();
#endif
  if (first) std::rethrow_exception(first);
}

}  // namespace kax::exec
