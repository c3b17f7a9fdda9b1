// kax/core/fixed_string.hpp — a string usable as a template argument: einsum<"ij,jk->ik">,
// pmap<"devices">, psum<"i">.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace kax {

// Up to 64 characters, packed eight to a word.  Scalar members, not a char array: nvcc writes the
// template arguments of every kernel it launches into generated host code, and spells a class
// value's array member in a form g++ does not parse (kernels whose expression holds a collective,
// CollectiveExpr<op, "i", ...>, would not compile on CUDA).
template <std::size_t N>
struct fixed_string {
  static_assert(N >= 1 && N <= 65, "kax::fixed_string: at most 64 characters");
  std::uint64_t w0 = 0, w1 = 0, w2 = 0, w3 = 0, w4 = 0, w5 = 0, w6 = 0, w7 = 0;

  constexpr fixed_string(const char (&s)[N])  // NOLINT: implicit, so "ij->i" converts
      : w0(pack(s, 0)), w1(pack(s, 1)), w2(pack(s, 2)), w3(pack(s, 3)), w4(pack(s, 4)), w5(pack(s, 5)),
        w6(pack(s, 6)), w7(pack(s, 7)) {}
  // The form nvcc's generated code uses: the words, in order.
  constexpr fixed_string(std::uint64_t a, std::uint64_t b, std::uint64_t c, std::uint64_t d, std::uint64_t e,
                         std::uint64_t f, std::uint64_t g, std::uint64_t h)
      : w0(a), w1(b), w2(c), w3(d), w4(e), w5(f), w6(g), w7(h) {}

  // Length without the terminating NUL.
  static constexpr std::size_t size() { return N - 1; }
  constexpr char operator[](std::size_t i) const {
    return static_cast<char>((word_value(i / 8) >> (8 * (i % 8))) & 0xff);
  }
  std::string str() const {
    std::string s(size(), '\0');
    for (std::size_t i = 0; i < size(); ++i) s[i] = (*this)[i];
    return s;
  }

 private:
  // Word k of s: characters 8k .. 8k+7, the first in the lowest byte.
  static constexpr std::uint64_t pack(const char (&s)[N], std::size_t k) {
    std::uint64_t w = 0;
    for (std::size_t i = 8 * k; i < 8 * k + 8 && i + 1 < N; ++i)
      w |= std::uint64_t{static_cast<unsigned char>(s[i])} << (8 * (i % 8));
    return w;
  }
  constexpr std::uint64_t word_value(std::size_t k) const {
    const std::uint64_t w[] = {w0, w1, w2, w3, w4, w5, w6, w7};
    return w[k];
  }
};

// Whether two compile-time strings are equal (axis names: kax::pmap<"i"> and kax::psum<"i">).
template <fixed_string A, fixed_string B>
constexpr bool same_string() {
  if constexpr (A.size() != B.size()) {
    return false;
  } else {
    for (std::size_t i = 0; i < A.size(); ++i)
      if (A[i] != B[i]) return false;
    return true;
  }
}

}  // namespace kax
