// kax::grad / kax::value_and_grad: every op's gradient against central finite differences in
// double precision on random inputs, small cases worked by hand, argnums / has_aux / pytrees,
// stop_gradient, the errors, and the kernels a gradient costs.
//
// Finite differences: h = 1e-6 relative to the element, central, so the truncation error is
// O(h^2 f''') ~ 1e-12 and the rounding error ~ 1e-16 / 1e-6 = 1e-10; gradients must agree to
// 1e-6 relative (plus 1e-8 absolute).
#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "kax/kax.hpp"
#include "support/launch_counter.hpp"

namespace {

using kax_test::launch_counter;

template <std::size_t R>
kax::Array<double, R> random_array(const kax::shape<R>& s, unsigned seed, double lo = -2.0, double hi = 2.0) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::size_t n = 1;
  for (auto e : s) n *= e;
  std::vector<double> v(n);
  for (auto& e : v) {
    e = u(gen);
    if (lo < 0 && std::abs(e) < 0.05) e += 0.1;  // away from kinks at 0
  }
  return kax::from(v, s);
}

template <class E>
double scalar_value(const E& e) {
  kax::Array<double, 0> v = e;
  return v();
}

// d f / d x by central differences, element by element (x is modified and restored).
template <std::size_t R, class F>
std::vector<double> finite_difference(const F& f, kax::Array<double, R>& x) {
  std::vector<double> g(x.size());
  double* p = x.data();
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double x0 = p[i];
    const double h = 1e-6 * std::max(1.0, std::abs(x0));
    p[i] = x0 + h;
    const double up = scalar_value(f(x));
    p[i] = x0 - h;
    const double down = scalar_value(f(x));
    p[i] = x0;
    g[i] = (up - down) / (2 * h);
  }
  return g;
}

template <std::size_t R>
void require_close(const kax::Array<double, R>& got, const std::vector<double>& want, double rel = 1e-6) {
  const std::vector<double> v = kax::to_vector(got);
  REQUIRE(v.size() == want.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    INFO("element " << i << ": grad " << v[i] << ", finite difference " << want[i]);
    REQUIRE(std::abs(v[i] - want[i]) <= rel * std::abs(want[i]) + 1e-8);
  }
}

// kax::grad(f)(x) against finite differences of f at x.
template <std::size_t R, class F>
void check_grad(const F& f, kax::Array<double, R> x) {
  const kax::Array<double, R> g = kax::grad(f)(x);
  REQUIRE(g.extents() == x.extents());
  require_close(g, finite_difference(f, x));
}

}  // namespace

TEST_CASE("grad of a tiny hand-worked function", "[grad]") {
  // f(x) = sum(x^2 * 3 + sin(x)) at x = (0, 1, 2): f'(x) = 6x + cos(x).
  kax::Array<double, 1> x = kax::from(std::vector<double>{0, 1, 2}, kax::shape<1>{3});
  auto f = [](const auto& v) { return kax::sum(kax::square(v) * 3.0 + kax::sin(v)); };
  const auto g = kax::to_vector(kax::grad(f)(x));
  REQUIRE(g[0] == Approx(1.0));
  REQUIRE(g[1] == Approx(6 + std::cos(1.0)));
  REQUIRE(g[2] == Approx(12 + std::cos(2.0)));
  auto [value, g2] = kax::value_and_grad(f)(x);
  REQUIRE(value() == Approx(0 + 3 + 12 + std::sin(1.0) + std::sin(2.0)));
  REQUIRE(kax::to_vector(g2) == g);
}

TEST_CASE("grad of a matmul worked by hand", "[grad]") {
  // L = sum(x @ w) with x (2, 3), w (3, 2): dL/dw[k][n] = sum_m x[m][k]; dL/dx[m][k] = sum_n w[k][n].
  kax::Array<double, 2> x = kax::from(std::vector<double>{1, 2, 3, 4, 5, 6}, kax::shape<2>{2, 3});
  kax::Array<double, 2> w = kax::from(std::vector<double>{1, -1, 2, 0, 0.5, 3}, kax::shape<2>{3, 2});
  auto f = [](const auto& a, const auto& b) { return kax::sum(kax::matmul(a, b)); };
  auto [dx, dw] = kax::grad(f, kax::argnums<0, 1>)(x, w);
  REQUIRE(kax::to_vector(dw) == std::vector<double>{5, 5, 7, 7, 9, 9});
  REQUIRE(kax::to_vector(dx) == std::vector<double>{0, 2, 3.5, 0, 2, 3.5});
}

