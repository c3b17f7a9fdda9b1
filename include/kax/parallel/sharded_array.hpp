// kax/parallel/sharded_array.hpp — globally sharded arrays (jax.Array with a NamedSharding):
// kax::ShardedArray, kax::device_put(array, sharding), kax::to_host(sharded), resharding.
//
//   kax::Mesh mesh = kax::make_mesh({2, 2}, {"x", "y"});
//   auto a = kax::device_put(x, kax::NamedSharding(mesh, kax::P("x", "y")));   // 4 blocks
//   kax::Array<float, 2> back = kax::to_host(a);                               // the global array
//   auto r = kax::device_put(a, kax::NamedSharding(mesh, kax::P(kax::none, "x")));   // reshard
//
// A ShardedArray has a global shape and a sharding; this process holds the blocks of its own
// devices of the mesh (one kax::Array per device, replicas included, as JAX's addressable shards).
// With several MPI processes every process holds only its devices' blocks; to_host gathers the
// others' (MPI_Allgather).  Resharding goes through the global array: to_host, then the new
// blocks.
#pragma once

#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kax/core/array.hpp"
#include "kax/core/errors.hpp"
#include "kax/core/factories.hpp"
#include "kax/core/transfer.hpp"
#include "kax/exec/host_tasks.hpp"
#include "kax/parallel/mesh.hpp"
#include "kax/plan/stages.hpp"

namespace kax {

template <element_dtype T, std::size_t R>
class ShardedArray {
 public:
  using value_type = T;
  static constexpr std::size_t rank = R;

  // One shard of this process (jax.Array.addressable_shards): its device, where its block starts
  // in the global array, and the block.
  struct Shard {
    Device device;
    shape<R> offset;
    Array<T, R> data;
  };

  ShardedArray(NamedSharding sharding, const shape<R>& global, std::vector<Array<T, R>> blocks)
      : sharding_(std::move(sharding)), global_(global), blocks_(std::move(blocks)),
        positions_(sharding_.mesh().local_positions()) {
    const shape<R> b = sharding_.block_shape(global_, "kax::ShardedArray");
    if (blocks_.size() != positions_.size())
      throw shape_error("kax::ShardedArray: " + std::to_string(blocks_.size()) + " blocks for " +
                        std::to_string(positions_.size()) + " local devices of " + sharding_.mesh().to_string());
    for (const Array<T, R>& blk : blocks_)
      if (blk.extents() != b)
        throw shape_error("kax::ShardedArray: a block has shape " + shape_string(blk.extents()) + ", but " +
                          sharding_.to_string() + " of shape " + shape_string(global_) + " has blocks of shape " +
                          shape_string(b));
  }

  shape<R> extents() const { return global_; }
  std::size_t size() const { return size_of(global_); }
  const NamedSharding& sharding() const { return sharding_; }
  shape<R> block_shape() const { return sharding_.block_shape(global_, "kax::ShardedArray"); }
  // The blocks of this process's mesh devices, in mesh order (positions()).
  const std::vector<Array<T, R>>& blocks() const { return blocks_; }
  const std::vector<std::size_t>& positions() const { return positions_; }

  std::vector<Shard> addressable_shards() const {
    std::vector<Shard> out;
    const shape<R> b = block_shape();
    for (std::size_t i = 0; i < blocks_.size(); ++i)
      out.push_back({sharding_.mesh().devices()[positions_[i]], sharding_.block_offset(positions_[i], b), blocks_[i]});
    return out;
  }

