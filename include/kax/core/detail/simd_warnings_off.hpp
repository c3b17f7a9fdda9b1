// kax/core/detail/simd_warnings_off.hpp — included after the includes of every kax header with
// `#pragma omp simd` loops, paired with simd_warnings_on.hpp at its end (no include guard: it is
// meant to be included many times).
//
// clang reports each `omp simd` loop it leaves scalar as -Wpass-failed ("loop not vectorized"), in
// the user's build, once per instantiation: kax's kernels are instantiated for arbitrary
// expressions, some of which (generic rows, calls into libm) cannot be vectorized, and the loop is
// still correct.  GCC is silent in the same case.
#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wpass-failed"
#endif