TEST_CASE("grad of each unary function matches finite differences", "[grad]") {
  const kax::shape<2> s{3, 4};
  check_grad([](const auto& v) { return kax::sum(-v * v); }, random_array(s, 1));
  check_grad([](const auto& v) { return kax::sum(kax::abs(v) * v); }, random_array(s, 2));
  check_grad([](const auto& v) { return kax::sum(kax::square(v)); }, random_array(s, 3));
  check_grad([](const auto& v) { return kax::sum(kax::sqrt(v)); }, random_array(s, 4, 0.5, 3.0));
  check_grad([](const auto& v) { return kax::sum(kax::sin(v)); }, random_array(s, 5));
  check_grad([](const auto& v) { return kax::sum(kax::cos(v)); }, random_array(s, 6));
  check_grad([](const auto& v) { return kax::sum(kax::exp(v)); }, random_array(s, 7));
  check_grad([](const auto& v) { return kax::sum(kax::log(v)); }, random_array(s, 8, 0.5, 3.0));
  check_grad([](const auto& v) { return kax::sum(kax::tanh(v)); }, random_array(s, 9));
  check_grad([](const auto& v) { return kax::sum(kax::astype<double>(v) * v); }, random_array(s, 10));
  check_grad([](const auto& v) { return kax::sum(kax::nn::relu(v) * v); }, random_array(s, 11));
  check_grad([](const auto& v) { return kax::sum(kax::nn::sigmoid(v)); }, random_array(s, 12));
  check_grad([](const auto& v) { return kax::sum(kax::nn::silu(v)); }, random_array(s, 13));
  check_grad([](const auto& v) { return kax::sum(kax::nn::gelu(v)); }, random_array(s, 14));
  check_grad([](const auto& v) { return kax::sum(kax::nn::gelu(v, false)); }, random_array(s, 15));
  check_grad([](const auto& v) { return kax::sum(kax::nn::gelu(v, true) * 2.0); }, random_array(s, 16));
}

TEST_CASE("grad of each binary function matches finite differences, with broadcasting", "[grad]") {
  const kax::Array<double, 2> c = random_array(kax::shape<2>{3, 4}, 20, 0.5, 2.0);
  const kax::Array<double, 1> r = random_array(kax::shape<1>{4}, 21, 0.5, 2.0);
  // x broadcast against c: (4,) and (3, 1) operands, and full-shape ones.
  check_grad([&](const auto& v) { return kax::sum((c + v) * (v - c)); }, random_array(kax::shape<1>{4}, 22));
  check_grad([&](const auto& v) { return kax::sum(c * v); }, random_array(kax::shape<2>{3, 1}, 23));
  check_grad([&](const auto& v) { return kax::sum(c / v + v / c); }, random_array(kax::shape<2>{3, 4}, 24, 0.5, 2.0));
  check_grad([&](const auto& v) { return kax::sum(kax::pow(v, c)); }, random_array(kax::shape<2>{3, 4}, 25, 0.5, 2.0));
  check_grad([&](const auto& v) { return kax::sum(kax::pow(c, v)); }, random_array(kax::shape<1>{4}, 26));
  check_grad([&](const auto& v) { return kax::sum(kax::pow(v, 3.0)); }, random_array(kax::shape<1>{4}, 27));
  check_grad([&](const auto& v) { return kax::sum(kax::maximum(v, c) + kax::minimum(c, v * 2.0)); },
             random_array(kax::shape<2>{3, 4}, 28));
  check_grad([&](const auto& v) { return kax::sum(kax::where(v > r, v * v, c * v)); },
             random_array(kax::shape<2>{3, 4}, 29));
  check_grad([&](const auto& v) { return kax::sum(2.0 - v / 3.0 + 1.0 / v); }, random_array(kax::shape<0>{}, 30, 0.5, 2.0));
  // A scalar parameter broadcast over a matrix (the sum over everything).
  check_grad([&](const auto& v) { return kax::sum(kax::exp(c * v)); }, random_array(kax::shape<0>{}, 31, 0.1, 1.0));
}

