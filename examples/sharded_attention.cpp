// examples/sharded_attention.cpp — sharded matmuls and attention on a 2x2 device mesh, with
// kax::shard_map and collectives over the mesh axes, and with kax::jit.
//
// The mesh is kax::make_mesh({2, 2}, {"x", "y"}) (JAX: jax.make_mesh((2, 2), ("x", "y"))).
// 1. A sharded matmul: A's rows split over "x", B's columns over "y"; every device multiplies its
//    blocks and holds one block of C = A @ B, laid out as P("x", "y").  No communication.
// 2. A matmul over a sharded contraction: A is P("x", "y"), B is P("y", None), so each device
//    holds a slice of the contracted axis and computes a partial product; psum over "y" adds the
//    partial products, and C comes out P("x", None) (replicated over "y").  Then C is resharded.
// 3. Multi-head attention with the heads split over both mesh axes: q, k and v are
//    P(("x", "y"), None, None), each device runs softmax(q k^T / sqrt(d)) v on its heads, and a
//    pmean over both axes gives the mean of the whole output.
// 4. The same with kax::jit: whole-array functions and shardings; kax partitions them and inserts
//    the psum of part 2 itself.
// Devices are host devices: 4 unless KAX_HOST_DEVICES says otherwise; built with MPI
// (built with MPI where it is found, run under mpirun -np 2 with KAX_HOST_DEVICES=2), the mesh spans both
// processes.  Every part checks its result against naive loops (and part 3 against the unsharded
// kax evaluation), prints the largest error, and the program exits non-zero on a mismatch.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "kax/kax.hpp"

namespace {

bool report(const char* what, double err, double tol) {
  const bool ok = err <= tol;
  if (kax::process_index() == 0) std::printf("  %-60s max error %.2e  %s\n", what, err, ok ? "ok" : "MISMATCH");
  return ok;
}

template <class... A>
void say(const char* format, A... args) {
  if (kax::process_index() == 0) std::printf(format, args...);
}

// Fixed pseudo-random values in [-1, 1] (the same on every process, as shard_map's inputs must be).
template <std::size_t R>
kax::Array<float, R> filled(const kax::shape<R>& ext, double seed) {
  auto a = kax::zeros<float>(ext);
  float* p = a.data();
  for (std::size_t i = 0; i < a.size(); ++i) p[i] = static_cast<float>(std::sin(seed + 0.37 * static_cast<double>(i)));
  return a;
}

// The largest |c - a @ b| over all entries, with a @ b computed in double by plain loops.
double matmul_error(const kax::Array<float, 2>& a, const kax::Array<float, 2>& b, const kax::Array<float, 2>& c) {
  const auto [m, k] = a.extents();
  const std::size_t n = b.extents()[1];
  double err = 0;
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      double acc = 0;
      for (std::size_t l = 0; l < k; ++l) acc += static_cast<double>(a(i, l)) * b(l, j);
      err = std::max(err, std::abs(acc - c(i, j)));
    }
  return err;
}

// Prints where each of this process's blocks starts and which device holds it.
template <class T, std::size_t R>
void show_shards(const char* name, const kax::ShardedArray<T, R>& s) {
  say("  %s: shape %s, %s, blocks of shape %s\n", name, kax::shape_string(s.extents()).c_str(),
      s.sharding().spec().to_string().c_str(), kax::shape_string(s.block_shape()).c_str());
  if (kax::process_index() != 0) return;
  for (const auto& shard : s.addressable_shards())
    std::printf("    %s holds the block at %s\n", shard.device.to_string().c_str(), kax::shape_string(shard.offset).c_str());
}

// 1. C = A @ B with A's rows over "x" and B's columns over "y": device (i, j) computes block (i, j).
bool sharded_matmul(const kax::Mesh& mesh) {
  say("1. sharded matmul, C[P(x, y)] = A[P(x, None)] @ B[P(None, y)]\n");
  const auto a = filled<2>({64, 48}, 0.1);
  const auto b = filled<2>({48, 80}, 1.7);
  // A is put on the devices first (jax.device_put); B is passed as a global array and shard_map
  // takes each device's block of it.
  const auto a_sharded = kax::device_put(a, kax::NamedSharding(mesh, kax::P("x", kax::none)));
  show_shards("A", a_sharded);
  auto matmul = kax::shard_map([](auto a_block, auto b_block) { return kax::matmul(a_block, b_block); }, mesh,
                               kax::in_specs(kax::P("x", kax::none), kax::P(kax::none, "y")),
                               kax::out_specs(kax::P("x", "y")));
  const kax::ShardedArray<float, 2> c = matmul(a_sharded, b);
  show_shards("C", c);
  return report("A @ B, blocks (32, 48) @ (48, 40)", matmul_error(a, b, kax::to_host(c)), 1e-4);
}

