// from_eigen / to_eigen / assign, checked against naive loops over the Eigen objects themselves.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kax/interop/eigen.hpp"

namespace {

using Eigen::Dynamic;
using MatrixXdR = Eigen::Matrix<double, Dynamic, Dynamic, Eigen::RowMajor>;
using MatrixXfR = Eigen::Matrix<float, Dynamic, Dynamic, Eigen::RowMajor>;

// Distinct, deterministic values: v(i, j) depends on both indices and on `seed`.
double value_at(long i, long j, double seed) { return std::sin(0.37 * i + 0.11 * j + seed) + 0.01 * j; }

template <class Derived>
void fill(Eigen::DenseBase<Derived>& m, double seed) {
  for (Eigen::Index i = 0; i < m.rows(); ++i)
    for (Eigen::Index j = 0; j < m.cols(); ++j)
      m.derived().coeffRef(i, j) = static_cast<typename Derived::Scalar>(value_at(i, j, seed));
}

// Requires kax array `y` (rank 2) to equal `m` element by element.
template <class T, class Derived>
void require_equal(const kax::Array<T, 2>& y, const Eigen::DenseBase<Derived>& m) {
  REQUIRE(y.extent(0) == static_cast<std::size_t>(m.rows()));
  REQUIRE(y.extent(1) == static_cast<std::size_t>(m.cols()));
  for (Eigen::Index i = 0; i < m.rows(); ++i)
    for (Eigen::Index j = 0; j < m.cols(); ++j) REQUIRE(y(i, j) == m(i, j));
}

template <class T, class Derived>
void require_equal(const kax::Array<T, 1>& y, const Eigen::DenseBase<Derived>& v) {
  REQUIRE(y.extent(0) == static_cast<std::size_t>(v.size()));
  for (Eigen::Index i = 0; i < v.size(); ++i) REQUIRE(y(i) == v(i));
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const kax::shape_error& e) {
    return e.what();
  }
  return "(no exception)";
}

}  // namespace

// ---- from_eigen ---------------------------------------------------------------------------------

TEST_CASE("from_eigen reads a column-major matrix in place with Eigen's strides", "[interop][eigen]") {
  Eigen::MatrixXd m(5, 7);
  fill(m, 0.0);
  const auto leaf = kax::from_eigen(m);
  STATIC_REQUIRE(std::is_same_v<std::remove_const_t<decltype(leaf)>,
                                kax::ArrayLeaf<double, 2, Kokkos::HostSpace>>);
  REQUIRE(leaf.view.data() == m.data());
  REQUIRE(leaf.extents() == kax::shape<2>{5, 7});
  REQUIRE(leaf.strides[0] == 1);
  REQUIRE(leaf.strides[1] == 5);
  REQUIRE_FALSE(leaf.is_flat());
  kax::Array<double, 2> y = leaf;
  require_equal(y, m);
}

TEST_CASE("from_eigen reads a row-major matrix as a flat leaf", "[interop][eigen]") {
  MatrixXdR m(6, 4);
  fill(m, 1.0);
  const auto leaf = kax::from_eigen(m);
  REQUIRE(leaf.view.data() == m.data());
  REQUIRE(leaf.strides[0] == 4);
  REQUIRE(leaf.strides[1] == 1);
  REQUIRE(leaf.is_flat());
  kax::Array<double, 2> y = leaf;
  require_equal(y, m);
}

TEST_CASE("an expression on from_eigen leaves sees later changes to the Eigen matrix (zero-copy)",
          "[interop][eigen]") {
  Eigen::MatrixXd a(40, 30);
  MatrixXdR b(40, 30);
  fill(a, 0.0);
  fill(b, 2.0);
  const auto e = kax::from_eigen(a) * kax::from_eigen(b) + 1.0;
  // Change both matrices after building the expression.
  a(3, 4) = 100.0;
  b(7, 29) = -5.0;
  a *= 2.0;
  kax::Array<double, 2> y = e;
  for (int i = 0; i < 40; ++i)
    for (int j = 0; j < 30; ++j) REQUIRE(y(i, j) == Approx(a(i, j) * b(i, j) + 1.0));
  REQUIRE(y(3, 4) == Approx(200.0 * b(3, 4) + 1.0));
}