TEST_CASE("grad of reductions matches finite differences", "[grad]") {
  const kax::shape<3> s{2, 3, 4};
  check_grad([](const auto& v) { return kax::sum(kax::square(kax::sum(v, 1))); }, random_array(s, 40));
  check_grad([](const auto& v) { return kax::sum(kax::exp(kax::mean(v, 0, 2))); }, random_array(s, 41));
  check_grad([](const auto& v) { return kax::mean(kax::sin(v)); }, random_array(s, 42));
  check_grad([](const auto& v) { return kax::sum(kax::max(v, 2) * 2.0) + kax::sum(kax::square(kax::min(v, 0, kax::keepdims))); },
             random_array(s, 43));
  check_grad([](const auto& v) { return kax::max(v); }, random_array(s, 44));
  check_grad([](const auto& v) { return kax::sum(kax::prod(v, 1)); }, random_array(s, 45, 0.5, 1.5));
  check_grad([](const auto& v) { return kax::prod(v); }, random_array(kax::shape<1>{5}, 46, 0.5, 1.5));
}

TEST_CASE("grad of max shares the cotangent between ties", "[grad]") {
  // jax.grad(jnp.max)([1., 3., 3.]) == [0, 0.5, 0.5]
  kax::Array<double, 1> x = kax::from(std::vector<double>{1, 3, 3}, kax::shape<1>{3});
  REQUIRE(kax::to_vector(kax::grad([](const auto& v) { return kax::max(v); })(x)) == std::vector<double>{0, 0.5, 0.5});
  // jax.grad(lambda v: jnp.sum(jnp.maximum(v, 3.)))([1., 3., 4.]) == [0, 0.5, 1]
  kax::Array<double, 1> y = kax::from(std::vector<double>{1, 3, 4}, kax::shape<1>{3});
  REQUIRE(kax::to_vector(kax::grad([](const auto& v) { return kax::sum(kax::maximum(v, 3.0)); })(y)) ==
          std::vector<double>{0, 0.5, 1});
}

TEST_CASE("grad of contractions matches finite differences", "[grad]") {
  const kax::Array<double, 2> w = random_array(kax::shape<2>{4, 5}, 50);
  const kax::Array<double, 3> b3 = random_array(kax::shape<3>{2, 4, 5}, 51);
  const kax::Array<double, 1> u = random_array(kax::shape<1>{4}, 52);
  check_grad([&](const auto& v) { return kax::sum(kax::sin(kax::matmul(v, w))); }, random_array(kax::shape<2>{3, 4}, 53));
  check_grad([&](const auto& v) { return kax::sum(kax::sin(kax::matmul(v, w))); }, random_array(kax::shape<1>{4}, 54));
  check_grad([&](const auto& v) { return kax::sum(kax::square(kax::matmul(w, v))); }, random_array(kax::shape<1>{5}, 55));
  // Batched matmul with a broadcast batch axis on each side.
  check_grad([&](const auto& v) { return kax::sum(kax::tanh(kax::matmul(v, b3))); }, random_array(kax::shape<2>{3, 4}, 56));
  check_grad([&](const auto& v) { return kax::sum(kax::tanh(kax::matmul(v, b3))); },
             random_array(kax::shape<3>{1, 3, 4}, 57));
  check_grad([&](const auto& v) { return kax::sum(kax::tanh(kax::matmul(b3, v))); }, random_array(kax::shape<2>{5, 3}, 58));
  check_grad([&](const auto& v) { return kax::square(kax::dot(v, u)); }, random_array(kax::shape<1>{4}, 59));
  check_grad([&](const auto& v) { return kax::sum(kax::exp(kax::dot(v, w))); }, random_array(kax::shape<2>{2, 4}, 60));
  check_grad([&](const auto& v) { return kax::sum(kax::cos(kax::einsum<"bij,bjk->bik">(v, b3))); },
             random_array(kax::shape<3>{2, 3, 4}, 61));
  check_grad([&](const auto& v) { return kax::sum(kax::cos(kax::einsum<"ij,k->ijk">(v, u))); },
             random_array(kax::shape<2>{2, 3}, 62));
  check_grad([&](const auto& v) { return kax::sum(kax::cos(kax::einsum<"ijk->ki">(v))); },
             random_array(kax::shape<3>{2, 3, 4}, 63));
  check_grad([&](const auto& v) { return kax::sum(kax::cos(kax::einsum<"ij,kj->ik">(v, kax::transpose(w)))); },
             random_array(kax::shape<2>{3, 4}, 64));
}

