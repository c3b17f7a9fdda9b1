// kax arrays hold bool, int32, int64, float or double (kax::dtype); uint8 is rejected.
// expect-error: dtype
#include <cstdint>

#include "kax/kax.hpp"

void case_body() {
#ifndef KAX_COMPILE_FAIL_CONTROL
  kax::Array<std::uint8_t, 1> a(3);
#else
  kax::Array<std::int32_t, 1> a(3);
#endif
  (void)a;
}
