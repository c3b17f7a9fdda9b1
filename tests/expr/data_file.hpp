// Reads the NumPy reference arrays that scripts/gen_test_data.py writes into tests/data/.
// Format: a "shape e0 e1 ..." line, then one %.17g value per line in row-major order.
#pragma once

#include <cstddef>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "kax/kax.hpp"

namespace kax_test {

struct data_file {
  std::vector<std::size_t> shape;
  std::vector<double> values;
};

inline data_file read_data(const std::string& name) {
  const std::string path = std::string(KAX_TEST_DATA_DIR) + "/" + name + ".txt";
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open test data file " + path);
  data_file d;
  std::string line;
  std::getline(in, line);
  std::istringstream head(line);
  std::string word;
  head >> word;
  if (word != "shape") throw std::runtime_error(path + ": first line must start with 'shape'");
  for (std::size_t e; head >> e;) d.shape.push_back(e);
  for (double v; in >> v;) d.values.push_back(v);
  std::size_t n = 1;
  for (std::size_t e : d.shape) n *= e;
  if (n != d.values.size()) throw std::runtime_error(path + ": value count does not match shape");
  return d;
}

// The file's data as a kax array of rank R (its shape must have R axes).
template <class T, std::size_t R>
kax::Array<T, R> load(const std::string& name) {
  const data_file d = read_data(name);
  if (d.shape.size() != R) throw std::runtime_error(name + ": rank differs from the file's");
  kax::shape<R> s{};
  for (std::size_t k = 0; k < R; ++k) s[k] = d.shape[k];
  std::vector<T> v;
  for (double x : d.values) v.push_back(static_cast<T>(x));
  return kax::from<T, R>(v, s);
}

// Checks that `got` has the file's shape and values (relative tolerance `eps`).
template <class T, std::size_t R>
void require_matches(const kax::Array<T, R>& got, const std::string& name, double eps = 1e-13) {
  const data_file d = read_data(name);
  INFO("reference file " << name);
  REQUIRE(d.shape.size() == R);
  for (std::size_t k = 0; k < R; ++k) REQUIRE(got.extent(k) == d.shape[k]);
  const std::vector<T> v = kax::to_vector(got);
  REQUIRE(v.size() == d.values.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    INFO("flat index " << i);
    REQUIRE(static_cast<double>(v[i]) == Approx(d.values[i]).epsilon(eps).margin(eps));
  }
}

}  // namespace kax_test
