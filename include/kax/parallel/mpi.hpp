// kax/parallel/mpi.hpp — pmap's devices across processes, over MPI (Open MPI from Debian).
//
// Opt-in: compile with -DKAX_HAVE_MPI and link MPI (meson: the `kax_mpi` dependency, built when
// -Dmpi=enabled/auto finds MPI).  kax::ScopeGuard then initializes MPI (MPI_THREAD_SERIALIZED: one
// thread per process talks to MPI at a time, the first local device's), gives kax its own
// communicator (a duplicate of MPI_COMM_WORLD), and sets process_index()/process_count() to the
// rank and size.  Every process runs the same program with KAX_HOST_DEVICES local devices; a
// pmap's collectives combine within the process first (shared memory, parallel/axis_group.hpp)
// and then across processes here:
//   psum / pmean / pmax / pmin   MPI_Iallreduce (in place)
//   all_gather                   MPI_Iallgather of each process's block of devices
//   ppermute                     MPI_Isend / MPI_Irecv for the pairs that cross processes
//   pbroadcast                   MPI_Ibcast from the process that owns the source device
// Before each one, the processes exchange a header (which collective, dtype, element count,
// shape) with MPI_Iallgather: processes that disagree all throw kax::shape_error listing every
// process's shape, and stay usable.  Every wait is bounded (kax::collective_timeout_limit()):
// nonblocking calls polled until done or timed out.  A timed-out collective throws
// kax::collective_timeout; the processes' MPI state is then inconsistent, so ScopeGuard ends the
// job with MPI_Abort instead of MPI_Finalize (a clear error instead of a hang).  A process that
// dies is detected by mpirun, which ends the job.
#pragma once

#if !defined(KAX_HAVE_MPI)
#error "kax/parallel/mpi.hpp: compile with -DKAX_HAVE_MPI and link MPI (meson: dependency kax_mpi)"
#endif

// kax uses MPI's C interface; skip the deprecated C++ bindings (and their warnings).
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kax/core/errors.hpp"
#include "kax/parallel/axis_group.hpp"
#include "kax/parallel/devices.hpp"
#include "kax/parallel/mesh.hpp"

namespace kax::detail {

// MPI_THREAD_SERIALIZED: the device threads of different axis groups (the rows and columns of a
// mesh) talk to MPI concurrently, so every MPI call is made under this lock (waits poll with the
// lock released).
inline std::mutex& mpi_lock() {
  static std::mutex m;
  return m;
}

// Set when a cross-process collective failed: ScopeGuard then aborts the job.
inline std::atomic<bool>& mpi_collective_failed() {
  static std::atomic<bool> failed{false};
  return failed;
}

class mpi_cross_process final : public cross_process {
 public:
  // owns: free the communicator on destruction (a mesh group's; the session's own is freed by it).
  explicit mpi_cross_process(MPI_Comm comm, bool owns = false) : comm_(comm), owns_(owns) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  ~mpi_cross_process() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (owns_ && !finalized) {
      const std::lock_guard<std::mutex> lock(mpi_lock());
      MPI_Comm_free(&comm_);
    }
  }
  mpi_cross_process(const mpi_cross_process&) = delete;
  mpi_cross_process& operator=(const mpi_cross_process&) = delete;

  // A communicator of the given processes (ranks of this one, in order), for a mesh's axis group.
  // Collective: every process calls it, in the same order; null on the processes outside.
  std::shared_ptr<cross_process> split(const std::vector<int>& processes) {
    int color = MPI_UNDEFINED, key = 0;
    for (std::size_t i = 0; i < processes.size(); ++i)
      if (processes[i] == rank_) {
        color = 0;
        key = static_cast<int>(i);
      }
    MPI_Comm sub = MPI_COMM_NULL;
    {
      const std::lock_guard<std::mutex> lock(mpi_lock());
      MPI_Comm_split(comm_, color, key, &sub);
    }
    if (sub == MPI_COMM_NULL) return nullptr;
    return std::make_shared<mpi_cross_process>(sub, true);
  }

  int process_index() const override { return rank_; }
  int process_count() const override { return size_; }

  void allreduce(void* buf, const collective_header& h) override {
    check(h);
    MPI_Request r;
    locked([&] { MPI_Iallreduce(MPI_IN_PLACE, buf, count_of(h.count, h), datatype(h.elem, h), op(h.kind, h.elem), comm_, &r); });
    wait(&r, 1, h);
  }

  void allgather(const void* local, void* global, std::size_t bytes, const collective_header& h) override {
    check(h);
    MPI_Request r;
    const int n = count_of(bytes, h);
    locked([&] { MPI_Iallgather(local, n, MPI_BYTE, global, n, MPI_BYTE, comm_, &r); });
    wait(&r, 1, h);
  }

  void exchange(const std::vector<transfer>& sends, const std::vector<transfer>& receives,
                const collective_header& h) override {
    check(h);
    std::vector<MPI_Request> r(sends.size() + receives.size());
    std::size_t k = 0;
    locked([&] {
      for (const transfer& t : receives)
        MPI_Irecv(t.data, count_of(t.bytes, h), MPI_BYTE, t.process, t.tag, comm_, &r[k++]);
      for (const transfer& t : sends)
        MPI_Isend(t.data, count_of(t.bytes, h), MPI_BYTE, t.process, t.tag, comm_, &r[k++]);
    });
    wait(r.data(), static_cast<int>(r.size()), h);
  }

  void broadcast(void* buf, std::size_t bytes, int root, const collective_header& h) override {
    check(h);
    MPI_Request r;
    locked([&] { MPI_Ibcast(buf, count_of(bytes, h), MPI_BYTE, root, comm_, &r); });
    wait(&r, 1, h);
  }