// 2. C = A @ B with the contracted axis split over "y": each device holds a (32, 24) @ (24, 80)
//    partial product and psum over "y" adds the two partial products of its row of the mesh.
bool contracted_matmul(const kax::Mesh& mesh) {
  say("2. matmul over a sharded contraction, C[P(x, None)] = psum_y(A[P(x, y)] @ B[P(y, None)])\n");
  const auto a = filled<2>({64, 48}, 2.3);
  const auto b = filled<2>({48, 80}, 3.1);
  auto matmul = kax::shard_map([](auto a_block, auto b_block) { return kax::psum<"y">(kax::matmul(a_block, b_block)); },
                               mesh, kax::in_specs(kax::P("x", "y"), kax::P("y", kax::none)),
                               kax::out_specs(kax::P("x", kax::none)));
  const kax::ShardedArray<float, 2> c = matmul(a, b);
  show_shards("C", c);
  bool ok = report("psum over y of the partial products", matmul_error(a, b, kax::to_host(c)), 1e-4);

  // Resharding to P(None, "y") goes through the global array; every device then holds all rows
  // of half of the columns.
  const auto by_columns = kax::device_put(c, kax::NamedSharding(mesh, kax::P(kax::none, "y")));
  show_shards("C resharded", by_columns);
  const kax::Array<float, 2> global = kax::to_host(c);
  double err = 0;
  for (const auto& shard : by_columns.addressable_shards()) {
    const auto [rows, cols] = shard.data.extents();
    for (std::size_t i = 0; i < rows; ++i)
      for (std::size_t j = 0; j < cols; ++j)
        err = std::max(err, static_cast<double>(std::abs(shard.data(i, j) - global(shard.offset[0] + i, shard.offset[1] + j))));
  }
  ok &= report("resharded blocks == slices of the global C", err, 0);
  return ok;
}

// 3. Multi-head attention, (batch * heads, tokens, head dim), the heads split over both mesh axes.
bool sharded_attention(const kax::Mesh& mesh) {
  const std::size_t heads = 8, tokens = 32, dim = 16;
  const float scale = 1.0f / std::sqrt(static_cast<float>(dim));
  say("3. attention, %zu heads over P((x, y), None, None), %zu tokens, head dim %zu\n", heads, tokens, dim);
  const auto q = filled<3>({heads, tokens, dim}, 0.3);
  const auto k = filled<3>({heads, tokens, dim}, 1.1);
  const auto v = filled<3>({heads, tokens, dim}, 2.9);

  // One device's program: its heads' attention, and the mean of the whole output (pmean over both
  // mesh axes; all blocks have the same size, so the mean of the means is the global mean).
  auto attention = [scale](const auto& qs, const auto& ks, const auto& vs) {
    auto scores = kax::einsum<"hqd,hkd->hqk">(qs, ks) * scale;
    return kax::matmul(kax::nn::softmax(scores, -1), vs);
  };
  auto per_device = [&attention](const auto& qs, const auto& ks, const auto& vs) {
    kax::Array<float, 3> out = attention(qs, ks, vs);
    return std::make_tuple(out, kax::pmean<"x">(kax::pmean<"y">(kax::mean(out))));
  };
  const kax::PartitionSpec heads_split = kax::P({"x", "y"}, kax::none, kax::none);
  auto sharded = kax::shard_map(per_device, mesh, kax::in_specs(heads_split, heads_split, heads_split),
                                kax::out_specs(heads_split, kax::P()));
  const auto [out_sharded, mean_sharded] = sharded(q, k, v);
  show_shards("out", out_sharded);
  const kax::Array<float, 3> out = kax::to_host(out_sharded);
  const float mean = kax::to_host(mean_sharded)();

  // The same attention, unsharded.
  const kax::Array<float, 3> unsharded = attention(q, k, v);
  double err_kax = 0;
  for (std::size_t h = 0; h < heads; ++h)
    for (std::size_t i = 0; i < tokens; ++i)
      for (std::size_t c = 0; c < dim; ++c) err_kax = std::max(err_kax, static_cast<double>(std::abs(out(h, i, c) - unsharded(h, i, c))));
  bool ok = report("sharded == unsharded kax evaluation", err_kax, 1e-6);

  // Naive loops in double.
  double err = 0, total = 0;
  std::vector<double> s(tokens);
  for (std::size_t h = 0; h < heads; ++h)
    for (std::size_t i = 0; i < tokens; ++i) {
      double m = -INFINITY, z = 0;
      for (std::size_t j = 0; j < tokens; ++j) {
        double acc = 0;
        for (std::size_t c = 0; c < dim; ++c) acc += static_cast<double>(q(h, i, c)) * k(h, j, c);
        s[j] = acc * scale;
        m = std::max(m, s[j]);
      }
      for (std::size_t j = 0; j < tokens; ++j) z += (s[j] = std::exp(s[j] - m));
      for (std::size_t c = 0; c < dim; ++c) {
        double o = 0;
        for (std::size_t j = 0; j < tokens; ++j) o += s[j] / z * v(h, j, c);
        err = std::max(err, std::abs(o - out(h, i, c)));
        total += o;
      }
    }
  ok &= report("sharded == naive loops (double)", err, 1e-5);
  ok &= report("pmean over x, y of the blocks' means == mean of the output",
               std::abs(mean - total / static_cast<double>(heads * tokens * dim)), 1e-6);
  return ok;
}


