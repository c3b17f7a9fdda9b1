// Concatenating operands of different ranks is caught at compile time (ranks are static).
// expect-error: kax::concatenate: all operands must have the same rank
#include <tuple>

#include "kax/kax.hpp"

void case_body() {
  kax::Array<float, 2> a(2, 3);
#ifndef KAX_COMPILE_FAIL_CONTROL
  kax::Array<float, 1> b(3);
#else
  kax::Array<float, 2> b(1, 3);
#endif
  auto e = kax::concatenate(std::make_tuple(a, b), 0);
  (void)e;
}
