// kax/parallel/mesh.hpp — device meshes and partition specs (jax.sharding's Mesh, PartitionSpec,
// NamedSharding).
//
//   kax::Mesh mesh = kax::make_mesh({2, 2}, {"x", "y"});     // 4 devices as a 2x2 grid
//   kax::NamedSharding s(mesh, kax::P("x", kax::none));      // rows split over "x", replicated over "y"
//   kax::P({"x", "y"}, kax::none)                             // rows split over both axes ("x" major)
//
// A mesh lays devices out row-major over its shape: device k of the mesh has coordinates
// unravel(k, shape).  A PartitionSpec has one entry per array dimension (missing trailing
// entries mean kax::none): kax::none replicates the dimension, a mesh axis name splits it into
// that many equal blocks, a list of names splits it over the product of their sizes (the first
// name major).  A device holds the block selected by its coordinates along the named axes; mesh
// axes that a spec does not name replicate the block.  Blocks are exactly JAX's: extents must
// divide evenly (kax::shape_error otherwise, naming the dimension, its extent and the mesh axes).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "kax/core/errors.hpp"
#include "kax/core/extents.hpp"
#include "kax/parallel/axis_group.hpp"
#include "kax/parallel/devices.hpp"
#include "kax/transform/axes.hpp"

namespace kax {

namespace detail {
struct mesh_state;
}

// jax.sharding.Mesh: devices arranged in a named grid.
class Mesh {
 public:
  Mesh(std::vector<std::size_t> shape, std::vector<std::string> names, std::vector<Device> devices);

  const std::vector<std::size_t>& shape() const { return shape_; }
  const std::vector<std::string>& axis_names() const { return names_; }
  // The devices in row-major order over shape() (mesh.devices.flat in JAX).
  const std::vector<Device>& devices() const { return devices_; }
  std::size_t size() const { return devices_.size(); }
  std::size_t rank() const { return shape_.size(); }

  // The position of a mesh axis; kax::axis_error when the mesh has no such axis.
  std::size_t axis_index(const std::string& name, const std::string& who = "kax::Mesh") const {
    for (std::size_t a = 0; a < names_.size(); ++a)
      if (names_[a] == name) return a;
    throw axis_error(who + ": the mesh " + to_string() + " has no axis '" + name + "'");
  }
  std::size_t axis_size(const std::string& name) const { return shape_[axis_index(name)]; }

  // Coordinates of mesh position k (row-major).
  std::vector<std::size_t> coords(std::size_t k) const {
    std::vector<std::size_t> c(shape_.size());
    for (std::size_t a = shape_.size(); a-- > 0;) {
      c[a] = k % shape_[a];
      k /= shape_[a];
    }
    return c;
  }
  std::size_t position(const std::vector<std::size_t>& c) const {
    std::size_t k = 0;
    for (std::size_t a = 0; a < shape_.size(); ++a) k = k * shape_[a] + c[a];
    return k;
  }
  // The mesh positions of this process's devices, in mesh order.
  std::vector<std::size_t> local_positions() const {
    std::vector<std::size_t> out;
    const int me = process_index();
    for (std::size_t k = 0; k < devices_.size(); ++k)
      if (devices_[k].process_index == me) out.push_back(k);
    return out;
  }

  // "Mesh('x': 2, 'y': 2)", as JAX prints it.
  std::string to_string() const {
    std::string s = "Mesh(";
    for (std::size_t a = 0; a < shape_.size(); ++a)
      s += (a ? ", '" : "'") + names_[a] + "': " + std::to_string(shape_[a]);
    return s + ")";
  }

  friend bool operator==(const Mesh& a, const Mesh& b) {
    return a.shape_ == b.shape_ && a.names_ == b.names_ && a.devices_ == b.devices_;
  }

  // The devices along one axis that share the coordinates of position k on the other axes (one
  // "axis group"), with the process-spanning communicators they need; built once per mesh.
  std::shared_ptr<detail::mesh_state> state() const { return state_; }

