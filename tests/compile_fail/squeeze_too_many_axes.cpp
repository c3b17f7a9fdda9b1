// Squeezing more axes than the operand has is caught at compile time.
// expect-error: kax::squeeze: more axes
#include <array>

#include "kax/kax.hpp"

void case_body() {
  kax::Array<float, 1> a(1);
#ifndef KAX_COMPILE_FAIL_CONTROL
  auto e = kax::squeeze(a, std::array<long, 2>{0, 1});
#else
  auto e = kax::squeeze(a, std::array<long, 1>{0});
#endif
  (void)e;
}
