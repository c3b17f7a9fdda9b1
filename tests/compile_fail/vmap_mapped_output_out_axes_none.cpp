// An output that depends on a mapped argument cannot have out_axes kax::none (JAX: "vmap has mapped
// output but out_axes is None"); whether an output is batched is known from its type.
// expect-error: kax::vmap: an output depends on a mapped argument, but its out_axes entry is kax::none
#include "kax/kax.hpp"

void case_body() {
  kax::Array<float, 2> x(4, 5);
  kax::Array<float, 1> w(5);
  auto f = [](auto a, auto b) { return a * b; };
#ifndef KAX_COMPILE_FAIL_CONTROL
  auto e = kax::vmap(f, kax::in_axes(0, kax::none), kax::out_axes(kax::none))(x, w);
#else
  auto e = kax::vmap(f, kax::in_axes(kax::none, kax::none), kax::out_axes(kax::none), kax::axis_size(4))(x, w);
#endif
  (void)e;
}
