// Assigning a rank-1 expression to a rank-2 Array is a compile-time error, not a run-time one.
// expect-error: kax::Array: the expression's rank differs
#include "kax/kax.hpp"

void case_body() {
  kax::Array<float, 1> a1(3);
#ifndef KAX_COMPILE_FAIL_CONTROL
  kax::Array<float, 2> y = a1 + a1;
#else
  kax::Array<float, 1> y = a1 + a1;
#endif
  (void)y;
}
