// kax/core/fixed_string.hpp — a string usable as a template argument: einsum<"ij,jk->ik">,
// pmap<"devices">, psum<"i">.
#pragma once

#include <cstddef>

namespace kax {

template <std::size_t N>
struct fixed_string {
  char chars[N]{};

  constexpr fixed_string(const char (&s)[N]) {  // NOLINT: implicit, so "ij->i" converts
    for (std::size_t i = 0; i < N; ++i) chars[i] = s[i];
  }
  // Length without the terminating NUL.
  static constexpr std::size_t size() { return N - 1; }
  constexpr char operator[](std::size_t i) const { return chars[i]; }
  constexpr const char* c_str() const { return chars; }
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
