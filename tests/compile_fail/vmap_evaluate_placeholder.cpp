// A vmapped function sees one example as a placeholder; evaluating it inside the function (instead
// of returning an expression of it) has no meaning, as concretizing a tracer has none in JAX.
// expect-error: kax::vmap: a mapped argument cannot be evaluated inside the vmapped function
#include "kax/kax.hpp"

void case_body() {
  kax::Array<float, 2> x(4, 5);
#ifndef KAX_COMPILE_FAIL_CONTROL
  auto f = [](auto a) {
    kax::Array<float, 1> copy = a * 2;
    return copy;
  };
#else
  auto f = [](auto a) { return a * 2; };
#endif
  kax::Array<float, 2> y = kax::vmap(f)(x);
  (void)y;
}