 private:
  std::vector<std::size_t> shape_;
  std::vector<std::string> names_;
  std::vector<Device> devices_;
  std::shared_ptr<detail::mesh_state> state_;
};

namespace detail {

// What a mesh keeps between calls: per axis and group, the cross-process link of the processes
// the group spans (null when the group lives in one process).  Built on the calling thread of the
// first shard_map over the mesh, in the same order on every process (communicator creation is
// collective).
struct mesh_state {
  std::mutex m;
  bool linked = false;
  // links[axis][group] where group = position with the axis coordinate set to 0, numbered in
  // mesh order among such positions.
  std::vector<std::vector<std::shared_ptr<cross_process>>> links;
};

// The hook parallel/mpi.hpp installs to create a communicator for a subset of processes (called
// by every process, in the same order; returns null on processes outside the subset).
using split_function = std::shared_ptr<cross_process> (*)(const std::vector<int>& processes);
inline split_function& split_hook() {
  static split_function f = nullptr;
  return f;
}

// The positions of the group along `axis` that contains position k, in order of the axis coordinate.
inline std::vector<std::size_t> group_positions(const Mesh& mesh, std::size_t axis, std::size_t k) {
  std::vector<std::size_t> c = mesh.coords(k);
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < mesh.shape()[axis]; ++i) {
    c[axis] = i;
    out.push_back(mesh.position(c));
  }
  return out;
}

// The number of the group along `axis` that contains position k (groups in mesh order).
inline std::size_t group_number(const Mesh& mesh, std::size_t axis, std::size_t k) {
  std::vector<std::size_t> c = mesh.coords(k);
  std::size_t g = 0;
  for (std::size_t a = 0; a < mesh.rank(); ++a)
    if (a != axis) g = g * mesh.shape()[a] + c[a];
  return g;
}

// Checks that a group spread over processes gives every process the same number of consecutive
// axis positions (what axis_group's cross-process step assumes) and returns the processes in order.
inline std::vector<int> group_processes(const Mesh& mesh, const std::vector<std::size_t>& group, const std::string& axis) {
  std::vector<int> procs;
  std::vector<std::size_t> count;
  for (std::size_t p : group) {
    const int proc = mesh.devices()[p].process_index;
    if (procs.empty() || procs.back() != proc) {
      if (std::find(procs.begin(), procs.end(), proc) != procs.end())
        throw error("kax::Mesh: the devices of a group along axis '" + axis + "' of " + mesh.to_string() +
                    " alternate between processes; order the mesh so that each process holds consecutive positions");
      procs.push_back(proc);
      count.push_back(0);
    }
    ++count.back();
  }
  for (std::size_t c : count)
    if (c != count.front())
      throw error("kax::Mesh: the processes hold different numbers of devices of a group along axis '" + axis + "' of " +
                  mesh.to_string());
  return procs;
}

// The cross-process links of every group (once per mesh; collective over the processes).
inline void link_mesh(const Mesh& mesh) {
  mesh_state& s = *mesh.state();
  const std::lock_guard<std::mutex> lock(s.m);
  if (s.linked) return;
  s.links.assign(mesh.rank(), {});
  for (std::size_t a = 0; a < mesh.rank(); ++a) {
    const std::size_t groups = mesh.size() / mesh.shape()[a];
    s.links[a].assign(groups, nullptr);
    std::vector<bool> seen(groups, false);
    for (std::size_t k = 0; k < mesh.size(); ++k) {
      const std::size_t g = group_number(mesh, a, k);
      if (seen[g]) continue;
      seen[g] = true;
      const std::vector<int> procs = group_processes(mesh, group_positions(mesh, a, k), mesh.axis_names()[a]);
      if (process_count() > 1) {
        if (!split_hook())
          throw error("kax::Mesh: the mesh spans processes, but MPI is not initialized (kax/parallel/mpi.hpp)");
        auto link = split_hook()(procs);  // every process calls it, in the same order
        if (procs.size() > 1) s.links[a][g] = std::move(link);
      }
    }
  }
  s.linked = true;
}

}  // namespace detail

inline Mesh::Mesh(std::vector<std::size_t> shape, std::vector<std::string> names, std::vector<Device> devices)
    : shape_(std::move(shape)), names_(std::move(names)), devices_(std::move(devices)),
      state_(std::make_shared<detail::mesh_state>()) {
  std::size_t n = 1;
  for (std::size_t s : shape_) n *= s;
  auto shape_text = [&] {
    std::string t = "(";
    for (std::size_t a = 0; a < shape_.size(); ++a) t += (a ? ", " : "") + std::to_string(shape_[a]);
    return t + (shape_.size() == 1 ? ",)" : ")");
  };
  if (shape_.size() != names_.size())
    throw shape_error("kax::Mesh: the shape " + shape_text() + " has " + std::to_string(shape_.size()) + " axes but " +
                      std::to_string(names_.size()) + " names were given");
  if (shape_.empty() || n == 0) throw shape_error("kax::Mesh: the shape " + shape_text() + " has no devices");
  for (std::size_t a = 0; a < names_.size(); ++a)
    for (std::size_t b = 0; b < a; ++b)
      if (names_[a] == names_[b]) throw axis_error("kax::Mesh: the axis name '" + names_[a] + "' is used twice");
  if (devices_.size() != n)
    throw shape_error("kax::Mesh: the shape " + shape_text() + " needs " + std::to_string(n) + " devices, " +
                      std::to_string(devices_.size()) + " were given");
}

