// kax::grad needs a scalar loss: a function returning an array is a compile-time error that says
// so (jax.grad raises "Gradient only defined for scalar-output functions").
// expect-error: kax::grad: f must return a scalar (rank-0) expression
#include "kax/kax.hpp"

void case_body() {
  kax::Array<float, 1> w(3);
#ifndef KAX_COMPILE_FAIL_CONTROL
  auto g = kax::grad([](const auto& v) { return v * 2.0f; })(w);
#else
  auto g = kax::grad([](const auto& v) { return kax::sum(v * 2.0f); })(w);
#endif
  (void)g;
}
