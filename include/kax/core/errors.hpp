// kax/core/errors.hpp — the exceptions kax throws for bad input at run time.
#pragma once

#include <array>
#include <cstddef>
#include <stdexcept>
#include <string>

namespace kax {

// Base of every kax error, so callers can catch them together.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Extents that do not agree (broadcasting, reshape, assignment): the message shows the shapes.
class shape_error : public error {
 public:
  using error::error;
};

// An axis out of range or given twice.
class axis_error : public shape_error {
 public:
  using shape_error::shape_error;
};

// Memory that is not where the operation needs it (host access to device memory).
class memory_space_error : public error {
 public:
  using error::error;
};

// A collective (psum, all_gather, ...) that cannot complete: another device or process failed,
// or did not arrive within the collective timeout (kax::collective_timeout).
class collective_error : public error {
 public:
  using error::error;
};

// A collective that waited longer than the configured timeout for the other participants.
class collective_timeout : public collective_error {
 public:
  using collective_error::collective_error;
};

// A value that kax::grad is tracing was evaluated inside the differentiated function, where only
// lazy expressions keep the gradient (JAX's TracerArrayConversionError).
class tracer_error : public error {
 public:
  using error::error;
};

// "(3, 4)" — NumPy's spelling of a shape; "()" for rank 0.
template <std::size_t R>
std::string shape_string(const std::array<std::size_t, R>& s) {
  std::string out = "(";
  for (std::size_t k = 0; k < R; ++k) {
    if (k) out += ", ";
    out += std::to_string(s[k]);
  }
  if (R == 1) out += ",";
  out += ")";
  return out;
}

}  // namespace kax
