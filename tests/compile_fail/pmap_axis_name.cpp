// A collective inside kax::pmap<"i"> over a name that the pmap does not bind (JAX raises NameError,
// "unbound axis name", when it traces f): a compile-time error in kax.
// expect-error: kax::pmap: the function uses a collective over an axis name that this pmap does not bind
#include "kax/kax.hpp"

void case_body() {
  const auto x = kax::zeros<float>(1, 3);
#ifndef KAX_COMPILE_FAIL_CONTROL
  auto y = kax::pmap<"i">([](const auto& a) { return a / kax::psum<"j">(kax::sum(a)); })(x);
#else
  auto y = kax::pmap<"i">([](const auto& a) { return a / kax::psum<"i">(kax::sum(a)); })(x);
#endif
  (void)y;
}