TEST_CASE("grad through a computed matmul operand matches finite differences", "[grad]") {
  // tanh(x W1) is a GEMM operand that is not an array: the forward pass copies it for Eigen and
  // the backward pass reads that copy for W2's gradient (a matrix) or evaluates it once (a vector:
  // the matrix-vector product takes the reduction kernel, which made no copy).
  const kax::Array<double, 2> x = random_array(kax::shape<2>{6, 4}, 65);
  const kax::Array<double, 2> w1 = random_array(kax::shape<2>{4, 5}, 66, -0.7, 0.7);
  const kax::Array<double, 2> w2 = random_array(kax::shape<2>{5, 3}, 67);
  const kax::Array<double, 1> v = random_array(kax::shape<1>{5}, 68);
  auto layer = [&](const auto& w) { return kax::tanh(kax::matmul(x, w)); };
  check_grad([&](const auto& w) { return kax::sum(kax::sin(kax::matmul(layer(w1), w))); },
             random_array(kax::shape<2>{5, 3}, 69));
  check_grad([&](const auto& w) { return kax::sum(kax::sin(kax::matmul(layer(w), w2))); }, w1);
  check_grad([&](const auto& m) { return kax::sum(kax::sin(kax::matmul(m, layer(w1)))); },
             random_array(kax::shape<2>{4, 6}, 70));
  check_grad([&](const auto& u) { return kax::sum(kax::sin(kax::matmul(layer(w1), u))); }, v);
  check_grad([&](const auto& w) { return kax::sum(kax::exp(kax::matmul(layer(w), v) * 0.3)); }, w1);
  // Both weights at once, and the same product used twice (copies of one contraction).
  auto two = [&](const auto& a, const auto& b) {
    auto z = kax::matmul(kax::tanh(kax::matmul(x, a)), b);
    return kax::sum(kax::sin(z) * z);
  };
  auto [g1, g2] = kax::grad(two, kax::argnums<0, 1>)(w1, w2);
  kax::Array<double, 2> a = w1, b = w2;
  require_close(g1, finite_difference([&](const auto& p) { return two(p, w2); }, a));
  require_close(g2, finite_difference([&](const auto& p) { return two(w1, p); }, b));
}

TEST_CASE("the backward pass reads a computed matmul operand from the forward pass", "[grad][fusion]") {
  // Two layers: h = tanh(x W1), loss = sum(sin(h W2)).  Elementwise kernels of the gradient with
  // respect to (W1, W2): h for the forward GEMM, the output's cotangent cos(h W2), and
  // dh * (1 - h^2) for W1's GEMM.  h is not evaluated again for W2's gradient (h^T g).
  const kax::Array<double, 2> x = random_array(kax::shape<2>{32, 16}, 71);
  const kax::Array<double, 2> w1 = random_array(kax::shape<2>{16, 24}, 72, -0.5, 0.5);
  const kax::Array<double, 2> w2 = random_array(kax::shape<2>{24, 8}, 73);
  auto f = [&](const auto& a, const auto& b) { return kax::sum(kax::sin(kax::matmul(kax::tanh(kax::matmul(x, a)), b))); };
  (void)kax::grad(f, kax::argnums<0, 1>)(w1, w2);  // warm up
  launch_counter count;
  (void)kax::grad(f, kax::argnums<0, 1>)(w1, w2);
  INFO(launch_counter::all());
  REQUIRE(launch_counter::count_prefix("kax::eval<elementwise") == 3);
}

