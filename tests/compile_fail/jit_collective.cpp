// A collective inside a function given to kax::jit: jit's partitioner decides the communication
// itself, so explicit collectives belong in kax::shard_map (JAX: psum inside jit without a bound
// axis name is an unbound-axis error).  A compile-time error in kax.
// expect-error: kax::jit: the function uses an operation the sharding partitioner does not handle
#include "kax/kax.hpp"

void case_body() {
  const kax::Mesh mesh = kax::make_mesh({1}, {"x"});
  const auto x = kax::zeros<float>(4, 3);
  const kax::NamedSharding s(mesh, kax::P("x"));
#ifndef KAX_COMPILE_FAIL_CONTROL
  auto y = kax::jit([](const auto& a) { return a / kax::psum<"x">(kax::sum(a)); }, kax::in_shardings(s))(x);
#else
  auto y = kax::jit([](const auto& a) { return a / kax::sum(a); }, kax::in_shardings(s))(x);
#endif
  (void)y;
}
