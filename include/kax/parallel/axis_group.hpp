// kax/parallel/axis_group.hpp — the devices of one named axis while a pmap runs, and the
// collectives among them.
//
// pmap runs one program per local device, each on a host task of its own.  The programs meet in
// the axis_group at every collective (psum, all_gather, ...): each posts its contribution, waits
// at a barrier, then reads what it needs of the others' contributions directly (shared memory:
// no copies besides the result).  A sum is a reduce-scatter into a shared buffer (device d
// combines the d-th chunk of every contribution) followed by each device copying the result, so
// the work is spread over the devices.  When the axis spans several processes, the first local
// device also runs the cross-process step (parallel/mpi.hpp: MPI_Allreduce, MPI_Allgather,
// MPI_Sendrecv, MPI_Bcast semantics, nonblocking with a bounded wait) between two local barriers.
//
// Nothing waits forever: every barrier waits at most kax::collective_timeout(); a device whose
// program throws aborts the group, and the devices waiting for it throw kax::collective_error
// instead of hanging.  Collectives that disagree between devices (different operations, counts
// or shapes) throw kax::shape_error listing every device's shape.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kax/core/errors.hpp"
#include "kax/core/detail/simd_warnings_off.hpp"  // after every other include

namespace kax::detail {

enum class collective_kind : std::uint8_t { sum, max, min, all_gather, ppermute, broadcast };
enum class element_kind : std::uint8_t { f32, f64, i32, i64, boolean, other };

template <class T>
constexpr element_kind element_kind_of() {
  if constexpr (std::is_same_v<T, float>) return element_kind::f32;
  else if constexpr (std::is_same_v<T, double>) return element_kind::f64;
  else if constexpr (std::is_same_v<T, std::int32_t>) return element_kind::i32;
  else if constexpr (std::is_same_v<T, std::int64_t>) return element_kind::i64;
  else if constexpr (std::is_same_v<T, bool>) return element_kind::boolean;
  else return element_kind::other;
}

// What every participant of one collective must agree on; its shape is only for messages.
struct collective_header {
  collective_kind kind{};
  element_kind elem{};
  std::uint64_t count = 0;  // elements contributed by each device
  std::int64_t source = 0;  // pbroadcast's source device
  std::string who;          // "kax::psum<\"i\">"
  std::string shape;        // "float32(3, 4)"
};

// A point-to-point transfer of ppermute between processes (global device indices).
struct permute_pair {
  int source;
  int dest;
};

// The cross-process half of a collective, provided by parallel/mpi.hpp.  All calls are made by one
// thread per process (the first local device's), in the same order on every process; each checks
// first that every process calls the same collective with the same count (else shape_error), and
// gives up after the timeout (collective_timeout).
class cross_process {
 public:
  virtual ~cross_process() = default;
  virtual int process_index() const = 0;
  virtual int process_count() const = 0;
  // In place: buf (count elements) becomes the elementwise combination over processes.
  virtual void allreduce(void* buf, const collective_header& h) = 0;
  // local (bytes) from every process, concatenated by process index into global.
  virtual void allgather(const void* local, void* global, std::size_t bytes, const collective_header& h) = 0;
  // Sends and receives of ppermute: sends[i] = (buffer, bytes, process, tag), likewise receives.
  struct transfer {
    void* data;
    std::size_t bytes;
    int process;
    int tag;
  };
  virtual void exchange(const std::vector<transfer>& sends, const std::vector<transfer>& receives,
                        const collective_header& h) = 0;
  // buf (bytes) from process `root` to all.
  virtual void broadcast(void* buf, std::size_t bytes, int root, const collective_header& h) = 0;
};

// "2 s" or "1500 ms": a collective timeout in the messages of collective_timeout.
inline std::string duration_string(std::chrono::milliseconds t) {
  const auto ms = t.count();
  return ms % 1000 == 0 ? std::to_string(ms / 1000) + " s" : std::to_string(ms) + " ms";
}

// The hook parallel/mpi.hpp installs when kax runs under MPI (null: one process).
inline std::shared_ptr<cross_process>& cross_process_hook() {
  static std::shared_ptr<cross_process> hook;
  return hook;
}

template <class T>
T combine(collective_kind k, T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    return k == collective_kind::min ? (a && b) : (a || b);
  } else {
    switch (k) {
      case collective_kind::max: return (a > b || a != a) ? a : b;  // NaN propagates
      case collective_kind::min: return (a < b || a != a) ? a : b;
      default: return static_cast<T>(a + b);
    }
  }
}