TEST_CASE("from_eigen reads Eigen::Array, const matrices and fixed-size matrices", "[interop][eigen]") {
  Eigen::ArrayXXf arr(9, 3);
  fill(arr, 0.5);
  kax::Array<float, 2> ya = kax::from_eigen(arr);
  require_equal(ya, arr);

  Eigen::MatrixXd tmp(4, 4);
  fill(tmp, 0.25);
  const Eigen::MatrixXd c = tmp;
  const auto leaf = kax::from_eigen(c);
  REQUIRE(leaf.view.data() == c.data());
  kax::Array<double, 2> yc = leaf;
  require_equal(yc, c);

  Eigen::Matrix3f f;
  fill(f, 3.0);
  kax::Array<float, 2> yf = kax::from_eigen(f);
  require_equal(yf, f);
  kax::Array<double, 2> ym = kax::from_eigen(tmp.array());  // ArrayWrapper keeps direct access
  require_equal(ym, tmp);
}

TEST_CASE("from_eigen respects the strides of Maps in both storage orders", "[interop][eigen]") {
  std::vector<double> buf(400);
  for (std::size_t k = 0; k < buf.size(); ++k) buf[k] = 0.5 * static_cast<double>(k) - 3.0;

  SECTION("column-major with an outer stride") {
    Eigen::Map<Eigen::MatrixXd, 0, Eigen::OuterStride<>> m(buf.data(), 5, 6, Eigen::OuterStride<>(9));
    const auto leaf = kax::from_eigen(m);
    REQUIRE(leaf.strides[0] == 1);
    REQUIRE(leaf.strides[1] == 9);
    kax::Array<double, 2> y = leaf;
    require_equal(y, m);
    for (int i = 0; i < 5; ++i)
      for (int j = 0; j < 6; ++j) REQUIRE(y(i, j) == buf[i + 9 * j]);
  }
  SECTION("row-major with an outer stride") {
    Eigen::Map<MatrixXdR, 0, Eigen::OuterStride<>> m(buf.data(), 5, 6, Eigen::OuterStride<>(8));
    kax::Array<double, 2> y = kax::from_eigen(m);
    for (int i = 0; i < 5; ++i)
      for (int j = 0; j < 6; ++j) REQUIRE(y(i, j) == buf[8 * i + j]);
  }
  SECTION("column-major with inner and outer strides") {
    Eigen::Map<Eigen::MatrixXd, 0, Eigen::Stride<Dynamic, Dynamic>> m(
        buf.data(), 4, 5, Eigen::Stride<Dynamic, Dynamic>(20, 3));
    kax::Array<double, 2> y = kax::from_eigen(m);
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 5; ++j) REQUIRE(y(i, j) == buf[3 * i + 20 * j]);
  }
  SECTION("row-major with inner and outer strides") {
    Eigen::Map<MatrixXdR, 0, Eigen::Stride<Dynamic, Dynamic>> m(
        buf.data(), 4, 5, Eigen::Stride<Dynamic, Dynamic>(17, 2));
    kax::Array<double, 2> y = kax::from_eigen(m);
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 5; ++j) REQUIRE(y(i, j) == buf[17 * i + 2 * j]);
  }
  SECTION("a vector with an inner stride") {
    Eigen::Map<Eigen::VectorXd, 0, Eigen::InnerStride<>> v(buf.data() + 1, 30, Eigen::InnerStride<>(7));
    const auto leaf = kax::from_eigen(v);
    STATIC_REQUIRE(decltype(leaf)::rank == 1);
    REQUIRE(leaf.strides[0] == 7);
    kax::Array<double, 1> y = leaf;
    for (int i = 0; i < 30; ++i) REQUIRE(y(i) == buf[1 + 7 * i]);
  }
  SECTION("a map of const data") {
    Eigen::Map<const Eigen::MatrixXd> m(buf.data(), 10, 10);
    kax::Array<double, 2> y = kax::from_eigen(m) + 1.0;
    for (int i = 0; i < 10; ++i)
      for (int j = 0; j < 10; ++j) REQUIRE(y(i, j) == buf[i + 10 * j] + 1.0);
  }
}

