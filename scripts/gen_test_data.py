#!/usr/bin/python3
"""Writes the NumPy reference data of kax's expression tests into tests/data/.

Run with a Python that has NumPy (/usr/bin/python3 here):  /usr/bin/python3 scripts/gen_test_data.py
The output is deterministic (fixed seed, fixed formatting), so rerunning it must leave `git diff`
empty.  File format, one array per file:
    line 1: "shape" followed by the extents ("shape 3 4"; just "shape" for rank 0)
    then:   one value per line in row-major order, printed with %.17g (exact for float64);
            booleans are written as 0/1.
"""
import os

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data")


def write(name, a):
    a = np.asarray(a)
    if a.dtype == np.bool_:
        a = a.astype(np.int64)
    a = a.astype(np.float64)
    lines = ["shape" + "".join(" %d" % e for e in a.shape)]
    lines += ["%.17g" % v for v in a.ravel(order="C")]
    with open(os.path.join(OUT, name + ".txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    rng = np.random.default_rng(20240601)
    u = lambda *s: rng.uniform(-2.0, 2.0, size=s)

    # Broadcasting: (3,1)+(1,4), (4,)*(3,4), rank-0 array.
    a31, b14, c4, d34 = u(3, 1), u(1, 4), u(4), u(3, 4)
    s0 = np.float64(rng.uniform(-2.0, 2.0))
    for n, v in [("bcast_a31", a31), ("bcast_b14", b14), ("bcast_c4", c4), ("bcast_d34", d34),
                 ("bcast_s0", s0)]:
        write(n, v)
    write("bcast_a31_plus_b14", a31 + b14)
    write("bcast_c4_times_d34_minus_a31", c4 * d34 - a31)
    write("bcast_d34_times_s0_plus_c4", d34 * s0 + c4)

    # Layout ops on x of shape (2, 3, 4) (and a (1, 3, 1, 4) array for squeeze).
    x = u(2, 3, 4)
    write("layout_x", x)
    write("transpose_default", np.transpose(x))
    write("transpose_1_2_0", np.transpose(x, (1, 2, 0)))
    write("transpose_m1_0_m2", np.transpose(x, (-1, 0, -2)))
    write("reshape_4_m1", x.reshape(4, -1))
    write("reshape_m1_3_2_2", x.reshape(-1, 3, 2, 2))
    write("reshape_of_transpose_6_m1", np.transpose(x).reshape(6, -1))
    write("slice_rev_1on_rev2", x[::-1, 1:, ::-2])
    write("slice_neg_start_stop", x[-1:-3:-1, -2:, 1:-1])
    write("slice_clamped", x[-100:100, 1:100, -100:2])
    write("slice_step2_negstop", x[:, ::2, -1:0:-2])
    write("expand_dims_1", np.expand_dims(x, 1))
    write("expand_dims_m1", np.expand_dims(x, -1))
    y = u(1, 3, 1, 4)
    write("layout_y", y)
    write("squeeze_0_2", np.squeeze(y, axis=(0, 2)))
    write("squeeze_m2", np.squeeze(y, axis=-2))
    write("broadcast_to_c4_234", np.broadcast_to(c4, (2, 3, 4)))
    write("broadcast_to_a31_234", np.broadcast_to(a31, (2, 3, 4)))
    # Layout composed with arithmetic: transpose(x, (1,0,2))[::-1] * c4 + expand_dims(a31, 1).
    write("layout_composed",
          np.transpose(x, (1, 0, 2))[::-1] * c4 + np.expand_dims(a31, 1))

    # where with broadcasting (the condition is (3, 4), the branches (3, 4) and (4,)).
    cond = u(3, 4) > 0.0
    write("where_cond", cond)
    write("where_d34_c4", np.where(cond, d34, c4))
    write("where_a31_b14_scalar", np.where(a31 > 0.0, b14, -1.5))

    # A compound expression: a*b + sin(c)*2 - d/e.
    ca, cb, cc, cd = u(3, 4), u(4), u(3, 1), u(3, 4)
    ce = rng.uniform(0.5, 2.0, size=(1, 4))
    for n, v in [("compound_a", ca), ("compound_b", cb), ("compound_c", cc), ("compound_d", cd),
                 ("compound_e", ce)]:
        write(n, v)
    write("compound_result", ca * cb + np.sin(cc) * 2 - cd / ce)


if __name__ == "__main__":
    main()