// Scratch memory that is not zero-filled on growth (a std::vector<std::byte> would memset it).
class byte_buffer {
 public:
  std::byte* data() { return data_.get(); }
  void reserve(std::size_t bytes) {
    if (bytes <= size_) return;
    data_.reset(new std::byte[bytes]);
    size_ = bytes;
  }

 private:
  std::unique_ptr<std::byte[]> data_;
  std::size_t size_ = 0;
};

// The error that started it: a device's own exception rather than the collective_error that
// aborting the group raised on the devices waiting for it.
inline void rethrow_root_cause(const std::vector<std::exception_ptr>& failures) {
  std::exception_ptr first, root;
  for (const auto& e : failures) {
    if (!e) continue;
    if (!first) first = e;
    try {
      std::rethrow_exception(e);
    } catch (const collective_timeout&) {
      if (!root) root = e;
    } catch (const collective_error&) {
    } catch (...) {
      if (!root) root = e;
    }
  }
  if (root) std::rethrow_exception(root);
  if (first) std::rethrow_exception(first);
}

class axis_group {
 public:
  axis_group(std::string name, int local_size, std::chrono::milliseconds timeout,
             std::shared_ptr<cross_process> net = nullptr)
      : name_(std::move(name)), local_(local_size), timeout_(timeout), net_(std::move(net)),
        slots_(static_cast<std::size_t>(local_size)), seq_(static_cast<std::size_t>(local_size), 0),
        arrived_(static_cast<std::size_t>(local_size), false) {
    if (net_) {
      process_ = net_->process_index();
      processes_ = net_->process_count();
    }
  }

  const std::string& name() const { return name_; }
  int local_size() const { return local_; }
  int size() const { return local_ * processes_; }
  int global_index(int local) const { return process_ * local_ + local; }
  bool spans_processes() const { return processes_ > 1; }

  // Waits until every local device has arrived (or throws: timeout, or another device failed).
  void barrier(int device, const std::string& who) {
    std::unique_lock<std::mutex> lock(m_);
    if (failed_) throw collective_error(failure_);
    const std::uint64_t gen = generation_;
    arrived_[static_cast<std::size_t>(device)] = true;
    if (++count_ == local_) {
      count_ = 0;
      std::fill(arrived_.begin(), arrived_.end(), false);
      ++generation_;
      cv_.notify_all();
      return;
    }
    const bool done = cv_.wait_for(lock, timeout_, [&] { return generation_ != gen || failed_; });
    if (generation_ != gen) return;
    if (!done) {
      std::string missing;
      for (int k = 0; k < local_; ++k)
        if (!arrived_[static_cast<std::size_t>(k)]) missing += (missing.empty() ? "" : ", ") + std::to_string(global_index(k));
      fail_locked(who + ": timed out after " + duration_string(timeout_) + " waiting for device(s) " + missing +
                  " of axis '" + name_ + "' (a device program is stuck or did not reach the same collective; the "
                  "timeout is kax::initialize({.collective_timeout = ...}) or KAX_COLLECTIVE_TIMEOUT seconds)");
      throw collective_timeout(failure_);
    }
    throw collective_error(failure_);
  }

  // A device program failed: every device waiting now or later throws instead of waiting.
  void abort(const std::string& why) noexcept {
    const std::lock_guard<std::mutex> lock(m_);
    fail_locked(why);
  }

  // psum/pmax/pmin: `out` (count elements) gets the elementwise combination of every device's `in`.
  // Within the process, device d combines chunk d of every contribution straight into its own
  // `out` and then copies the other chunks from the devices that own them; across processes the
  // combined values go through a shared buffer that device 0 hands to MPI.
  template <class T>
  void allreduce(int device, const T* in, T* out, const collective_header& h) {
    const std::size_t n = h.count;
    byte_buffer& shared = begin(device, in, out, h, net_ ? n * sizeof(T) : 0);
    T* acc = net_ ? reinterpret_cast<T*>(shared.data()) : out;
    const auto chunk = [&](int k, std::size_t& lo, std::size_t& hi) {
      lo = n * static_cast<std::size_t>(k) / static_cast<std::size_t>(local_);
      hi = n * static_cast<std::size_t>(k + 1) / static_cast<std::size_t>(local_);
    };
    std::size_t lo = 0, hi = 0;
    chunk(device, lo, hi);
    combine_chunk(h.kind, acc, lo, hi);
    barrier(device, h.who);
    if (net_) {
      cross_step(device, h, [&] { net_->allreduce(acc, h); });
      std::memcpy(out, acc, n * sizeof(T));
    } else {
      for (int k = 0; k < local_; ++k) {
        if (k == device) continue;
        std::size_t a = 0, b = 0;
        chunk(k, a, b);
        std::memcpy(out + a, static_cast<const T*>(slots_[static_cast<std::size_t>(k)].out) + a, (b - a) * sizeof(T));
      }
    }
    barrier(device, h.who);  // every device has read the chunks it needs from the others
  }

