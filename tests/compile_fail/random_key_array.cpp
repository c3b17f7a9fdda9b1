// A sampler takes one key; a key array is mapped over with vmap (JAX: "normal accepts a single
// key, but was given a key array ... Use jax.vmap for batching"): a compile-time error in kax.
// expect-error: kax::random: a sampler takes a single key
#include "kax/kax.hpp"

void case_body() {
  namespace random = kax::random;
  kax::Array<random::Key, 1> keys = random::split(random::key(0), 4);
#ifndef KAX_COMPILE_FAIL_CONTROL
  auto e = random::normal<float>(keys, {3});
#else
  auto e = kax::vmap([](auto k) { return random::normal<float>(k, {3}); })(keys);
#endif
  (void)e;
}
