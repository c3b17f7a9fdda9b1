// Broadcasting to a shape of lower rank is caught at compile time (NumPy raises at run time).
// expect-error: kax::broadcast_to: the target rank is lower
#include "kax/kax.hpp"

void case_body() {
  kax::Array<float, 2> a(2, 3);
#ifndef KAX_COMPILE_FAIL_CONTROL
  auto e = kax::broadcast_to(a, kax::shape<1>{3});
#else
  auto e = kax::broadcast_to(a, kax::shape<3>{4, 2, 3});
#endif
  (void)e;
}
