#include <catch2/catch.hpp>

#include <atomic>
#include <barrier>
#include <stdexcept>
#include <vector>

#include "kax/exec/host_tasks.hpp"

TEST_CASE("run_tasks runs every task exactly once", "[exec]") {
  for (std::size_t n : {0u, 1u, 2u, 4u, 9u}) {
    std::vector<std::atomic<int>> hits(n);
    kax::exec::run_tasks(n, [&](std::size_t i) { hits[i]++; });
    for (std::size_t i = 0; i < n; ++i) REQUIRE(hits[i] == 1);
  }
}

TEST_CASE("run_tasks runs tasks concurrently, so tasks that wait for each other finish", "[exec]") {
  // Four tasks meet at a barrier: a sequential engine (or one narrower than the task count)
  // would deadlock here, so this only passes when all four really run at once.
  std::barrier meet(4);
  std::atomic<int> after{0};
  kax::exec::run_tasks(4, [&](std::size_t) {
    meet.arrive_and_wait();
    after++;
  });
  REQUIRE(after == 4);
}

TEST_CASE("run_tasks keeps every task concurrent as the task count grows and shrinks", "[exec]") {
  // Arenas and TBB's thread limit are kept between calls: a larger call must raise the limit, and
  // a smaller one after it must not lower it below what the larger arena needs.
  for (std::size_t n : {2u, 6u, 3u, 6u}) {
    std::barrier meet(static_cast<std::ptrdiff_t>(n));
    std::atomic<std::size_t> after{0};
    kax::exec::run_tasks(n, [&](std::size_t) {
      meet.arrive_and_wait();
      after++;
    });
    REQUIRE(after == n);
  }
}

TEST_CASE("run_tasks rethrows a task's exception after all tasks finish", "[exec]") {
  std::atomic<int> done{0};
  REQUIRE_THROWS_WITH(kax::exec::run_tasks(3,
                                           [&](std::size_t i) {
                                             done++;
                                             if (i == 1) throw std::runtime_error("task 1 failed");
                                           }),
                      "task 1 failed");
  REQUIRE(done == 3);
}

TEST_CASE("the host task engine is oneTBB when kax is built with it", "[exec]") {
#if defined(KAX_HAVE_TBB)
  REQUIRE(std::string(kax::exec::host_task_engine()) == "oneTBB");
#else
  REQUIRE(std::string(kax::exec::host_task_engine()) == "std::thread");
#endif
}