TEST_CASE("from_eigen reads blocks, rows, columns and transposes in place", "[interop][eigen]") {
  Eigen::MatrixXd m(8, 9);
  MatrixXdR r(8, 9);
  fill(m, 0.0);
  fill(r, 1.0);

  const auto blk = kax::from_eigen(m.block(2, 3, 4, 5));
  REQUIRE(blk.view.data() == &m(2, 3));
  REQUIRE(blk.strides[1] == 8);
  kax::Array<double, 2> yb = blk;
  require_equal(yb, m.block(2, 3, 4, 5));

  kax::Array<double, 2> ybr = kax::from_eigen(r.block(1, 1, 6, 3));
  require_equal(ybr, r.block(1, 1, 6, 3));

  // Rows and columns are compile-time vectors: rank 1, with the step between their elements.
  const auto col = kax::from_eigen(m.col(4));
  STATIC_REQUIRE(decltype(col)::rank == 1);
  REQUIRE(col.strides[0] == 1);
  kax::Array<double, 1> yc = col;
  require_equal(yc, m.col(4));
  const auto row = kax::from_eigen(m.row(5));
  REQUIRE(row.strides[0] == 8);
  kax::Array<double, 1> yr = row;
  require_equal(yr, m.row(5));
  kax::Array<double, 1> yrr = kax::from_eigen(r.row(2));
  require_equal(yrr, r.row(2));
  kax::Array<double, 1> yrc = kax::from_eigen(r.col(7));
  require_equal(yrc, r.col(7));
  kax::Array<double, 1> ysub = kax::from_eigen(m.col(1).segment(2, 5));
  require_equal(ysub, m.col(1).segment(2, 5));

  const auto t = kax::from_eigen(m.transpose());
  REQUIRE(t.extents() == kax::shape<2>{9, 8});
  REQUIRE(t.view.data() == m.data());
  kax::Array<double, 2> yt = t;
  require_equal(yt, m.transpose());
}

TEST_CASE("from_eigen reads Eigen::Ref of mutable and const matrices", "[interop][eigen]") {
  Eigen::MatrixXd m(7, 6);
  fill(m, 0.7);
  Eigen::Ref<Eigen::MatrixXd> ref = m.block(1, 1, 5, 4);
  const auto lr = kax::from_eigen(ref);
  REQUIRE(lr.view.data() == &m(1, 1));
  REQUIRE(lr.strides[1] == 7);
  kax::Array<double, 2> y = lr;
  require_equal(y, m.block(1, 1, 5, 4));

  Eigen::Ref<const Eigen::MatrixXd> cref = m;
  const auto lc = kax::from_eigen(cref);
  REQUIRE(lc.view.data() == m.data());
  kax::Array<double, 2> yc = lc * 2.0;
  for (int i = 0; i < 7; ++i)
    for (int j = 0; j < 6; ++j) REQUIRE(yc(i, j) == 2.0 * m(i, j));

  Eigen::VectorXd v = Eigen::VectorXd::LinSpaced(11, -1.0, 1.0);
  Eigen::Ref<const Eigen::VectorXd> vref = v;
  kax::Array<double, 1> yv = kax::from_eigen(vref);
  require_equal(yv, v);
}

