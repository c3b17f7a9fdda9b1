// kax::shard_map with fewer in_specs than the function has arguments (JAX: "shard_map in_specs
// must match the number of arguments"): a compile-time error in kax.
// expect-error: kax::shard_map: in_specs must have one PartitionSpec per argument of the call
#include "kax/kax.hpp"

void case_body() {
  const kax::Mesh mesh = kax::make_mesh({1}, {"x"});
  const auto x = kax::zeros<float>(4, 3);
#ifndef KAX_COMPILE_FAIL_CONTROL
  auto y = kax::shard_map([](const auto& a, const auto& b) { return a + b; }, mesh, kax::in_specs(kax::P("x")),
                          kax::out_specs(kax::P("x")))(x, x);
#else
  auto y = kax::shard_map([](const auto& a, const auto& b) { return a + b; }, mesh,
                          kax::in_specs(kax::P("x"), kax::P("x")), kax::out_specs(kax::P("x")))(x, x);
#endif
  (void)y;
}