  // all_gather: `out` (size() * count elements) gets every device's `in`, in global device order.
  template <class T>
  void all_gather(int device, const T* in, T* out, const collective_header& h) {
    const std::size_t n = h.count;
    const std::size_t local_bytes = n * sizeof(T) * static_cast<std::size_t>(local_);
    byte_buffer& shared = begin(device, in, out, h, net_ ? local_bytes : 0);
    if (!net_) {
      for (int k = 0; k < local_; ++k)
        std::memcpy(out + static_cast<std::size_t>(k) * n, slots_[static_cast<std::size_t>(k)].in, n * sizeof(T));
    } else {
      std::memcpy(shared.data() + static_cast<std::size_t>(device) * n * sizeof(T), in, n * sizeof(T));
      barrier(device, h.who);
      T* root_out = static_cast<T*>(slots_[0].out);
      cross_step(device, h, [&] { net_->allgather(shared.data(), root_out, local_bytes, h); });
      if (device != 0) std::memcpy(out, root_out, n * sizeof(T) * static_cast<std::size_t>(size()));
    }
    barrier(device, h.who);  // the others' buffers stay untouched until everyone has read them
  }

  // ppermute: device `dest` gets the `in` of `source` for every pair; a device that is no pair's
  // destination gets zeros.  Pairs use global device indices and were validated by the caller.
  template <class T>
  void ppermute(int device, const T* in, T* out, const collective_header& h, const std::vector<permute_pair>& perm) {
    begin(device, in, out, h, 0);
    const std::size_t n = h.count;
    const int me = global_index(device);
    const auto from = std::find_if(perm.begin(), perm.end(), [me](const permute_pair& p) { return p.dest == me; });
    const bool remote_source = from != perm.end() && (from->source / local_) != process_;
    if (from == perm.end()) {
      std::fill(out, out + n, T{});
    } else if (!remote_source) {
      std::memcpy(out, slots_[static_cast<std::size_t>(from->source % local_)].in, n * sizeof(T));
    }
    if (net_) {
      cross_step(device, h, [&] {
        std::vector<cross_process::transfer> sends, receives;
        for (const permute_pair& p : perm) {
          const int sp = p.source / local_, dp = p.dest / local_;
          if (sp == process_ && dp != process_)
            sends.push_back({const_cast<void*>(slots_[static_cast<std::size_t>(p.source % local_)].in), n * sizeof(T), dp, p.dest});
          if (dp == process_ && sp != process_)
            receives.push_back({slots_[static_cast<std::size_t>(p.dest % local_)].out, n * sizeof(T), sp, p.dest});
        }
        net_->exchange(sends, receives, h);
      });
    }
    barrier(device, h.who);
  }

  // pbroadcast: every device gets the `in` of global device `source` (validated by the caller).
  template <class T>
  void broadcast(int device, const T* in, T* out, const collective_header& h) {
    begin(device, in, out, h, 0);
    const std::size_t n = h.count;
    const int src = static_cast<int>(h.source);
    const bool local_source = src / local_ == process_;
    if (local_source) std::memcpy(out, slots_[static_cast<std::size_t>(src % local_)].in, n * sizeof(T));
    if (net_) {
      T* root_out = static_cast<T*>(slots_[0].out);
      cross_step(device, h, [&] { net_->broadcast(root_out, n * sizeof(T), src / local_, h); });
      if (!local_source && device != 0) std::memcpy(out, root_out, n * sizeof(T));
    }
    barrier(device, h.who);
  }

 private:
  // A copy of the header: a device that throws on a mismatch leaves while others still read it.
  struct slot {
    const void* in = nullptr;
    void* out = nullptr;
    collective_header header;
  };

