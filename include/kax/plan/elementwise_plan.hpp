// kax/plan/elementwise_plan.hpp — how an elementwise/broadcast/layout expression becomes a kernel.
//
// Every such expression is exactly one kernel with no temporaries (the fusion rule).  The plan
// only chooses the traversal: "flat" when the destination and every operand are contiguous and
// unbroadcast (one linear index, the fastest loop), "strided" otherwise (a multi-index per
// element; the last axis is the inner, vectorized loop on the host).
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>

#include "kax/core/dtype.hpp"
#include "kax/expr/concepts.hpp"

namespace kax::detail {

struct elementwise_plan {
  bool flat = false;

  // Kernel label for Kokkos Tools: stable across shapes so profiles aggregate.
  template <class T, std::size_t R>
  std::string label() const {
    return std::string("kax::eval<elementwise,") + (flat ? "flat," : "strided,") +
           dtype_name<T>() + ",rank" + std::to_string(R) + ">";
  }
};

template <expression E>
elementwise_plan plan_elementwise(const E& e, bool destination_contiguous) {
  return elementwise_plan{destination_contiguous && e.is_flat()};
}

// Host chunk length: about four chunks per thread (load balance), at least 4096 elements
// (amortizes the per-chunk overhead), a multiple of 64 (whole cache lines and SIMD registers).
inline std::size_t host_chunk(std::size_t n, std::size_t concurrency) {
  const std::size_t target = (n + 4 * concurrency - 1) / (4 * concurrency);
  return std::max<std::size_t>(4096, (target + 63) / 64 * 64);
}

// Whole rows of `row_elements` per host work item: about `elements` elements, and no more rows
// than spread `rows` over about four items per thread (load balance when rows are few).
inline std::size_t host_rows_per_item(std::size_t rows, std::size_t row_elements, std::size_t concurrency,
                                      std::size_t elements) {
  const std::size_t by_size = elements / std::max<std::size_t>(1, row_elements);
  const std::size_t spread = (rows + 4 * concurrency - 1) / (4 * concurrency);
  return std::max<std::size_t>(1, std::min(by_size, spread));
}

}  // namespace kax::detail