 private:
  // What the processes compare before a collective (fixed size: one MPI_Iallgather of bytes).
  struct wire_header {
    std::uint8_t kind;
    std::uint8_t elem;
    std::uint64_t count;
    std::int64_t source;
    char who[48];
    char shape[80];
  };

  static void copy_text(char* dst, std::size_t n, const std::string& s) {
    std::memset(dst, 0, n);
    std::memcpy(dst, s.data(), std::min(n - 1, s.size()));
  }

  void check(const collective_header& h) {
    wire_header mine{};
    mine.kind = static_cast<std::uint8_t>(h.kind);
    mine.elem = static_cast<std::uint8_t>(h.elem);
    mine.count = h.count;
    mine.source = h.source;
    copy_text(mine.who, sizeof mine.who, h.who);
    copy_text(mine.shape, sizeof mine.shape, h.shape);
    std::vector<wire_header> all(static_cast<std::size_t>(size_));
    MPI_Request r;
    locked([&] { MPI_Iallgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, comm_, &r); });
    wait(&r, 1, h);
    bool same = true;
    for (const wire_header& w : all)
      same = same && w.kind == all[0].kind && w.elem == all[0].elem && w.count == all[0].count &&
             w.source == all[0].source && std::strcmp(w.who, all[0].who) == 0;
    if (same) return;
    std::string msg = h.who + ": the processes disagree on the collective:";
    for (int p = 0; p < size_; ++p)
      msg += "\n  * process " + std::to_string(p) + ": " + all[static_cast<std::size_t>(p)].who + " of " +
             all[static_cast<std::size_t>(p)].shape;
    throw shape_error(msg);
  }

  // Polls until the requests complete or the timeout passes.
  void wait(MPI_Request* r, int n, const collective_header& h) {
    const std::chrono::milliseconds timeout = collective_timeout_limit();
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    auto pause = std::chrono::microseconds(1);
    for (;;) {
      int done = 0;
      locked([&] { MPI_Testall(n, r, &done, MPI_STATUSES_IGNORE); });
      if (done) return;
      if (std::chrono::steady_clock::now() > deadline) {
        mpi_collective_failed() = true;
        throw collective_timeout(h.who + " of " + h.shape + ": timed out after " +
                                 duration_string(timeout) +
                                 " waiting for the other processes (this is process " + std::to_string(rank_) + " of " +
                                 std::to_string(size_) +
                                 "; a process died, is stuck, or did not reach the same collective). The job "
                                 "ends with MPI_Abort when kax::ScopeGuard goes out of scope.");
      }
      std::this_thread::sleep_for(pause);
      if (pause < std::chrono::microseconds(500)) pause *= 2;
    }
  }

  template <class F>
  static void locked(F&& call) {
    const std::lock_guard<std::mutex> lock(mpi_lock());
    call();
  }

  static int count_of(std::size_t n, const collective_header& h) {
    if (n > static_cast<std::size_t>(INT_MAX))
      throw shape_error(h.who + ": " + h.shape + " is too large for one MPI message (more than 2^31 - 1 elements)");
    return static_cast<int>(n);
  }

  static MPI_Datatype datatype(element_kind e, const collective_header& h) {
    switch (e) {
      case element_kind::f32: return MPI_FLOAT;
      case element_kind::f64: return MPI_DOUBLE;
      case element_kind::i32: return MPI_INT32_T;
      case element_kind::i64: return MPI_INT64_T;
      case element_kind::boolean: return MPI_C_BOOL;
      default: throw error(h.who + ": no MPI datatype for the dtype of " + h.shape);
    }
  }

  static MPI_Op op(collective_kind k, element_kind e) {
    // MPI defines only the logical operations on MPI_C_BOOL: or for sum and max, and for min
    // (as combine() in axis_group.hpp).
    if (e == element_kind::boolean) return k == collective_kind::min ? MPI_LAND : MPI_LOR;
    switch (k) {
      case collective_kind::max: return MPI_MAX;
      case collective_kind::min: return MPI_MIN;
      default: return MPI_SUM;
    }
  }

  MPI_Comm comm_;
  bool owns_ = false;
  int rank_ = 0;
  int size_ = 1;
};

// The MPI side of kax::ScopeGuard.
class mpi_session {
 public:
  mpi_session(int* argc, char*** argv) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      int provided = 0;
      MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided);
      owns_ = true;
      if (provided < MPI_THREAD_SERIALIZED) {
        MPI_Finalize();
        throw error("kax: the MPI library does not provide MPI_THREAD_SERIALIZED, which pmap's host devices need");
      }
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
    int rank = 0, size = 1;
    MPI_Comm_rank(comm_, &rank);
    MPI_Comm_size(comm_, &size);
    {
      runtime_state& s = runtime();
      const std::lock_guard<std::mutex> lock(s.m);
      s.process_index = rank;
      s.process_count = size;
    }
    auto world = std::make_shared<mpi_cross_process>(comm_);
    cross_process_hook() = world;
    split_hook() = [](const std::vector<int>& processes) -> std::shared_ptr<cross_process> {
      auto net = std::dynamic_pointer_cast<mpi_cross_process>(cross_process_hook());
      return net ? net->split(processes) : nullptr;
    };
  }

  ~mpi_session() {
    cross_process_hook().reset();
    split_hook() = nullptr;
    if (mpi_collective_failed()) {
      std::fprintf(stderr, "kax: a collective across MPI processes failed; ending the job with MPI_Abort\n");
      MPI_Abort(comm_, 1);
    }
    MPI_Comm_free(&comm_);
    if (owns_) MPI_Finalize();
  }
  mpi_session(const mpi_session&) = delete;
  mpi_session& operator=(const mpi_session&) = delete;

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  bool owns_ = false;
};

}  // namespace kax::detail