  // acc[lo, hi) = the combination of every device's contribution there.  `acc` may be one of
  // the contributions (a psum over a donated operand writes in place), so each block is combined
  // in a small buffer first and stored after every contribution to it has been read.
  template <class T>
  void combine_chunk(collective_kind kind, T* acc, std::size_t lo, std::size_t hi) const {
    constexpr std::size_t block = 8192 / sizeof(T);
    T tmp[block];
    const T* first = static_cast<const T*>(slots_[0].in);
    for (std::size_t b0 = lo; b0 < hi; b0 += block) {
      const std::size_t len = std::min(block, hi - b0);
      const T* f = first + b0;
      if (kind == collective_kind::sum) {
#pragma omp simd
        for (std::size_t i = 0; i < len; ++i) tmp[i] = f[i];
        for (int k = 1; k < local_; ++k) {
          const T* x = static_cast<const T*>(slots_[static_cast<std::size_t>(k)].in) + b0;
#pragma omp simd
          for (std::size_t i = 0; i < len; ++i) tmp[i] = static_cast<T>(tmp[i] + x[i]);
        }
      } else {
        for (std::size_t i = 0; i < len; ++i) tmp[i] = f[i];
        for (int k = 1; k < local_; ++k) {
          const T* x = static_cast<const T*>(slots_[static_cast<std::size_t>(k)].in) + b0;
          for (std::size_t i = 0; i < len; ++i) tmp[i] = combine(kind, tmp[i], x[i]);
        }
      }
      std::memcpy(acc + b0, tmp, len * sizeof(T));
    }
  }

  void fail_locked(const std::string& why) {
    if (!failed_) {
      failed_ = true;
      failure_ = why;
    }
    cv_.notify_all();
  }

  // Posts this device's buffers, has device 0 size the shared buffer of this collective, waits for
  // everyone, and checks that all devices called the same collective.  Shared buffers alternate
  // between two, so one collective's readers never race the next collective's writers.
  byte_buffer& begin(int device, const void* in, void* out, const collective_header& h, std::size_t shared_bytes) {
    const std::size_t d = static_cast<std::size_t>(device);
    byte_buffer& shared = shared_[seq_[d]++ % 2];
    slots_[d] = {in, out, h};
    if (device == 0) shared.reserve(shared_bytes);
    barrier(device, h.who);
    const collective_header& first = slots_[0].header;
    bool same = true;
    for (const slot& s : slots_)
      same = same && s.header.kind == first.kind && s.header.count == first.count && s.header.elem == first.elem &&
             s.header.who == first.who && s.header.source == first.source;
    if (!same) {
      std::string msg = h.who + ": the devices of axis '" + name_ + "' disagree on the collective:";
      for (int k = 0; k < local_; ++k)
        msg += "\n  * device " + std::to_string(global_index(k)) + ": " + slots_[static_cast<std::size_t>(k)].header.who + " of " +
               slots_[static_cast<std::size_t>(k)].header.shape;
      throw shape_error(msg);
    }
    return shared;
  }

  // The cross-process part, run by device 0 between two barriers.  A mismatch between processes
  // (shape_error) is thrown by every local device; anything else aborts the group.
  template <class F>
  void cross_step(int device, const collective_header& h, F&& step) {
    if (device == 0) {
      try {
        step();
        remote_error_.clear();
      } catch (const shape_error& e) {
        remote_error_ = e.what();
      } catch (const std::exception& e) {
        abort(e.what());
        throw;
      }
    }
    barrier(device, h.who);
    if (!remote_error_.empty()) {
      const std::string msg = remote_error_;
      barrier(device, h.who);  // everyone has read it before device 0 may clear it
      throw shape_error(msg);
    }
  }

  std::string name_;
  int local_;
  std::chrono::milliseconds timeout_;
  std::shared_ptr<cross_process> net_;
  int process_ = 0;
  int processes_ = 1;

  std::vector<slot> slots_;
  std::vector<std::uint64_t> seq_;
  byte_buffer shared_[2];
  std::string remote_error_;

  std::mutex m_;
  std::condition_variable cv_;
  std::vector<bool> arrived_;
  int count_ = 0;
  std::uint64_t generation_ = 0;
  bool failed_ = false;
  std::string failure_;
};

}  // namespace kax::detail

#include "kax/core/detail/simd_warnings_on.hpp"
