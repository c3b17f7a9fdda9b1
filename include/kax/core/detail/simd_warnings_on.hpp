// kax/core/detail/simd_warnings_on.hpp — restores the diagnostics simd_warnings_off.hpp silenced
// (no include guard: it is meant to be included many times).
#if defined(__clang__)
#pragma clang diagnostic pop
#endif
