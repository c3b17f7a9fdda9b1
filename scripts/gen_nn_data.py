#!/usr/bin/python3
"""Writes the NumPy reference data of kax::nn's tests (tests/nn/test_nn.cpp) into tests/data/nn_*.txt.

Run with a Python that has NumPy (/usr/bin/python3 here):  /usr/bin/python3 scripts/gen_nn_data.py
Deterministic (fixed seed, fixed formatting): rerunning it must leave `git diff` empty.  The file
format is gen_test_data.py's (a "shape ..." line, then one %.17g value per line, row-major).

Inputs are rounded to float32, so the float and the double tests read exactly the same inputs and
only the arithmetic differs.  References are jax.nn's formulas written in float64 NumPy (no SciPy,
no JAX): the stable max-subtracted softmax/logsumexp, the overflow-free sigmoid, and gelu's tanh
approximation and exact erf form (erf from Python's math.erf).

    /usr/bin/python3 scripts/gen_nn_data.py --erf-fit
prints instead the coefficients of kax's vectorizable erf (include/kax/nn/detail/erf.hpp): the
Chebyshev fits, computed with mpmath at 50 digits (Debian's python3-mpmath; only this option needs
it), of P(t) = erf(sqrt t) / sqrt t on t in [0, 1], and of R(s) = v exp(v^2) erfc(v) with
w = 1/v = c + h s, s in [-1, 1], w in [1/6, 1] (double) or [1/4, 1] (float).  Degrees: the
smallest whose error, as an error of erf, is below the threshold (3e-18 for double, 5e-10 float).
"""
import math
import os
import sys

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data")


def write(name, a):
    a = np.asarray(a, dtype=np.float64)
    lines = ["shape" + "".join(" %d" % e for e in a.shape)]
    lines += ["%.17g" % v for v in a.ravel(order="C")]
    with open(os.path.join(OUT, name + ".txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def f32(a):
    return np.asarray(a, dtype=np.float64).astype(np.float32).astype(np.float64)


# ---- reference formulas (float64) ----------------------------------------------------------------
def softmax(x, axis):
    m = np.max(x, axis=axis, keepdims=True)
    e = np.exp(x - m)
    return e / np.sum(e, axis=axis, keepdims=True)


def log_softmax(x, axis):
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


def logsumexp(x, axis=None, keepdims=False):
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    s = np.sum(np.exp(x - m), axis=axis, keepdims=True)
    out = np.log(s) + m
    if not keepdims:
        out = np.squeeze(out, axis=axis)
    return out


def sigmoid(x):
    e = np.exp(-np.abs(x))  # <= 1: no overflow
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def gelu_tanh(x):
    return x * (0.5 * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3))))


def gelu_erf(x):
    erf = np.vectorize(math.erf)
    return x * (erf(x / np.sqrt(2.0)) + 1.0) / 2.0


def main():
    rng = np.random.default_rng(20240917)

    # (4, 7): an ordinary row, a row near +1000 and one near -1000 (exp overflows / underflows in
    # float64 without the max shift), and a wide row.
    x = np.stack([
        rng.uniform(-3.0, 3.0, 7),
        1000.0 + rng.uniform(0.0, 5.0, 7),
        -1000.0 + rng.uniform(-5.0, 0.0, 7),
        rng.uniform(-20.0, 20.0, 7),
    ])
    x = f32(x)
    write("nn_x", x)
    write("nn_softmax_last", softmax(x, -1))
    write("nn_softmax_axis0", softmax(x, 0))
    write("nn_log_softmax_last", log_softmax(x, -1))
    write("nn_log_softmax_axis0", log_softmax(x, 0))
    write("nn_logsumexp_all", logsumexp(x))
    write("nn_logsumexp_1", logsumexp(x, axis=1))
    write("nn_logsumexp_0_keep", logsumexp(x, axis=0, keepdims=True))

    # (2, 3, 4): logsumexp over two axes, one of them negative.
    x3 = f32(rng.uniform(-4.0, 4.0, (2, 3, 4)) + np.array([0.0, 900.0])[:, None, None])
    write("nn_x3", x3)
    write("nn_logsumexp_0_m1", logsumexp(x3, axis=(0, 2)))

    # Activations: a grid over [-8, 8], the tails, and tiny values.
    a = f32(np.concatenate([np.linspace(-8.0, 8.0, 33),
                            [-30.0, -15.0, 15.0, 30.0, -1000.0, 1000.0, 0.1, -0.1, 1e-3, -1e-3,
                             rng.uniform(-4.0, 4.0)]]))
    write("nn_act_x", a)
    write("nn_relu", np.maximum(a, 0.0))
    write("nn_sigmoid", sigmoid(a))
    write("nn_silu", a * sigmoid(a))
    write("nn_gelu_tanh", gelu_tanh(a))
    write("nn_gelu_erf", gelu_erf(a))


def erf_fit():
    import mpmath as mp  # only for --erf-fit

    mp.mp.dps = 50

    def max_error(f, poly, a, b, weight, n=3000):
        xs = (a + (b - a) * mp.mpf(i) / n for i in range(n + 1))
        return max(abs(mp.polyval(poly, x) - f(x)) * weight(x) for x in xs)

    def p_fun(t):
        return 2 / mp.sqrt(mp.pi) if t == 0 else mp.erf(mp.sqrt(t)) / mp.sqrt(t)

    for dtype, v_max, tol, digits in (("double", 6, 3e-18, 17), ("float", 4, 5e-10, 9)):
        for n in range(3, 40):  # P: relative error of erf(v) = v P(v^2)
            p = mp.chebyfit(p_fun, [0, 1], n)
            if max_error(p_fun, p, 0, 1, lambda t: 1 / p_fun(t)) < tol:
                break
        lo, hi = 1 / mp.mpf(v_max), mp.mpf(1)
        c, h = (lo + hi) / 2, (hi - lo) / 2

        def r_fun(s):
            v = 1 / (c + h * s)
            return v * mp.exp(v * v) * mp.erfc(v)

        for n in range(3, 40):  # R: absolute error of erf = exp(-v^2) w R
            r = mp.chebyfit(r_fun, [-1, 1], n)
            weight = lambda s: mp.exp(-1 / (c + h * s) ** 2) * (c + h * s)
            if max_error(r_fun, r, -1, 1, weight) < tol:
                break
        cast = (lambda x: float(np.float32(float(x)))) if dtype == "float" else float
        suffix = "f" if dtype == "float" else ""
        for name, poly, where in (("p", p, "t in [0, 1]"),
                                  ("r", r, "c = %s, h = %s" % (mp.nstr(c, 17), mp.nstr(h, 17)))):
            body = ", ".join(("%." + str(digits) + "g" + suffix) % cast(x) for x in poly)
            print("%s_%s (degree %d, %s): {%s}" % (name, dtype, len(poly) - 1, where, body))


if __name__ == "__main__":
    if sys.argv[1:] == ["--erf-fit"]:
        erf_fit()
    else:
        main()
