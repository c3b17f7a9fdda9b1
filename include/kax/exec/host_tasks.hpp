// kax/exec/host_tasks.hpp — concurrent host-side work: oneTBB when kax is built with it
// (meson option `tbb`, which defines KAX_HAVE_TBB), plain std::thread otherwise.  pmap and
// shard_map run one program per host device through this; async dispatch will too.
#pragma once

#include <algorithm>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#if defined(KAX_HAVE_TBB)
#include <tbb/global_control.h>
#include <tbb/task_arena.h>
#include <tbb/task_group.h>
#endif

namespace kax::exec {

// Which engine run_tasks uses: "oneTBB" or "std::thread".
inline const char* host_task_engine() {
#if defined(KAX_HAVE_TBB)
  return "oneTBB";
#else
  return "std::thread";
#endif
}

// Runs f(0) ... f(n-1) concurrently and waits for all of them.  If tasks throw, the first
// exception (by completion) is rethrown after every task has finished.
template <class F>
void run_tasks(std::size_t n, F&& f) {
  if (n == 0) return;
  if (n == 1) {
    f(std::size_t{0});
    return;
  }
  std::exception_ptr first;
  std::mutex m;
  auto guarded = [&](std::size_t i) {
    try {
      f(i);
    } catch (...) {
      const std::lock_guard<std::mutex> lock(m);
      if (!first) first = std::current_exception();
    }
  };
#if defined(KAX_HAVE_TBB)
  // An arena as wide as the task count, and permission for that many threads: every task gets
  // a thread even on a machine with fewer cores, which programs that synchronize with each other
  // (collectives) need.  TBB otherwise caps workers at the core count.
  const auto width = static_cast<int>(n);
  const tbb::global_control allow(
      tbb::global_control::max_allowed_parallelism,
      std::max<std::size_t>(n, tbb::global_control::active_value(
                                   tbb::global_control::max_allowed_parallelism)));
  tbb::task_arena arena(width, /*reserved_for_masters=*/1);
  arena.execute([&] {
    tbb::task_group group;
    for (std::size_t i = 0; i < n; ++i) group.run([&guarded, i] { guarded(i); });
    group.wait();
  });
#else
  std::vector<std::thread> threads;
  threads.reserve(n - 1);
  for (std::size_t i = 1; i < n; ++i) threads.emplace_back(guarded, i);
  guarded(0);
  for (auto& t : threads) t.join();
#endif
  if (first) std::rethrow_exception(first);
}

}  // namespace kax::exec