TEST_CASE("the forward pass keeps a GEMM operand copy only for a gradient that needs it", "[grad]") {
  // The copy of tanh(x) is the factor of the other operand's gradient: kept when that operand is
  // a traced argument, not when it is a constant.
  const kax::Array<double, 2> x = random_array(kax::shape<2>{32, 16}, 74);
  const kax::Array<double, 2> w = random_array(kax::shape<2>{16, 8}, 75);
  const kax::Array<double, 2> expected = kax::matmul(kax::tanh(x), w);
  auto forward = [&](const kax::Array<double, 2>& b) {
    kax::detail::residual_sink sink;
    kax::detail::residual_scope scope(sink);
    const kax::Array<double, 2> out = kax::matmul(kax::tanh(x), b);
    REQUIRE(kax::to_vector(out) == kax::to_vector(expected));
    return sink.kept.size();
  };
  CHECK(forward(w) == 0);
  CHECK(forward(kax::detail::tracer::traced(w, kax::detail::tracer::next_id())) == 1);
}

TEST_CASE("grad of layout operations matches finite differences", "[grad]") {
  const kax::Array<double, 2> c = random_array(kax::shape<2>{3, 4}, 70);
  check_grad([&](const auto& v) { return kax::sum(kax::transpose(v) * kax::transpose(c)); }, random_array(kax::shape<2>{3, 4}, 71));
  check_grad([&](const auto& v) { return kax::sum(kax::sin(kax::reshape(v, {4, 3})) * kax::reshape(c, {4, 3})); },
             random_array(kax::shape<2>{3, 4}, 72));
  check_grad([&](const auto& v) { return kax::sum(kax::exp(kax::expand_dims(v, 1)) * kax::expand_dims(c, 0)); },
             random_array(kax::shape<1>{3}, 73));
  check_grad([&](const auto& v) { return kax::sum(kax::sin(kax::squeeze(v, 1))); }, random_array(kax::shape<3>{3, 1, 4}, 74));
  check_grad([&](const auto& v) { return kax::sum(kax::broadcast_to(v, {2, 3, 4}) * c); }, random_array(kax::shape<2>{1, 4}, 75));
  check_grad([&](const auto& v) { return kax::sum(kax::sin(kax::slice(v, {kax::range(1, 3), kax::range(0, 4, 2)}))); },
             random_array(kax::shape<2>{3, 4}, 76));
  check_grad([&](const auto& v) { return kax::sum(kax::slice(v, {kax::range(4, 0, -2)}) * kax::arange<double>(2)); },
             random_array(kax::shape<1>{6}, 77));
  check_grad([&](const auto& v) { return kax::sum(kax::sin(kax::concatenate(std::make_tuple(v, c, v * 2.0), 0))); },
             random_array(kax::shape<2>{2, 4}, 78));
  check_grad([&](const auto& v) { return kax::sum(kax::cos(kax::stack(std::make_tuple(v, c), 1))); },
             random_array(kax::shape<2>{3, 4}, 79));
}

TEST_CASE("grad of jax.nn functions matches finite differences", "[grad]") {
  const kax::Array<double, 2> c = random_array(kax::shape<2>{3, 4}, 80);
  check_grad([&](const auto& v) { return kax::sum(kax::nn::softmax(v) * c); }, random_array(kax::shape<2>{3, 4}, 81));
  check_grad([&](const auto& v) { return kax::sum(kax::nn::log_softmax(v, 0) * c); }, random_array(kax::shape<2>{3, 4}, 82));
  check_grad([&](const auto& v) { return kax::sum(kax::nn::logsumexp(v, 1)); }, random_array(kax::shape<2>{3, 4}, 83));
  check_grad([&](const auto& v) { return kax::nn::logsumexp(v); }, random_array(kax::shape<2>{3, 4}, 84));
}