// 4. The same three computations with kax::jit: whole-array functions, with the shardings of the
//    arguments and results given, and kax choosing each device's work and the collectives
//    (jax.jit with in_shardings / out_shardings).  explain() lists the collectives it inserted.
bool jitted(const kax::Mesh& mesh) {
  say("4. kax::jit with shardings: whole-array functions, collectives inserted by kax\n");
  auto S = [&mesh](const kax::PartitionSpec& p) { return kax::NamedSharding(mesh, p); };
  const auto a = filled<2>({64, 48}, 0.5);
  const auto b = filled<2>({48, 80}, 1.5);
  auto matmul = [](const auto& x, const auto& y) { return kax::matmul(x, y); };

  auto blocks = kax::jit(matmul, kax::in_shardings(S(kax::P("x", kax::none)), S(kax::P(kax::none, "y"))),
                         kax::out_shardings(S(kax::P("x", "y"))));
  say("  matmul, P(x, None) @ P(None, y) -> P(x, y): %s", blocks.explain(a, b).c_str());
  bool ok = report("A @ B", matmul_error(a, b, kax::to_host(blocks(a, b))), 1e-5);

  auto contracted = kax::jit(matmul, kax::in_shardings(S(kax::P("x", "y")), S(kax::P("y", kax::none))),
                             kax::out_shardings(S(kax::P("x", kax::none))));
  say("  matmul, P(x, y) @ P(y, None) -> P(x, None): %s", contracted.explain(a, b).c_str());
  ok &= report("A @ B with the contraction split over y", matmul_error(a, b, kax::to_host(contracted(a, b))), 1e-5);

  const std::size_t heads = 8, tokens = 32, dim = 16;
  const float scale = 1.0f / std::sqrt(static_cast<float>(dim));
  const auto q = filled<3>({heads, tokens, dim}, 0.3);
  const auto k = filled<3>({heads, tokens, dim}, 1.1);
  const auto v = filled<3>({heads, tokens, dim}, 2.9);
  auto attention = [scale](const auto& qs, const auto& ks, const auto& vs) {
    return kax::matmul(kax::nn::softmax(kax::einsum<"hqd,hkd->hqk">(qs, ks) * scale, -1), vs);
  };
  const kax::NamedSharding split = S(kax::P({"x", "y"}, kax::none, kax::none));
  auto sharded = kax::jit(attention, kax::in_shardings(split, split, split), kax::out_shardings(split));
  say("  attention, heads over P((x, y), None, None): %s", sharded.explain(q, k, v).c_str());
  const kax::Array<float, 3> out = kax::to_host(sharded(q, k, v));
  const kax::Array<float, 3> unsharded = attention(q, k, v);
  double err = 0;
  for (std::size_t i = 0; i < out.size(); ++i)
    err = std::max(err, static_cast<double>(std::abs(out.data()[i] - unsharded.data()[i])));
  ok &= report("attention == unsharded kax evaluation", err, 1e-6);
  return ok;
}

}  // namespace

int main(int argc, char* argv[]) {
  // A 2x2 mesh needs 4 devices: 4 host devices unless KAX_HOST_DEVICES sets the number (the MPI
  // test runs 2 processes with 2 devices each).
  if (!std::getenv("KAX_HOST_DEVICES")) kax::initialize({.host_devices = 4});
  kax::ScopeGuard guard(argc, argv);
  try {
    const kax::Mesh mesh = kax::make_mesh({2, 2}, {"x", "y"});
    if (kax::process_index() == 0) {
      std::printf("%s over %d process(es):", mesh.to_string().c_str(), kax::process_count());
      for (std::size_t p = 0; p < mesh.size(); ++p) {
        const auto c = mesh.coords(p);
        std::printf(" %s (x=%zu, y=%zu)%s", mesh.devices()[p].to_string().c_str(), c[0], c[1],
                    p + 1 < mesh.size() ? "," : "\n");
      }
    }
    bool ok = true;
    ok &= sharded_matmul(mesh);
    ok &= contracted_matmul(mesh);
    ok &= sharded_attention(mesh);
    ok &= jitted(mesh);
    say("%s\n", ok ? "all checks passed" : "SOME CHECKS FAILED");
    return ok ? 0 : 1;
  } catch (const kax::error& e) {
    std::fprintf(stderr, "sharded_attention: %s\n", e.what());
    return 1;
  }
}
