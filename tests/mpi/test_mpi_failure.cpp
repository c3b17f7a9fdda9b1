// A process that dies or stalls before a collective must end the job with a clear error, not a
// hang.  Run by check_failure.sh under mpirun with KAX_COLLECTIVE_TIMEOUT=1:
//   dead   process 1 exits before the psum; process 0 waits in the psum
//   stall  process 1 sleeps 6 s before the psum; process 0 times out after 1 s
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "kax/kax.hpp"

int main(int argc, char* argv[]) {
  kax::ScopeGuard guard(argc, argv);
  const char* mode = argc > 1 ? argv[1] : "stall";
  kax::Array<float, 2> x(static_cast<std::size_t>(kax::local_device_count()), 4);
  auto f = [](auto v) { return kax::psum<"i">(v); };
  (void)kax::pmap<"i">(f)(x);  // everyone is up
  if (kax::process_index() == 1) {
    if (std::strcmp(mode, "dead") == 0) {
      std::fprintf(stderr, "process 1: exiting before the collective\n");
      std::_Exit(3);
    }
    std::this_thread::sleep_for(std::chrono::seconds(6));
  }
  try {
    (void)kax::pmap<"i">(f)(x);
  } catch (const kax::collective_timeout& e) {
    std::fprintf(stderr, "process %d caught kax::collective_timeout: %s\n", kax::process_index(), e.what());
    return 2;  // ScopeGuard ends the job with MPI_Abort
  }
  std::fprintf(stderr, "process %d: the collective completed (unexpected)\n", kax::process_index());
  return 0;
}
