// einsum's subscripts are checked against the operands' ranks at compile time: "ij" cannot name
// the axes of a rank-3 operand.
// expect-error: kax::einsum: a term's number of subscripts differs
#include "kax/kax.hpp"

void case_body() {
  kax::Array<float, 2> b(4, 5);
#ifndef KAX_COMPILE_FAIL_CONTROL
  kax::Array<float, 3> a(2, 3, 4);
#else
  kax::Array<float, 2> a(3, 4);
#endif
  auto e = kax::einsum<"ij,jk->ik">(a, b);
  (void)e;
}