TEST_CASE("stop_gradient cuts the gradient", "[grad]") {
  kax::Array<double, 1> x = kax::from(std::vector<double>{1, 2}, kax::shape<1>{2});
  // d/dx sum(x * stop_gradient(x)) = stop_gradient(x) = x.
  auto f = [](const auto& v) { return kax::sum(v * kax::stop_gradient(v)); };
  REQUIRE(kax::to_vector(kax::grad(f)(x)) == std::vector<double>{1, 2});
  auto h = [](const auto& v) { return kax::sum(kax::stop_gradient(kax::exp(v))); };
  REQUIRE(kax::to_vector(kax::grad(h)(x)) == std::vector<double>{0, 0});
}

TEST_CASE("grad takes argnums, pytrees and has_aux as jax.grad does", "[grad]") {
  const kax::Array<double, 2> x = random_array(kax::shape<2>{4, 3}, 90);
  const kax::Array<double, 1> y = random_array(kax::shape<1>{4}, 91);
  kax::Array<double, 1> w = random_array(kax::shape<1>{3}, 92);
  kax::Array<double, 0> b = random_array(kax::shape<0>{}, 93);
  // Linear regression: L = mean((x w + b - y)^2); dL/dw = 2/n x^T r, dL/db = 2/n sum(r).
  auto loss = [](const auto& params, const auto& xs, const auto& ys) {
    const auto& [pw, pb] = params;
    return kax::mean(kax::square(kax::matmul(xs, pw) + pb - ys));
  };
  const auto params = std::make_tuple(w, b);
  auto [gw, gb] = kax::grad(loss)(params, x, y);
  const std::vector<double> xv = kax::to_vector(x), yv = kax::to_vector(y), wv = kax::to_vector(w);
  std::vector<double> r(4), want_w(3, 0.0);
  double want_b = 0;
  for (int i = 0; i < 4; ++i) {
    r[i] = b() - yv[i];
    for (int k = 0; k < 3; ++k) r[i] += xv[i * 3 + k] * wv[k];
    want_b += 2 * r[i] / 4;
    for (int k = 0; k < 3; ++k) want_w[k] += 2 * xv[i * 3 + k] * r[i] / 4;
  }
  require_close(gw, want_w, 1e-12);
  REQUIRE(gb() == Approx(want_b).epsilon(1e-12));

  // argnums<0, 2>: a tuple of the two gradients; the data argument 1 is a constant.
  auto [g0, g2] = kax::grad(loss, kax::argnums<0, 2>)(params, x, y);
  require_close(std::get<0>(g0), want_w, 1e-12);
  std::vector<double> want_y(4);
  for (int i = 0; i < 4; ++i) want_y[i] = -2 * r[i] / 4;
  require_close(g2, want_y, 1e-12);

  // std::array parameters, value_and_grad, has_aux with an expression and a plain value.
  std::array<kax::Array<double, 1>, 2> pair{w, w};
  auto with_aux = [&](const auto& p, double scale) {
    auto pred = kax::matmul(x, p[0]) * scale + kax::matmul(x, p[1]);
    return std::make_pair(kax::sum(kax::square(pred)), std::make_tuple(pred, 42));
  };
  auto [value_aux, grads] = kax::value_and_grad(with_aux, kax::has_aux)(pair, 2.0);
  const auto& [value, aux] = value_aux;
  const auto pred = kax::to_vector(std::get<0>(aux));
  double want_value = 0;
  for (double p : pred) want_value += p * p;
  REQUIRE(value() == Approx(want_value).epsilon(1e-12));
  REQUIRE(std::get<1>(aux) == 42);
  // d/dp0 = 2 * scale * x^T pred, d/dp1 = 2 x^T pred.
  std::vector<double> want_p1(3, 0.0);
  for (int i = 0; i < 4; ++i)
    for (int k = 0; k < 3; ++k) want_p1[k] += 2 * xv[i * 3 + k] * pred[i];
  std::vector<double> want_p0 = want_p1;
  for (auto& e : want_p0) e *= 2.0;
  require_close(grads[0], want_p0, 1e-12);
  require_close(grads[1], want_p1, 1e-12);
  auto [g_only, aux2] = kax::grad(with_aux, kax::has_aux)(pair, 2.0);
  require_close(g_only[1], want_p1, 1e-12);
  REQUIRE(std::get<1>(aux2) == 42);
}