TEST_CASE("from_eigen reads every kax dtype", "[interop][eigen]") {
  Eigen::MatrixXi mi(3, 4);
  Eigen::Matrix<std::int64_t, Dynamic, Dynamic, Eigen::RowMajor> ml(3, 4);
  Eigen::Matrix<bool, Dynamic, Dynamic> mb(3, 4);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) {
      mi(i, j) = 10 * i - j;
      ml(i, j) = (std::int64_t{1} << 40) + 7 * i + j;
      mb(i, j) = (i + j) % 2 == 0;
    }
  kax::Array<std::int32_t, 2> yi = kax::from_eigen(mi) * 3 + 1;
  kax::Array<std::int64_t, 2> yl = kax::from_eigen(ml) - 1;
  kax::Array<std::int32_t, 2> yw = kax::where(kax::from_eigen(mb), kax::from_eigen(mi), -1);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) {
      REQUIRE(yi(i, j) == 3 * mi(i, j) + 1);
      REQUIRE(yl(i, j) == ml(i, j) - 1);
      REQUIRE(yw(i, j) == (mb(i, j) ? mi(i, j) : -1));
    }
}

// ---- to_eigen -----------------------------------------------------------------------------------

TEST_CASE("to_eigen equals Eigen's own evaluation of the same elementwise math", "[interop][eigen]") {
  Eigen::MatrixXd a(123, 77);
  Eigen::MatrixXd b(123, 77);
  fill(a, 0.0);
  fill(b, 1.3);
  const Eigen::MatrixXd expected = (a.array() * b.array() + b.array().sin()).matrix();
  const auto got = kax::to_eigen(kax::from_eigen(a) * kax::from_eigen(b) + kax::sin(kax::from_eigen(b)));
  STATIC_REQUIRE(std::is_same_v<std::remove_const_t<decltype(got)>, Eigen::MatrixXd>);
  REQUIRE(got.rows() == 123);
  REQUIRE(got.cols() == 77);
  REQUIRE((got - expected).cwiseAbs().maxCoeff() < 1e-14);

  Eigen::MatrixXf af = a.cast<float>();
  MatrixXfR bf = b.cast<float>();  // mixed storage orders in one expression
  const Eigen::MatrixXf ef = (af.array().tanh() * 2.0f - bf.array().exp()).matrix();
  const Eigen::MatrixXf gf = kax::to_eigen(kax::tanh(kax::from_eigen(af)) * 2.0f - kax::exp(kax::from_eigen(bf)));
  REQUIRE((gf - ef).cwiseAbs().maxCoeff() < 1e-5f);
}

TEST_CASE("to_eigen turns rank-1 expressions into column vectors and accepts kax Arrays",
          "[interop][eigen]") {
  Eigen::VectorXd v = Eigen::VectorXd::LinSpaced(1000, 0.0, 10.0);
  const auto got = kax::to_eigen(kax::sqrt(kax::from_eigen(v)) + 1.0);
  STATIC_REQUIRE(std::is_same_v<std::remove_const_t<decltype(got)>, Eigen::VectorXd>);
  for (int i = 0; i < 1000; ++i) REQUIRE(got(i) == Approx(std::sqrt(v(i)) + 1.0));

  kax::Array<float, 2> x(3, 5);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 5; ++j) x(i, j) = static_cast<float>(10 * i + j);
  const Eigen::MatrixXf fx = kax::to_eigen(x);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 5; ++j) REQUIRE(fx(i, j) == static_cast<float>(10 * i + j));

  // A transposed and sliced expression: layout nodes evaluate straight into Eigen storage.
  const Eigen::MatrixXf ft = kax::to_eigen(kax::transpose(x));
  REQUIRE(ft.rows() == 5);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 5; ++j) REQUIRE(ft(j, i) == x(i, j));

  Eigen::MatrixXd a(6, 4);
  fill(a, 0.1);
  const Eigen::Matrix<bool, Dynamic, Dynamic> mask = kax::to_eigen(kax::from_eigen(a) > 0.0);
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 4; ++j) REQUIRE(mask(i, j) == (a(i, j) > 0.0));
  const Eigen::MatrixXd none(0, 3);
  const Eigen::MatrixXd empty = kax::to_eigen(kax::from_eigen(none) * 2.0);
  REQUIRE(empty.rows() == 0);
  REQUIRE(empty.cols() == 3);
}

