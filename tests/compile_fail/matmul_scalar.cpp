// matmul has no meaning for a rank-0 operand (NumPy raises; use * for scalars): a compile-time error.
// expect-error: kax::matmul: operands must have rank >= 1
#include "kax/kax.hpp"

void case_body() {
  kax::Array<float, 2> b(4, 5);
#ifndef KAX_COMPILE_FAIL_CONTROL
  kax::Array<float, 0> s = kax::zeros<float>(kax::shape<0>{});
  auto e = kax::matmul(s, b);
#else
  kax::Array<float, 1> s = kax::zeros<float>(4);
  auto e = kax::matmul(s, b);
#endif
  (void)e;
}