TEST_CASE("grad of an argument f does not use is zero; one array passed twice gets two gradients", "[grad]") {
  kax::Array<double, 1> x = kax::from(std::vector<double>{1, 2, 3}, kax::shape<1>{3});
  auto f = [](const auto& a, const auto& /*b*/) { return kax::sum(a * 2.0); };
  auto [ga, gb] = kax::grad(f, kax::argnums<0, 1>)(x, x);
  REQUIRE(kax::to_vector(ga) == std::vector<double>{2, 2, 2});
  REQUIRE(kax::to_vector(gb) == std::vector<double>{0, 0, 0});
  auto h = [](const auto& a, const auto& b) { return kax::sum(a * b); };
  auto [ha, hb] = kax::grad(h, kax::argnums<0, 1>)(x, x);
  REQUIRE(kax::to_vector(ha) == std::vector<double>{1, 2, 3});
  REQUIRE(kax::to_vector(hb) == std::vector<double>{1, 2, 3});
  // A closure's array is a constant even when it is the argument's buffer (JAX's semantics).
  auto k = [&x](const auto& a) { return kax::sum(a * x); };
  REQUIRE(kax::to_vector(kax::grad(k)(x)) == std::vector<double>{1, 2, 3});
}

TEST_CASE("grad in float matches the double gradient", "[grad]") {
  const kax::Array<double, 2> xd = random_array(kax::shape<2>{8, 16}, 95);
  const kax::Array<double, 2> wd = random_array(kax::shape<2>{16, 4}, 96);
  const kax::Array<float, 2> xf = kax::astype<float>(xd);
  const kax::Array<float, 2> wf = kax::astype<float>(wd);
  auto f = [](const auto& w, const auto& x) { return kax::mean(kax::nn::gelu(kax::matmul(x, w)) * 0.5); };
  const auto gd = kax::to_vector(kax::grad(f)(wd, xd));
  const auto gf = kax::to_vector(kax::grad(f)(wf, xf));
  for (std::size_t i = 0; i < gd.size(); ++i) REQUIRE(gf[i] == Approx(gd[i]).margin(1e-5));
}

TEST_CASE("the gradient of an elementwise chain is one kernel", "[grad][fusion]") {
  kax::Array<double, 1> x = random_array(kax::shape<1>{1000}, 97);
  auto f = [](const auto& v) { return kax::sum(kax::exp(kax::sin(v) * 2.0 + 1.0)); };
  (void)kax::grad(f)(x);  // warm up
  launch_counter count;
  const kax::Array<double, 1> g = kax::grad(f)(x);
  // The forward reduction (one kernel, or two for a multi-block sum), then one gradient kernel.
  INFO(launch_counter::all());
  REQUIRE(launch_counter::kernels <= 3);
  REQUIRE(launch_counter::kernels >= 2);
  std::vector<double> want(1000);
  const auto xv = kax::to_vector(x);
  for (int i = 0; i < 1000; ++i) want[i] = std::exp(std::sin(xv[i]) * 2 + 1) * 2 * std::cos(xv[i]);
  require_close(g, want, 1e-12);
}

