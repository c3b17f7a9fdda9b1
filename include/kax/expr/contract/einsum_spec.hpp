// kax/expr/contract/einsum_spec.hpp — parses an einsum subscript string at compile time.
//
// NumPy's grammar: comma-separated input terms of letters and at most one "..." each, then
// optionally "->" and an output term.  Without "->" the output is the "..." axes followed by the
// letters that appear exactly once, in alphabetical (ASCII) order (numpy.einsum's implicit mode).
// The result numbers every distinct axis label ("label space"): output labels first, in output
// order, then the summed labels in order of first appearance.  Ranks are compile-time, so every
// mismatch between the string and the operands' ranks is a compile-time error.
#pragma once

#include <array>
#include <cstddef>

#include "kax/core/fixed_string.hpp"

namespace kax::detail {

inline constexpr std::size_t einsum_max_rank = 16;
inline constexpr std::size_t einsum_max_labels = 52 + einsum_max_rank;

enum class einsum_error {
  none,
  operand_count,     // number of terms differs from the number of operands
  bad_character,     // not a letter, ',', "...", "->" or space
  two_ellipses,      // "..." twice in one term
  rank_mismatch,     // a term's letters do not match its operand's rank
  unknown_output,    // an output letter that no input has
  repeated_output,   // an output letter twice
  missing_ellipsis,  // inputs have "..." axes but the explicit output has no "..."
  rank_too_large,
};

struct einsum_spec {
  einsum_error error = einsum_error::none;
  std::size_t bad_term = 0;  // which term the error is about (0-based; the output is n_ops)
  std::size_t n_ops = 0;
  std::size_t n_labels = 0;  // distinct labels, "..." axes included
  std::size_t n_out = 0;     // output rank; labels [0, n_out) are the output's, in order
  std::size_t rank[2]{};
  std::size_t labels[2][einsum_max_rank]{};   // label of each operand axis
  char label_char[einsum_max_labels]{};       // the letter of each label, '.' for "..." axes
};

// Symbols: letters 'a'-'z' are 0-25, 'A'-'Z' 26-51, the j-th "..." axis (right-aligned) 52 + j.
constexpr int einsum_symbol(char c) {
  if (c >= 'a' && c <= 'z') return c - 'a';
  if (c >= 'A' && c <= 'Z') return 26 + (c - 'A');
  return -1;
}
constexpr char einsum_symbol_char(std::size_t s) {
  return s < 26 ? static_cast<char>('a' + s) : s < 52 ? static_cast<char>('A' + (s - 26)) : '.';
}

struct einsum_term {
  std::size_t letters[einsum_max_rank]{};
  std::size_t n_letters = 0;
  std::size_t ellipsis_at = einsum_max_rank + 1;  // letters before the "...", or none
  bool has_ellipsis = false;
  einsum_error error = einsum_error::none;
};

template <fixed_string S>
constexpr einsum_term parse_einsum_term(std::size_t begin, std::size_t end) {
  einsum_term t;
  for (std::size_t i = begin; i < end; ++i) {
    const char c = S[i];
    if (c == ' ') continue;
    if (c == '.') {
      if (i + 2 >= end || S[i + 1] != '.' || S[i + 2] != '.') {
        t.error = einsum_error::bad_character;
        return t;
      }
      if (t.has_ellipsis) {
        t.error = einsum_error::two_ellipses;
        return t;
      }
      t.has_ellipsis = true;
      t.ellipsis_at = t.n_letters;
      i += 2;
      continue;
    }
    const int s = einsum_symbol(c);
    if (s < 0) {
      t.error = einsum_error::bad_character;
      return t;
    }
    if (t.n_letters == einsum_max_rank) {
      t.error = einsum_error::rank_too_large;
      return t;
    }
    t.letters[t.n_letters++] = static_cast<std::size_t>(s);
  }
  return t;
}

template <fixed_string S, std::size_t NOps>
constexpr einsum_spec parse_einsum(const std::array<std::size_t, NOps>& ranks) {
  static_assert(NOps >= 1 && NOps <= 2, "kax::einsum: one or two operands are supported");
  einsum_spec spec;
  spec.n_ops = NOps;
  const std::size_t n = S.size();
  std::size_t arrow = n;
  for (std::size_t i = 0; i + 1 < n; ++i)
    if (S[i] == '-' && S[i + 1] == '>') {
      arrow = i;
      break;
    }
  // Input terms.
  einsum_term terms[2]{};
  std::size_t n_terms = 0, start = 0;
  for (std::size_t i = 0; i <= arrow; ++i) {
    if (i == arrow || S[i] == ',') {
      if (n_terms == NOps) {
        spec.error = einsum_error::operand_count;
        return spec;
      }
      terms[n_terms] = parse_einsum_term<S>(start, i);
      if (terms[n_terms].error != einsum_error::none) {
        spec.error = terms[n_terms].error;
        spec.bad_term = n_terms;
        return spec;
      }
      ++n_terms;
      start = i + 1;
    }
  }
  if (n_terms != NOps) {
    spec.error = einsum_error::operand_count;
    return spec;
  }
  // Symbols of every operand axis, "..." expanded right-aligned.
  std::size_t ell = 0;
  std::size_t ell_of[2]{};
  for (std::size_t k = 0; k < NOps; ++k) {
    const einsum_term& t = terms[k];
    if (ranks[k] > einsum_max_rank) {
      spec.error = einsum_error::rank_too_large;
      return spec;
    }
    if ((!t.has_ellipsis && t.n_letters != ranks[k]) || t.n_letters > ranks[k]) {
      spec.error = einsum_error::rank_mismatch;
      spec.bad_term = k;
      return spec;
    }
    ell_of[k] = ranks[k] - t.n_letters;
    if (ell_of[k] > ell) ell = ell_of[k];
  }
  std::size_t symbols[2][einsum_max_rank]{};
  std::size_t count[einsum_max_labels]{};
  for (std::size_t k = 0; k < NOps; ++k) {
    const einsum_term& t = terms[k];
    std::size_t a = 0;
    for (std::size_t j = 0; j <= t.n_letters; ++j) {
      if (t.has_ellipsis && j == t.ellipsis_at)
        for (std::size_t e = 0; e < ell_of[k]; ++e) symbols[k][a++] = 52 + (ell - ell_of[k] + e);
      if (j < t.n_letters) symbols[k][a++] = t.letters[j];
    }
    spec.rank[k] = ranks[k];
    for (std::size_t i = 0; i < ranks[k]; ++i) ++count[symbols[k][i]];
  }
  // Output symbols.
  std::size_t out[einsum_max_labels]{};
  std::size_t n_out = 0;
  if (arrow < n) {
    const einsum_term t = parse_einsum_term<S>(arrow + 2, n);
    if (t.error != einsum_error::none) {
      spec.error = t.error;
      spec.bad_term = NOps;
      return spec;
    }
    if (ell > 0 && !t.has_ellipsis) {
      spec.error = einsum_error::missing_ellipsis;
      return spec;
    }
    bool used[einsum_max_labels]{};
    for (std::size_t j = 0; j <= t.n_letters; ++j) {
      if (t.has_ellipsis && j == t.ellipsis_at)
        for (std::size_t e = 0; e < ell; ++e) out[n_out++] = 52 + e;
      if (j < t.n_letters) {
        const std::size_t s = t.letters[j];
        if (count[s] == 0) {
          spec.error = einsum_error::unknown_output;
          return spec;
        }
        if (used[s]) {
          spec.error = einsum_error::repeated_output;
          return spec;
        }
        used[s] = true;
        out[n_out++] = s;
      }
    }
  } else {
    for (std::size_t e = 0; e < ell; ++e) out[n_out++] = 52 + e;
    for (std::size_t s = 26; s < 52; ++s)  // 'A'-'Z' sort before 'a'-'z' in ASCII
      if (count[s] == 1) out[n_out++] = s;
    for (std::size_t s = 0; s < 26; ++s)
      if (count[s] == 1) out[n_out++] = s;
  }
  if (n_out > einsum_max_rank) {
    spec.error = einsum_error::rank_too_large;
    return spec;
  }
  // Label ids: output first, then summed symbols by first appearance.
  std::size_t id_of[einsum_max_labels]{};
  bool has_id[einsum_max_labels]{};
  std::size_t next = 0;
  for (std::size_t i = 0; i < n_out; ++i) {
    id_of[out[i]] = next;
    has_id[out[i]] = true;
    spec.label_char[next++] = einsum_symbol_char(out[i]);
  }
  spec.n_out = n_out;
  for (std::size_t k = 0; k < NOps; ++k)
    for (std::size_t i = 0; i < ranks[k]; ++i) {
      const std::size_t s = symbols[k][i];
      if (!has_id[s]) {
        id_of[s] = next;
        has_id[s] = true;
        spec.label_char[next++] = einsum_symbol_char(s);
      }
      spec.labels[k][i] = id_of[s];
    }
  spec.n_labels = next;
  return spec;
}

}  // namespace kax::detail
