// An output subscript that no input term has is a compile-time error.
// expect-error: kax::einsum: an output subscript does not appear in any input term
#include "kax/kax.hpp"

void case_body() {
  kax::Array<float, 2> a(3, 4);
  kax::Array<float, 2> b(4, 5);
#ifndef KAX_COMPILE_FAIL_CONTROL
  auto e = kax::einsum<"ij,jk->iz">(a, b);
#else
  auto e = kax::einsum<"ij,jk->ik">(a, b);
#endif
  (void)e;
}
