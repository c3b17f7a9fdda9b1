// vmap's in_axes needs one entry per argument of the call (JAX: "vmap in_axes must be ... a tuple
// of entries corresponding to the positional arguments"): a compile-time error in kax.
// expect-error: kax::vmap: in_axes must have one entry per argument of the call
#include "kax/kax.hpp"

void case_body() {
  kax::Array<float, 2> x(4, 5);
  kax::Array<float, 1> w(5);
  auto f = [](auto a, auto b) { return a * b; };
#ifndef KAX_COMPILE_FAIL_CONTROL
  auto e = kax::vmap(f, kax::in_axes(0))(x, w);
#else
  auto e = kax::vmap(f, kax::in_axes(0, kax::none))(x, w);
#endif
  (void)e;
}