// ---- assign -------------------------------------------------------------------------------------

TEST_CASE("assign writes into column- and row-major matrices in place", "[interop][eigen]") {
  Eigen::MatrixXd a(50, 37);
  MatrixXdR b(50, 37);
  fill(a, 0.0);
  fill(b, 0.9);
  Eigen::MatrixXd out(50, 37);
  MatrixXdR outr(50, 37);
  const double* p = out.data();
  kax::assign(out, kax::from_eigen(a) + 2.0 * kax::from_eigen(b));
  kax::assign(outr, kax::from_eigen(a) - kax::cos(kax::from_eigen(b)));
  REQUIRE(out.data() == p);
  for (int i = 0; i < 50; ++i)
    for (int j = 0; j < 37; ++j) {
      REQUIRE(out(i, j) == Approx(a(i, j) + 2.0 * b(i, j)));
      REQUIRE(outr(i, j) == Approx(a(i, j) - std::cos(b(i, j))));
    }

  Eigen::ArrayXXf arr(4, 4);
  kax::Array<float, 2> x = kax::full<float>(kax::shape<2>{4, 4}, 1.5f);
  kax::assign(arr, x * x);
  REQUIRE((arr == 2.25f).all());
}

TEST_CASE("assign writes only the selected elements of Maps with strides, blocks and Refs",
          "[interop][eigen]") {
  SECTION("a strided Map leaves the gaps untouched") {
    std::vector<double> buf(200, -1.0);
    Eigen::Map<Eigen::MatrixXd, 0, Eigen::Stride<Dynamic, Dynamic>> m(
        buf.data(), 4, 6, Eigen::Stride<Dynamic, Dynamic>(13, 2));
    Eigen::MatrixXd src(4, 6);
    fill(src, 0.4);
    kax::assign(m, kax::from_eigen(src) * 10.0);
    std::vector<bool> written(buf.size(), false);
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 6; ++j) {
        REQUIRE(buf[2 * i + 13 * j] == Approx(10.0 * src(i, j)));
        written[2 * i + 13 * j] = true;
      }
    for (std::size_t k = 0; k < buf.size(); ++k)
      if (!written[k]) REQUIRE(buf[k] == -1.0);
  }
  SECTION("a block of a column-major matrix (an rvalue destination)") {
    Eigen::MatrixXd m = Eigen::MatrixXd::Constant(9, 8, -1.0);
    kax::Array<double, 2> x(4, 5);
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 5; ++j) x(i, j) = 100.0 * i + j;
    kax::assign(m.block(3, 2, 4, 5), x);
    for (int i = 0; i < 9; ++i)
      for (int j = 0; j < 8; ++j) {
        const bool inside = i >= 3 && i < 7 && j >= 2 && j < 7;
        REQUIRE(m(i, j) == (inside ? 100.0 * (i - 3) + (j - 2) : -1.0));
      }
  }
  SECTION("rows and columns of both storage orders") {
    Eigen::MatrixXd m = Eigen::MatrixXd::Zero(5, 6);
    MatrixXdR r = MatrixXdR::Zero(5, 6);
    Eigen::VectorXd v = Eigen::VectorXd::LinSpaced(6, 1.0, 6.0);
    Eigen::VectorXd w = Eigen::VectorXd::LinSpaced(5, 1.0, 5.0);
    kax::assign(m.row(2), kax::from_eigen(v) * 2.0);
    kax::assign(m.col(4), kax::from_eigen(w) + 0.5);
    kax::assign(r.row(1), -kax::from_eigen(v));
    kax::assign(r.col(3), kax::from_eigen(w));
    for (int i = 0; i < 5; ++i)
      for (int j = 0; j < 6; ++j) {
        const double em = j == 4 ? w(i) + 0.5 : (i == 2 ? 2.0 * v(j) : 0.0);
        const double er = j == 3 ? w(i) : (i == 1 ? -v(j) : 0.0);
        REQUIRE(m(i, j) == em);
        REQUIRE(r(i, j) == er);
      }
  }
  SECTION("a Ref to a block of a row-major matrix") {
    MatrixXdR r = MatrixXdR::Constant(6, 6, 7.0);
    Eigen::Ref<MatrixXdR> ref = r.block(1, 2, 3, 3);
    kax::assign(ref, kax::from_eigen(ref) * kax::from_eigen(ref));
    for (int i = 0; i < 6; ++i)
      for (int j = 0; j < 6; ++j) {
        const bool inside = i >= 1 && i < 4 && j >= 2 && j < 5;
        REQUIRE(r(i, j) == (inside ? 49.0 : 7.0));
      }
  }
  SECTION("a transposed view of a matrix") {
    Eigen::MatrixXd m(3, 5);
    Eigen::MatrixXd src(5, 3);
    fill(src, 0.2);
    kax::assign(m.transpose(), kax::from_eigen(src));
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 5; ++j) REQUIRE(m(i, j) == src(j, i));
  }
}

