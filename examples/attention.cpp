// examples/attention.cpp — the seed's attention body, softmax(einsum(Q, K) * scale) @ V.
//
// In JAX:  s = jnp.einsum("...qd,...kd->...qk", q, k) * scale
//          o = jax.nn.softmax(s, axis=-1) @ v
// kax plans it as a few stages: the scores (a batched GEMM), softmax's max and sum (reductions
// computed once each), the normalized probabilities (one fused elementwise kernel feeding the
// second GEMM), and the output GEMM.  The program prints the plan and checks every output
// against a naive triple loop in double precision.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "kax/kax.hpp"
#include "kax/nn.hpp"

int main(int argc, char* argv[]) {
  kax::ScopeGuard guard(argc, argv);
  const std::size_t batch = 2, heads = 4, tq = 96, tk = 128, d = 64;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));

  auto fill = [](auto& a, double seed) {
    float* p = a.data();
    for (std::size_t i = 0; i < a.size(); ++i) p[i] = static_cast<float>(std::sin(seed + 0.37 * i));
  };
  kax::Array<float, 4> q(batch, heads, tq, d), k(batch, heads, tk, d), v(batch, heads, tk, d);
  fill(q, 0.1);
  fill(k, 1.7);
  fill(v, 2.3);

  // The body, written once; nothing runs until the assignment.
  auto attention = [scale](const auto& q, const auto& k, const auto& v) {
    auto scores = kax::einsum<"...qd,...kd->...qk">(q, k) * scale;
    return kax::matmul(kax::nn::softmax(scores, -1), v);
  };
  auto out_expr = attention(q, k, v);
  std::printf("plan of softmax(einsum(Q, K) * scale) @ V:\n%s\n\n", kax::plan_of(out_expr).c_str());
  kax::Array<float, 4> out = out_expr;

  // Naive reference in double.
  double max_err = 0;
  std::vector<double> s(tk);
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t h = 0; h < heads; ++h)
      for (std::size_t i = 0; i < tq; ++i) {
        double m = -INFINITY, z = 0;
        for (std::size_t j = 0; j < tk; ++j) {
          double acc = 0;
          for (std::size_t c = 0; c < d; ++c) acc += double(q(b, h, i, c)) * k(b, h, j, c);
          s[j] = acc * scale;
          m = std::max(m, s[j]);
        }
        for (std::size_t j = 0; j < tk; ++j) z += (s[j] = std::exp(s[j] - m));
        for (std::size_t c = 0; c < d; ++c) {
          double o = 0;
          for (std::size_t j = 0; j < tk; ++j) o += s[j] / z * v(b, h, j, c);
          max_err = std::max(max_err, std::abs(o - out(b, h, i, c)));
        }
      }
  std::printf("output (%zu, %zu, %zu, %zu), out(1, 2, 3, 4) = %.6f, max |kax - naive| = %.2e\n",
              batch, heads, tq, d, out(1, 2, 3, 4), max_err);
  return max_err < 1e-5 ? 0 : 1;
}
