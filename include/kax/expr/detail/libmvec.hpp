// kax/expr/detail/libmvec.hpp — glibc's vector math library for float transcendentals on x86-64.
//
// Inside an `omp simd` loop GCC turns a call to a function declared `omp declare simd` into a
// call to its vector variant (_ZGVeN16v_sinf for AVX-512, _ZGVdN8v_sinf for AVX2, ...), which
// glibc's libmvec provides (linked through libm; IEEE-correct, within 4 ulp per glibc's manual).
// glibc declares these only under -ffast-math; private names bound to the same symbols with an
// asm label give kax the vector variants with IEEE semantics kept.  They are declared
// [[gnu::const]] (true with -fno-math-errno): otherwise GCC assumes each call may write memory,
// reloads the operands' pointers per element and gathers instead of loading.  For float, libmvec is
// 1.3-3x faster than kax's own vmath kernels, which compute float in double for <= 1 ulp; for
// double vmath is as fast and more accurate, so double stays on vmath.  Elsewhere (clang, other
// C libraries, device passes) kax uses vmath for float too.
#pragma once

#include <cmath>  // defines __GLIBC__
#include "kax/core/detail/simd_warnings_off.hpp"  // after every other include

namespace kax::detail::libmvec {

#if defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__) && !defined(__HIPCC__) && \
    defined(__x86_64__) && defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 22)
inline constexpr bool available = true;
#pragma omp declare simd notinbranch
extern "C" __attribute__((const)) float kax_libmvec_sinf(float) noexcept __asm__("sinf");
#pragma omp declare simd notinbranch
extern "C" __attribute__((const)) float kax_libmvec_cosf(float) noexcept __asm__("cosf");
#pragma omp declare simd notinbranch
extern "C" __attribute__((const)) float kax_libmvec_expf(float) noexcept __asm__("expf");
#pragma omp declare simd notinbranch
extern "C" __attribute__((const)) float kax_libmvec_logf(float) noexcept __asm__("logf");
#if __GLIBC__ > 2 || __GLIBC_MINOR__ >= 35
// tanhf's and erf's vector variants arrived in glibc 2.35 (erf is used by kax::nn::gelu).
inline constexpr bool has_tanh = true;
inline constexpr bool has_erf = true;
#pragma omp declare simd notinbranch
extern "C" __attribute__((const)) float kax_libmvec_tanhf(float) noexcept __asm__("tanhf");
#pragma omp declare simd notinbranch
extern "C" __attribute__((const)) float kax_libmvec_erff(float) noexcept __asm__("erff");
#pragma omp declare simd notinbranch
extern "C" __attribute__((const)) double kax_libmvec_erf(double) noexcept __asm__("erf");
#else
inline constexpr bool has_tanh = false;
inline constexpr bool has_erf = false;
inline float kax_libmvec_tanhf(float x) { return std::tanh(x); }
inline float kax_libmvec_erff(float x) { return std::erf(x); }
inline double kax_libmvec_erf(double x) { return std::erf(x); }
#endif
#else
inline constexpr bool available = false;
inline constexpr bool has_tanh = false;
inline constexpr bool has_erf = false;
// Never called (callers test `available`); they keep generic code well-formed.
inline float kax_libmvec_sinf(float x) { return std::sin(x); }
inline float kax_libmvec_cosf(float x) { return std::cos(x); }
inline float kax_libmvec_expf(float x) { return std::exp(x); }
inline float kax_libmvec_logf(float x) { return std::log(x); }
inline float kax_libmvec_tanhf(float x) { return std::tanh(x); }
inline float kax_libmvec_erff(float x) { return std::erf(x); }
inline double kax_libmvec_erf(double x) { return std::erf(x); }
#endif

}  // namespace kax::detail::libmvec

#include "kax/core/detail/simd_warnings_on.hpp"