// jax.make_mesh(shape, names): the first prod(shape) devices of kax::devices() as a mesh.  With
// several processes the mesh must use every device (each process then holds the same number of
// consecutive mesh positions).
inline Mesh make_mesh(const std::vector<std::size_t>& shape, const std::vector<std::string>& names) {
  std::size_t n = 1;
  for (std::size_t s : shape) n *= s;
  const std::vector<Device> all = devices();
  if (n > all.size())
    throw shape_error("kax::make_mesh: the mesh needs " + std::to_string(n) + " devices, but only " +
                      std::to_string(all.size()) + " are available (host devices: KAX_HOST_DEVICES or "
                      "kax::initialize({.host_devices = N}))");
  if (process_count() > 1 && n != all.size())
    throw shape_error("kax::make_mesh: with " + std::to_string(process_count()) + " processes the mesh must use all " +
                      std::to_string(all.size()) + " devices, not " + std::to_string(n));
  return Mesh(shape, names, std::vector<Device>(all.begin(), all.begin() + static_cast<long>(n)));
}

// One entry of a PartitionSpec: kax::none, a mesh axis name, or a list of names ({"x", "y"}).
class spec_entry {
 public:
  spec_entry() = default;  // an omitted entry (same as kax::none)
  spec_entry(none_t) {}
  spec_entry(const char* name) : names_{name} {}
  spec_entry(std::string name) : names_{std::move(name)} {}
  spec_entry(std::initializer_list<const char*> names) : names_(names.begin(), names.end()) {}
  spec_entry(std::vector<std::string> names) : names_(std::move(names)) {}

  const std::vector<std::string>& names() const { return names_; }
  bool is_none() const { return names_.empty(); }
  // "'x'", "('x', 'y')" or "None".
  std::string to_string() const {
    if (names_.empty()) return "None";
    if (names_.size() == 1) return "'" + names_[0] + "'";
    std::string s = "(";
    for (std::size_t i = 0; i < names_.size(); ++i) s += (i ? ", '" : "'") + names_[i] + "'";
    return s + ")";
  }
  friend bool operator==(const spec_entry&, const spec_entry&) = default;

 private:
  std::vector<std::string> names_;
};

// jax.sharding.PartitionSpec.  Entries are kept as written (to_string shows them), but trailing
// kax::none entries do not change the layout: P("x") == P("x", none), as in JAX.
class PartitionSpec {
 public:
  PartitionSpec() = default;
  explicit PartitionSpec(std::vector<spec_entry> entries) : entries_(std::move(entries)) {}
  const std::vector<spec_entry>& entries() const { return entries_; }
  std::size_t size() const { return entries_.size(); }
  // Entry d (kax::none past the end).
  const spec_entry& operator[](std::size_t d) const {
    static const spec_entry unsplit;
    return d < entries_.size() ? entries_[d] : unsplit;
  }
  // The mesh axes the spec names, in order.
  std::vector<std::string> axis_names() const {
    std::vector<std::string> out;
    for (const spec_entry& e : entries_)
      for (const std::string& n : e.names()) out.push_back(n);
    return out;
  }
  std::string to_string() const {
    std::string s = "PartitionSpec(";
    for (std::size_t d = 0; d < entries_.size(); ++d) s += (d ? ", " : "") + entries_[d].to_string();
    return s + (entries_.size() == 1 ? ",)" : ")");
  }
  friend bool operator==(const PartitionSpec& a, const PartitionSpec& b) { return a.trimmed() == b.trimmed(); }

 private:
  std::vector<spec_entry> trimmed() const {
    std::vector<spec_entry> t = entries_;
    while (!t.empty() && t.back().is_none()) t.pop_back();
    return t;
  }

  std::vector<spec_entry> entries_;
};

