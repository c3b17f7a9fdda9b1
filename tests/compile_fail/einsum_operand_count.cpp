// The number of comma-separated terms must equal the number of operands.
// expect-error: kax::einsum: the number of comma-separated terms differs from the number of operands
#include "kax/kax.hpp"

void case_body() {
  kax::Array<float, 2> a(3, 4);
#ifndef KAX_COMPILE_FAIL_CONTROL
  auto e = kax::einsum<"ij,jk->ik">(a);
#else
  auto e = kax::einsum<"ij->i">(a);
#endif
  (void)e;
}
