// An operand that is neither an expression nor a scalar does not take part in kax's operators.
// expect-error: no match for 'operator+' || invalid operands to binary expression
#include <string>

#include "kax/kax.hpp"

void case_body() {
  kax::Array<float, 1> a(3);
#ifndef KAX_COMPILE_FAIL_CONTROL
  auto e = std::string{} + a;
#else
  auto e = 1.0f + a;
#endif
  (void)e;
}
