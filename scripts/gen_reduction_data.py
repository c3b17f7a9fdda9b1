#!/usr/bin/python3
"""Writes the NumPy reference data of kax's reduction tests (tests/expr/test_reductions.cpp).

Run with a Python that has NumPy (/usr/bin/python3 here):
    /usr/bin/python3 scripts/gen_reduction_data.py
Deterministic (fixed seed, fixed formatting): rerunning it must leave `git diff` empty.  Files
are tests/data/reduce_*.txt in the format of scripts/gen_test_data.py (and tests/expr/
data_file.hpp): a "shape e0 e1 ..." line ("shape" alone for rank 0), then one %.17g value per
line in row-major order; booleans as 0/1.  Results are written without keepdims: with keepdims
the values are the same in the same order, and the test checks the shape itself.

Inputs:
    x3 (3, 4, 10) float64   last axis >= 8: reducing axis 0 or 1 takes kax's "outer" traversal
    w3 (6, 5, 3)  float64   last axis < 8: every reduction takes the "inner" traversal
    i3 (3, 4, 10) int32 in [-3, 3]  (small, so that prod of 10 of them stays exact in int32)
    t2 (4, 6)     int32 in [0, 2]   many ties, for argmax/argmin's "first index" rule
    fa (6, 7), fb (7,)  float64     for the fused operand sum(fa * fb + 1)
    a31 (3, 1), b14 (1, 4)          for broadcast operands
"""
import os

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data")

# Axis specs and their file-name suffixes; "all" is axis=None.
AXES = [("all", None), ("0", 0), ("1", 1), ("2", 2), ("0_2", (0, 2)), ("0_1", (0, 1)),
        ("1_2", (1, 2))]
OPS = {"sum": np.sum, "mean": np.mean, "prod": np.prod, "max": np.max, "min": np.min}


def write(name, a):
    a = np.asarray(a)
    if a.dtype == np.bool_:
        a = a.astype(np.int64)
    a = a.astype(np.float64)
    assert np.all(np.isfinite(a)), name  # the C++ reader does not parse nan/inf
    lines = ["shape" + "".join(" %d" % e for e in a.shape)]
    lines += ["%.17g" % v for v in a.ravel(order="C")]
    with open(os.path.join(OUT, "reduce_" + name + ".txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    rng = np.random.default_rng(20240717)
    u = lambda *s: rng.uniform(-2.0, 2.0, size=s)

    x3, w3 = u(3, 4, 10), u(6, 5, 3)
    write("x3", x3)
    write("w3", w3)
    for src, arr in [("x3", x3), ("w3", w3)]:
        for op, f in OPS.items():
            for suffix, axis in AXES:
                write("%s_%s_%s" % (src, op, suffix), f(arr, axis=axis))

    # Comparisons fused into any/all and into a bool sum (JAX: int32 counts).
    for suffix, axis in AXES[:4]:
        write("x3_any_gt1_" + suffix, np.any(x3 > 1.0, axis=axis))
        write("x3_all_gtm1_" + suffix, np.all(x3 > -1.0, axis=axis))
    write("x3_count_pos_2", np.sum(x3 > 0.0, axis=2))
    write("x3_count_pos_all", np.sum(x3 > 0.0))

    # argmax/argmin over the flattened array and along each axis.
    for suffix, axis in AXES[:4]:
        write("x3_argmax_" + suffix, np.argmax(x3, axis=axis))
        write("x3_argmin_" + suffix, np.argmin(x3, axis=axis))

    # Integers.
    i3 = rng.integers(-3, 4, size=(3, 4, 10)).astype(np.int32)
    write("i3", i3)
    write("i3_sum_1", np.sum(i3, axis=1))
    write("i3_mean_1", np.mean(i3, axis=1))
    write("i3_mean_all", np.mean(i3))
    write("i3_prod_2", np.prod(i3, axis=2))
    write("i3_max_0", np.max(i3, axis=0))
    write("i3_min_0_2", np.min(i3, axis=(0, 2)))

    # Ties: the first index wins.
    t2 = rng.integers(0, 3, size=(4, 6)).astype(np.int32)
    write("t2", t2)
    for suffix, axis in AXES[:3]:
        write("t2_argmax_" + suffix, np.argmax(t2, axis=axis))
        write("t2_argmin_" + suffix, np.argmin(t2, axis=axis))

    # Strided operands: a transpose and a slice of x3.
    xt = np.transpose(x3)  # (10, 4, 3)
    write("xt_sum_all", np.sum(xt))
    write("xt_sum_0", np.sum(xt, axis=0))
    write("xt_max_1_2", np.max(xt, axis=(1, 2)))
    write("xt_mean_2", np.mean(xt, axis=2))
    write("xt_argmax_all", np.argmax(xt))
    write("xt_argmin_0", np.argmin(xt, axis=0))
    xs = x3[:, ::-2, 1:]  # (3, 2, 9)
    write("xs_sum_1", np.sum(xs, axis=1))
    write("xs_max_0_2", np.max(xs, axis=(0, 2)))
    write("xs_mean_all", np.mean(xs))
    write("xs_min_0", np.min(xs, axis=0))

    # A fused operand and broadcast operands.
    fa, fb = u(6, 7), u(7)
    write("fa", fa)
    write("fb", fb)
    write("fused_sum_all", np.sum(fa * fb + 1.0))
    write("fused_sum_0", np.sum(fa * fb + 1.0, axis=0))
    write("fused_sum_1", np.sum(fa * fb + 1.0, axis=1))
    a31, b14 = u(3, 1), u(1, 4)
    write("a31", a31)
    write("b14", b14)
    write("bcast_sum_0", np.sum(a31 + b14, axis=0))
    write("bcast_sum_1", np.sum(a31 + b14, axis=1))
    write("bcast_prod_all", np.prod(a31 * b14))
    # broadcast_to(fb, (2, 5, 7)), the middle and last axes reduced.
    write("bcast_to_max_1_2", np.max(np.broadcast_to(fb, (2, 5, 7)), axis=(1, 2)))
    write("bcast_to_sum_0_1", np.sum(np.broadcast_to(fb, (2, 5, 7)), axis=(0, 1)))


if __name__ == "__main__":
    main()