TEST_CASE("grad's errors", "[grad]") {
  kax::Array<double, 2> x = random_array(kax::shape<2>{2, 3}, 98);
  // Evaluating a traced argument inside f would silently cut the gradient: it throws instead.
  auto eager = [](const auto& v) {
    const kax::Array<double, 2> h = kax::sin(v);
    return kax::sum(h * v);
  };
  REQUIRE_THROWS_AS(kax::grad(eager)(x), kax::tracer_error);
  // Evaluating constants inside f is fine, and the tracing state is reset after a throw.
  auto constant_eval = [&x](const auto& v) {
    const kax::Array<double, 2> c = kax::cos(x);
    return kax::sum(c * v);
  };
  REQUIRE(kax::to_vector(kax::grad(constant_eval)(x)) == kax::to_vector(kax::Array<double, 2>(kax::cos(x))));
  // einsum with a repeated subscript (a trace): differentiating it is reported, not silently wrong.
  auto trace = [](const auto& v) { return kax::sum(kax::einsum<"ii->i">(kax::matmul(v, kax::transpose(v)))); };
  REQUIRE_THROWS_AS(kax::grad(trace)(x), kax::shape_error);
}

TEST_CASE("vmap(grad(f)) gives per-example gradients", "[grad][vmap]") {
  const kax::Array<double, 2> x = random_array(kax::shape<2>{5, 3}, 100);
  const kax::Array<double, 1> y = random_array(kax::shape<1>{5}, 101);
  const kax::Array<double, 1> w = random_array(kax::shape<1>{3}, 102);
  const kax::Array<double, 0> b = random_array(kax::shape<0>{}, 103);
  // One example: (tanh(x . w + b) - y)^2.
  auto loss = [](const auto& params, const auto& xe, const auto& ye) {
    const auto& [pw, pb] = params;
    return kax::sum(kax::square(kax::tanh(kax::dot(xe, pw) + pb) - ye));
  };
  const auto params = std::make_tuple(w, b);
  auto [gw, gb] = kax::vmap(kax::grad(loss), kax::in_axes(kax::none, 0, 0))(params, x, y);
  REQUIRE(gw.extents() == kax::shape<2>{5, 3});
  REQUIRE(gb.extents() == kax::shape<1>{5});
  // Against a loop of grad over the examples.
  const auto gwv = kax::to_vector(gw), gbv = kax::to_vector(gb);
  auto [values, grads] = kax::vmap(kax::value_and_grad(loss), kax::in_axes(kax::none, 0, 0))(params, x, y);
  REQUIRE(values.extents() == kax::shape<1>{5});
  const auto vv = kax::to_vector(values);
  for (long e = 0; e < 5; ++e) {
    const kax::Array<double, 1> xe = kax::squeeze(kax::slice(x, {kax::range(e, e + 1), kax::colon}), 0);
    const kax::Array<double, 0> ye = kax::squeeze(kax::slice(y, {kax::range(e, e + 1)}), 0);
    auto [v, g] = kax::value_and_grad(loss)(params, xe, ye);
    const auto gwe = kax::to_vector(std::get<0>(g));
    for (std::size_t k = 0; k < 3; ++k) REQUIRE(gwv[e * 3 + k] == Approx(gwe[k]).epsilon(1e-12));
    REQUIRE(gbv[e] == Approx(std::get<1>(g)()).epsilon(1e-12));
    REQUIRE(vv[e] == Approx(v()).epsilon(1e-12));
  }
  REQUIRE(kax::to_vector(std::get<0>(grads)) == gwv);
  // A mapped differentiated argument along axis 1: its per-example gradients, batch axis first.
  const kax::Array<double, 2> xt = kax::transpose(x);
  auto xgrad = kax::vmap(kax::grad(loss, kax::argnums<1>), kax::in_axes(kax::none, 1, 0))(params, xt, y);
  REQUIRE(xgrad.extents() == kax::shape<2>{5, 3});
  const auto xg = kax::to_vector(xgrad);
  for (long e = 0; e < 5; ++e) {
    const kax::Array<double, 1> xe = kax::squeeze(kax::slice(x, {kax::range(e, e + 1), kax::colon}), 0);
    const kax::Array<double, 0> ye = kax::squeeze(kax::slice(y, {kax::range(e, e + 1)}), 0);
    const auto ge = kax::to_vector(kax::grad(loss, kax::argnums<1>)(params, xe, ye));
    for (std::size_t k = 0; k < 3; ++k) REQUIRE(xg[e * 3 + k] == Approx(ge[k]).epsilon(1e-12));
  }
}
