// Reducing more axes than the operand has is caught at compile time.
// expect-error: more axes than the operand's rank
#include "kax/kax.hpp"

void case_body() {
  kax::Array<float, 1> a(4);
#ifndef KAX_COMPILE_FAIL_CONTROL
  auto e = kax::sum(a, 0, 0);
#else
  auto e = kax::sum(a, 0);
#endif
  (void)e;
}
