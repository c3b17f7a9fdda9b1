#!/usr/bin/python3
"""Writes the reference data of kax::random's tests into tests/data/random_*.txt.

An independent NumPy implementation of jax.random with jax_threefry_partitionable=True (JAX's
default since 0.5), written from jax/_src/prng.py and jax/_src/random.py (docs/random.md cites the
lines): threefry2x32-20, key(seed), split, fold_in, bits, uniform, normal (XLA's ErfInv, here in
NumPy float arithmetic), bernoulli.  Its threefry is checked against Random123's known answers
before anything is written.  Deterministic: rerunning it must leave `git diff` empty.

    /usr/bin/python3 scripts/gen_random_data.py

File format as scripts/gen_test_data.py (a "shape ..." line, then one %.17g value per line).
"""
import os
from fractions import Fraction

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data")
U32 = np.uint32


def write(name, a):
    a = np.asarray(a)
    if a.dtype == np.bool_:
        a = a.astype(np.int64)
    lines = ["shape" + "".join(" %d" % e for e in a.shape)]
    if np.issubdtype(a.dtype, np.integer):
        lines += ["%d" % v for v in a.ravel(order="C")]
    else:
        lines += ["%.17g" % v for v in a.astype(np.float64).ravel(order="C")]
    with open(os.path.join(OUT, name + ".txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def rotl(v, r):
    return (v << U32(r)) | (v >> U32(32 - r))


def threefry2x32(k0, k1, c0, c1):
    """Random123's threefry2x32 with 20 rounds, elementwise on uint32 arrays."""
    with np.errstate(over="ignore"):
        k0, k1 = U32(k0), U32(k1)
        ks = [k0, k1, k0 ^ k1 ^ U32(0x1BD11BDA)]
        x0 = np.asarray(c0, dtype=U32) + ks[0]
        x1 = np.asarray(c1, dtype=U32) + ks[1]
        rot = [[13, 15, 26, 6], [17, 29, 16, 24]]
        for i in range(5):
            for r in rot[i % 2]:
                x0 = x0 + x1
                x1 = rotl(x1, r)
                x1 = x1 ^ x0
            x0 = x0 + ks[(i + 1) % 3]
            x1 = x1 + ks[(i + 2) % 3] + U32(i + 1)
    return x0, x1


def key(seed):
    s = int(seed) & 0xFFFFFFFFFFFFFFFF
    return (s >> 32, s & 0xFFFFFFFF)


def counters(shape):
    n = np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.uint64).reshape(shape)
    return (n >> np.uint64(32)).astype(U32), (n & np.uint64(0xFFFFFFFF)).astype(U32)


def split(k, num):
    hi, lo = counters((num,))
    a, b = threefry2x32(k[0], k[1], hi, lo)
    return [(int(a[i]), int(b[i])) for i in range(num)]


def fold_in(k, data):
    a, b = threefry2x32(k[0], k[1], U32(0), U32(data))
    return (int(a), int(b))


def bits32(k, shape):
    hi, lo = counters(shape)
    a, b = threefry2x32(k[0], k[1], hi, lo)
    return a ^ b


def bits64(k, shape):
    hi, lo = counters(shape)
    a, b = threefry2x32(k[0], k[1], hi, lo)
    return (a.astype(np.uint64) << np.uint64(32)) | b.astype(np.uint64)


def round_to(dtype, exact):
    """The Fraction `exact` rounded to nearest (ties to even) in dtype."""
    r = dtype(float(exact))  # float() is correctly rounded to float64; float32 may round twice
    cands = [np.nextafter(r, dtype(-np.inf)), r, np.nextafter(r, dtype(np.inf))]
    bits = np.uint32 if dtype == np.float32 else np.uint64
    return min(cands, key=lambda c: (abs(Fraction(float(c)) - exact), int(np.array(c, dtype).view(bits)) & 1))


def fma(a, b, c):
    """a * b + c rounded once (XLA fuses multiply-adds on CPU and GPU), elementwise."""
    a, b, c = np.broadcast_arrays(a, b, c)
    dtype = a.dtype.type
    out = np.empty(a.shape, dtype)
    for i in np.ndindex(a.shape):
        out[i] = round_to(dtype, Fraction(float(a[i])) * Fraction(float(b[i])) + Fraction(float(c[i])))
    return out


def uniform(k, shape, dtype, minval=0.0, maxval=1.0):
    if dtype == np.float32:
        f = ((bits32(k, shape) >> U32(9)) | U32(0x3F800000)).view(np.float32) - np.float32(1)
    else:
        f = ((bits64(k, shape) >> np.uint64(12)) | np.uint64(0x3FF0000000000000)).view(np.float64) - 1.0
    lo, hi = dtype(minval), dtype(maxval)
    return np.maximum(lo, fma(f, dtype(hi - lo), lo)).astype(dtype)


def randint(k, shape, minval, maxval, dtype):
    """jax.random.randint: high and low draws from split(key), combined modulo the span."""
    nbits = np.dtype(dtype).itemsize * 8
    mask = (1 << nbits) - 1
    k1, k2 = split(k, 2)
    draw = bits32 if nbits == 32 else bits64
    high = [int(v) for v in draw(k1, shape).ravel()]
    low = [int(v) for v in draw(k2, shape).ravel()]
    span = 1 if maxval <= minval else (maxval - minval) & mask
    mult = (1 << (nbits // 2)) % span
    mult = ((mult * mult) & mask) % span
    out = []
    for h, l in zip(high, low):
        off = ((((h % span) * mult) & mask) + (l % span)) & mask
        v = (minval + off % span) & mask
        out.append(v - (1 << nbits) if v >> (nbits - 1) else v)
    return np.array(out, dtype=np.int64).reshape(shape)


ERFINV32 = ([2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
             -0.00125372503, -0.00417768164, 0.246640727, 1.50140941],
            [-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
             -0.0076224613, 0.00943887047, 1.00167406, 2.83297682])
ERFINV64 = ([-3.6444120640178196996e-21, -1.685059138182016589e-19, 1.2858480715256400167e-18,
             1.115787767802518096e-17, -1.333171662854620906e-16, 2.0972767875968561637e-17,
             6.6376381343583238325e-15, -4.0545662729752068639e-14, -8.1519341976054721522e-14,
             2.6335093153082322977e-12, -1.2975133253453532498e-11, -5.4154120542946279317e-11,
             1.051212273321532285e-09, -4.1126339803469836976e-09, -2.9070369957882005086e-08,
             4.2347877827932403518e-07, -1.3654692000834678645e-06, -1.3882523362786468719e-05,
             0.0001867342080340571352, -0.00074070253416626697512, -0.0060336708714301490533,
             0.24015818242558961693, 1.6536545626831027356],
            [2.2137376921775787049e-09, 9.0756561938885390979e-08, -2.7517406297064545428e-07,
             1.8239629214389227755e-08, 1.5027403968909827627e-06, -4.013867526981545969e-06,
             2.9234449089955446044e-06, 1.2475304481671778723e-05, -4.7318229009055733981e-05,
             6.8284851459573175448e-05, 2.4031110387097893999e-05, -0.0003550375203628474796,
             0.00095328937973738049703, -0.0016882755560235047313, 0.0024914420961078508066,
             -0.0037512085075692412107, 0.005370914553590063617, 1.0052589676941592334,
             3.0838856104922207635],
            [-2.7109920616438573243e-11, -2.5556418169965252055e-10, 1.5076572693500548083e-09,
             -3.7894654401267369937e-09, 7.6157012080783393804e-09, -1.4960026627149240478e-08,
             2.9147953450901080826e-08, -6.7711997758452339498e-08, 2.2900482228026654717e-07,
             -9.9298272942317002539e-07, 4.5260625972231537039e-06, -1.9681778105531670567e-05,
             7.5995277030017761139e-05, -0.00021503011930044477347, -0.00013871931833623122026,
             1.0103004648645343977, 4.8499064014085844221])


def horner(coeffs, w):
    p = np.full_like(w, coeffs[0])
    for c in coeffs[1:]:
        p = fma(p, w, w.dtype.type(c))
    return p


def erfinv(x):
    t = x.dtype.type
    w = -np.log1p(-x * x)
    with np.errstate(invalid="ignore", divide="ignore"):
        if x.dtype == np.float32:
            p = np.where(w < t(5), horner(ERFINV32[0], w - t(2.5)), horner(ERFINV32[1], np.sqrt(w) - t(3)))
        else:
            p = np.where(w < 6.25, horner(ERFINV64[0], w - 3.125),
                         np.where(w < 16.0, horner(ERFINV64[1], np.sqrt(w) - 3.25),
                                  horner(ERFINV64[2], np.sqrt(w) - 5.0)))
    return np.where(np.abs(x) == t(1), x * t(np.inf), p * x)


def normal(k, shape, dtype):
    lo = np.nextafter(dtype(-1), dtype(0))
    u = uniform(k, shape, dtype, lo, 1.0)
    return (dtype(np.sqrt(2)) * erfinv(u)).astype(dtype)


def permutation(k, n):
    """jax.random.permutation(key, n): rounds of stable sorts by fresh 32-bit draws."""
    x = np.arange(n, dtype=np.int64)
    rounds = int(np.ceil(3 * np.log(max(1, n)) / np.log(np.iinfo(np.uint32).max)))
    for _ in range(rounds):
        k, sub = split(k, 2)
        x = x[np.argsort(bits32(sub, (n,)), kind="stable")]
    return x


def main():
    # Random123's known-answer vectors for threefry2x32_20 (kat_vectors), which JAX's own tests use.
    kat = [((0, 0), (0, 0), (0x6B200159, 0x99BA4EFE)),
           ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
           ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0))]
    for k, c, want in kat:
        got = threefry2x32(k[0], k[1], U32(c[0]), U32(c[1]))
        assert (int(got[0]), int(got[1])) == want, (k, c, got)

    k0, k42 = key(0), key(42)
    write("random_split_key0_4", np.array(split(k0, 4), dtype=np.int64))
    write("random_split_key42_3", np.array(split(k42, 3), dtype=np.int64))
    write("random_fold_in_key42", np.array([fold_in(k42, d) for d in (0, 1, 7, 0xFFFFFFFF)], dtype=np.int64))
    write("random_key_seeds", np.array([key(s) for s in (0, 42, -1, 2**32 + 5, 2**63 - 1)], dtype=np.int64))
    write("random_bits_key42_3x5", bits32(k42, (3, 5)).astype(np.int64))
    write("random_uniform_f32_key0_1000", uniform(k0, (1000,), np.float32))
    write("random_uniform_f64_key0_1000", uniform(k0, (1000,), np.float64))
    write("random_uniform_f32_key42_m2_3_4x25", uniform(k42, (4, 25), np.float32, -2.0, 3.0))
    write("random_normal_f32_key42_1000", normal(k42, (1000,), np.float32))
    write("random_normal_f64_key42_1000", normal(k42, (1000,), np.float64))
    write("random_bernoulli_key7_p03_500", uniform(key(7), (500,), np.float32) < np.float32(0.3))
    # vmap over split keys: row i is the draw of split(key(3), 4)[i].
    keys = split(key(3), 4)
    write("random_randint_i32_key0_0_8_3x3", randint(k0, (3, 3), 0, 8, np.int32))
    write("random_randint_i32_key42_m5_100_50", randint(k42, (50,), -5, 100, np.int32))
    write("random_randint_i32_key42_big_20", randint(k42, (20,), -2**31, 2**31 - 1, np.int32))
    write("random_randint_i64_key42_big_20", randint(k42, (20,), -2**62, 2**62 + 12345, np.int64))
    write("random_permutation_key0_10", permutation(k0, 10))
    write("random_permutation_key42_2000", permutation(k42, 2000))  # two rounds (n > 1625)
    write("random_vmap_normal_f32_key3_4x6", np.stack([normal(k, (6,), np.float32) for k in keys]))


if __name__ == "__main__":
    main()