// kax::P("x", kax::none), kax::P({"x", "y"}), kax::P() (replicated).
inline PartitionSpec P() { return PartitionSpec(); }
inline PartitionSpec P(spec_entry a) { return PartitionSpec({std::move(a)}); }
inline PartitionSpec P(spec_entry a, spec_entry b) { return PartitionSpec({std::move(a), std::move(b)}); }
inline PartitionSpec P(spec_entry a, spec_entry b, spec_entry c) {
  return PartitionSpec({std::move(a), std::move(b), std::move(c)});
}
inline PartitionSpec P(spec_entry a, spec_entry b, spec_entry c, spec_entry d) {
  return PartitionSpec({std::move(a), std::move(b), std::move(c), std::move(d)});
}
inline PartitionSpec P(spec_entry a, spec_entry b, spec_entry c, spec_entry d, spec_entry e) {
  return PartitionSpec({std::move(a), std::move(b), std::move(c), std::move(d), std::move(e)});
}
inline PartitionSpec P(spec_entry a, spec_entry b, spec_entry c, spec_entry d, spec_entry e, spec_entry f) {
  return PartitionSpec({std::move(a), std::move(b), std::move(c), std::move(d), std::move(e), std::move(f)});
}

// jax.sharding.NamedSharding: how an array's blocks are laid out over a mesh.
class NamedSharding {
 public:
  NamedSharding(Mesh mesh, PartitionSpec spec) : mesh_(std::move(mesh)), spec_(std::move(spec)) {
    std::vector<std::string> used;
    for (const std::string& n : spec_.axis_names()) {
      mesh_.axis_index(n, "kax::NamedSharding(" + spec_.to_string() + ")");
      if (std::find(used.begin(), used.end(), n) != used.end())
        throw axis_error("kax::NamedSharding: " + spec_.to_string() + " uses the mesh axis '" + n + "' twice");
      used.push_back(n);
    }
  }
  const Mesh& mesh() const { return mesh_; }
  const PartitionSpec& spec() const { return spec_; }
  std::string to_string() const { return "NamedSharding(" + mesh_.to_string() + ", " + spec_.to_string() + ")"; }
  friend bool operator==(const NamedSharding& a, const NamedSharding& b) {
    return a.mesh_ == b.mesh_ && a.spec_ == b.spec_;
  }

  // The number of blocks dimension d is split into.
  std::size_t shards(std::size_t d) const {
    std::size_t n = 1;
    for (const std::string& name : spec_[d].names()) n *= mesh_.axis_size(name);
    return n;
  }

  // The block extents of an array of global extents `ext`; kax::shape_error when an extent does
  // not divide evenly, or the spec has more entries than the array has dimensions.
  template <std::size_t R>
  shape<R> block_shape(const shape<R>& ext, const std::string& who) const {
    if (spec_.size() > R)
      throw shape_error(who + ": " + spec_.to_string() + " has " + std::to_string(spec_.size()) +
                        " entries, but the array has rank " + std::to_string(R) + " (shape " + shape_string(ext) + ")");
    shape<R> b = ext;
    for (std::size_t d = 0; d < R; ++d) {
      const std::size_t n = shards(d);
      if (ext[d] % n != 0) {
        std::string axes;
        for (const std::string& name : spec_[d].names())
          axes += (axes.empty() ? "'" : " x '") + name + "' (size " + std::to_string(mesh_.axis_size(name)) + ")";
        throw shape_error(who + ": dimension " + std::to_string(d) + " of shape " + shape_string(ext) + " has extent " +
                          std::to_string(ext[d]) + ", which is not divisible by the mesh axes " + axes + " = " +
                          std::to_string(n) + " of " + mesh_.to_string() + " (" + spec_.to_string() + ")");
      }
      b[d] = ext[d] / n;
    }
    return b;
  }

  // Which block of dimension d mesh position k holds (the named axes' coordinates, first major).
  std::size_t block_index(std::size_t k, std::size_t d) const {
    const std::vector<std::size_t> c = mesh_.coords(k);
    std::size_t i = 0;
    for (const std::string& name : spec_[d].names()) {
      const std::size_t a = mesh_.axis_index(name);
      i = i * mesh_.shape()[a] + c[a];
    }
    return i;
  }

  // The offset of position k's block in the global array.
  template <std::size_t R>
  shape<R> block_offset(std::size_t k, const shape<R>& block) const {
    shape<R> o{};
    for (std::size_t d = 0; d < R; ++d) o[d] = block_index(k, d) * block[d];
    return o;
  }

  // Whether positions j and k hold the same block (they differ only along unnamed axes).
  bool same_block(std::size_t j, std::size_t k, std::size_t rank) const {
    for (std::size_t d = 0; d < rank; ++d)
      if (block_index(j, d) != block_index(k, d)) return false;
    return true;
  }

 private:
  Mesh mesh_;
  PartitionSpec spec_;
};

}  // namespace kax