TEST_CASE("assign handles destinations that the expression also reads", "[interop][eigen]") {
  SECTION("in-place transpose of a column-major matrix") {
    Eigen::MatrixXd m(37, 37);
    fill(m, 0.0);
    const Eigen::MatrixXd before = m;
    kax::assign(m, kax::transpose(kax::from_eigen(m)));
    for (int i = 0; i < 37; ++i)
      for (int j = 0; j < 37; ++j) REQUIRE(m(i, j) == before(j, i));
  }
  SECTION("in-place transpose plus itself of a row-major matrix") {
    MatrixXdR m(20, 20);
    fill(m, 0.3);
    const MatrixXdR before = m;
    kax::assign(m, kax::transpose(kax::from_eigen(m)) + kax::from_eigen(m));
    for (int i = 0; i < 20; ++i)
      for (int j = 0; j < 20; ++j) REQUIRE(m(i, j) == before(j, i) + before(i, j));
  }
  SECTION("pointwise update of a column-major matrix") {
    Eigen::MatrixXd m(64, 33);
    fill(m, 0.6);
    const Eigen::MatrixXd before = m;
    kax::assign(m, kax::from_eigen(m) * 2.0 + 1.0);
    for (int i = 0; i < 64; ++i)
      for (int j = 0; j < 33; ++j) REQUIRE(m(i, j) == before(i, j) * 2.0 + 1.0);
  }
  SECTION("overlapping blocks of one matrix") {
    Eigen::MatrixXd m(6, 6);
    fill(m, 0.8);
    const Eigen::MatrixXd before = m;
    kax::assign(m.block(1, 1, 5, 5), kax::from_eigen(m.block(0, 0, 5, 5)));
    for (int i = 1; i < 6; ++i)
      for (int j = 1; j < 6; ++j) REQUIRE(m(i, j) == before(i - 1, j - 1));
  }
}

TEST_CASE("assign throws shape_error showing both shapes when extents differ", "[interop][eigen]") {
  Eigen::MatrixXd m(3, 4);
  Eigen::MatrixXd n(4, 3);
  n.setOnes();
  const std::string msg = message_of([&] { kax::assign(m, kax::from_eigen(n) * 2.0); });
  REQUIRE(msg.rfind("kax::assign:", 0) == 0);
  REQUIRE(msg.find("(4, 3)") != std::string::npos);
  REQUIRE(msg.find("(3, 4)") != std::string::npos);

  Eigen::VectorXd v(5);
  const Eigen::VectorXd four = Eigen::VectorXd::Ones(4);
  const std::string vmsg = message_of([&] { kax::assign(v, kax::from_eigen(four)); });
  REQUIRE(vmsg.rfind("kax::assign:", 0) == 0);
  REQUIRE(vmsg.find("(4,)") != std::string::npos);
  REQUIRE(vmsg.find("(5,)") != std::string::npos);
}