 private:
  NamedSharding sharding_;
  shape<R> global_;
  std::vector<Array<T, R>> blocks_;
  std::vector<std::size_t> positions_;
};

namespace detail {

template <class X>
struct is_sharded_array : std::false_type {};
template <class T, std::size_t R>
struct is_sharded_array<ShardedArray<T, R>> : std::true_type {};

// Copies a block between a dense row-major global array and a dense block (row by row).
template <class T, std::size_t R>
void copy_block(const T* from, T* to, const shape<R>& global, const shape<R>& block, const shape<R>& offset,
                bool into_global) {
  if constexpr (R == 0) {
    *to = *from;
  } else {
    const std::size_t row = block[R - 1];
    std::size_t rows = 1;
    for (std::size_t d = 0; d + 1 < R; ++d) rows *= block[d];
    for (std::size_t r = 0; r < rows; ++r) {
      std::size_t rest = r, g = 0, stride = global[R - 1];
      std::array<std::size_t, R> idx{};
      for (std::size_t d = R - 1; d-- > 0;) {
        idx[d] = rest % block[d];
        rest /= block[d];
      }
      g = offset[R - 1];
      for (std::size_t d = R - 1; d-- > 0;) {
        g += (idx[d] + offset[d]) * stride;
        stride *= global[d];
      }
      if (into_global) std::memcpy(to + g, from + r * row, row * sizeof(T));
      else std::memcpy(to + r * row, from + g, row * sizeof(T));
    }
  }
}

template <class T, std::size_t R>
std::vector<Array<T, R>> blocks_of(const Array<T, R, Kokkos::HostSpace>& global, const NamedSharding& s,
                                   const std::vector<std::size_t>& positions, const std::string& who) {
  const shape<R> ext = global.extents();
  const shape<R> b = s.block_shape(ext, who);
  std::vector<Array<T, R>> out(positions.size());
  exec::run_tasks(positions.size(), [&](std::size_t i) {
    out[i] = uninitialized<T, R>(b, "kax::device_put");
    copy_block<T, R>(global.data(), out[i].data(), ext, b, s.block_offset(positions[i], b), false);
  });
  return out;
}

}  // namespace detail

// jax.device_put(x, sharding): x (the global array, the same on every process) split into the
// blocks of this process's devices.
template <element_dtype T, std::size_t R, class M>
ShardedArray<T, R> device_put(const Array<T, R, M>& a, const NamedSharding& sharding) {
  static_assert(host_accessible<default_memory_space> || sizeof(T) == 0,  // dependent: fires on use
                "kax::device_put(array, sharding): sharded arrays live in host memory in this version; on a "
                "GPU build use managed memory (KAX_MANAGED_MEMORY=1, docs/backends.md)");
  const auto h = to_host(a);  // a kax::Array is dense and row-major
  Kokkos::fence();
  return ShardedArray<T, R>(sharding, a.extents(),
                            detail::blocks_of<T, R>(h, sharding, sharding.mesh().local_positions(), "kax::device_put"));
}

// The global array of a sharded one (jax.device_get / np.asarray): every block in its place.
// Across processes every process gets the whole array (an all-gather of the blocks).
template <element_dtype T, std::size_t R>
Array<T, R, Kokkos::HostSpace> to_host(const ShardedArray<T, R>& a) {
  const NamedSharding& s = a.sharding();
  const shape<R> b = a.block_shape();
  const std::size_t block_size = size_of(b);
  auto out = detail::uninitialized<T, R, Kokkos::HostSpace>(a.extents(), "kax::to_host");
  Kokkos::fence();
  std::vector<bool> placed(s.mesh().size(), false);
  auto place = [&](std::size_t k, const T* block) {
    for (std::size_t j = 0; j < placed.size(); ++j)
      if (placed[j] && s.same_block(j, k, R)) return;  // a replica of a block already in place
    detail::copy_block<T, R>(block, out.data(), a.extents(), b, s.block_offset(k, b), true);
    placed[k] = true;
  };
  for (std::size_t i = 0; i < a.blocks().size(); ++i) place(a.positions()[i], a.blocks()[i].data());
  if (process_count() > 1) {
    auto net = detail::cross_process_hook();
    if (!net) throw error("kax::to_host: the array spans processes, but MPI is not initialized");
    const std::size_t local = a.blocks().size();
    // Bytes, not std::vector<T>: std::vector<bool> has no data().
    const std::size_t count = local * block_size;
    std::unique_ptr<T[]> mine(new T[count]), all(new T[count * static_cast<std::size_t>(process_count())]);
    for (std::size_t i = 0; i < local; ++i)
      std::memcpy(mine.get() + i * block_size, a.blocks()[i].data(), block_size * sizeof(T));
    detail::collective_header h;
    h.kind = detail::collective_kind::all_gather;
    h.elem = detail::element_kind_of<T>();
    h.count = count;
    h.who = "kax::to_host";
    h.shape = detail::typed_shape<T>(a.extents());
    net->allgather(mine.get(), all.get(), count * sizeof(T), h);
    for (int p = 0; p < process_count(); ++p) {
      std::size_t i = 0;
      for (std::size_t k = 0; k < s.mesh().size(); ++k)
        if (s.mesh().devices()[k].process_index == p)
          place(k, all.get() + (static_cast<std::size_t>(p) * local + i++) * block_size);
    }
  }
  return out;
}

template <element_dtype T, std::size_t R>
Array<T, R, Kokkos::HostSpace> device_get(const ShardedArray<T, R>& a) {
  return to_host(a);
}

// Resharding (jax.device_put(x, new_sharding)): the same global array with another layout.
template <element_dtype T, std::size_t R>
ShardedArray<T, R> device_put(const ShardedArray<T, R>& a, const NamedSharding& sharding) {
  if (a.sharding() == sharding) return a;
  const auto global = to_host(a);
  return ShardedArray<T, R>(sharding, a.extents(),
                            detail::blocks_of<T, R>(global, sharding, sharding.mesh().local_positions(), "kax::device_put"));
}

}  // namespace kax
