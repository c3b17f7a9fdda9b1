#!/usr/bin/python3
"""Writes the NumPy reference data of kax's contraction tests (tests/expr/test_contractions.cpp).

Run with a Python that has NumPy (/usr/bin/python3 here):
    /usr/bin/python3 scripts/gen_contraction_data.py
Deterministic (fixed seed, fixed formatting): rerunning it must leave `git diff` empty.  Files
are tests/data/contract_*.txt in the format of scripts/gen_test_data.py (and tests/expr/
data_file.hpp): a "shape e0 e1 ..." line ("shape" alone for rank 0), then one %.17g value per
line in row-major order.

Float inputs are rounded to float32 before anything is computed from them, so the float and the
double tests read exactly the same operands; the references are computed in float64.  Integer
inputs are small (in [-5, 5]) so that every integer result is exact in int32.

Inputs (name: shape):
    a34 (3, 4), b45 (4, 5), v4 (4,), u3 (3,), w5 (5,), sq44 (4, 4), c34 (3, 4)
    q3 (2, 3, 4), k3 (2, 5, 4)              "...qd,...kd->...qk" with rank 3
    q4 (2, 2, 3, 4), k4 (2, 2, 5, 4)        the same with rank 4
    bij (2, 3, 4), bjk (2, 4, 5)            "bij,bjk->bik"
    e2134 (2, 1, 3, 4), e345 (3, 4, 5)      batch shapes (2, 1) and (3,) broadcast to (2, 3)
    t234 (2, 3, 4), t45x (4, 5), t546 (5, 4, 6)   dot's rank-3 rules
    s0 ()                                   dot of a scalar and an array
    ia34, ib45, iv4, isq44, ic34, ibij, ibjk, ie2134, ie345   int32 versions
"""
import os

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data")


def write(name, a):
    a = np.asarray(a).astype(np.float64)
    assert np.all(np.isfinite(a)), name  # the C++ reader does not parse nan/inf
    lines = ["shape" + "".join(" %d" % e for e in a.shape)]
    lines += ["%.17g" % v for v in a.ravel(order="C")]
    with open(os.path.join(OUT, "contract_" + name + ".txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    rng = np.random.default_rng(20240917)
    # float32-representable doubles in [-2, 2]
    u = lambda *s: rng.uniform(-2.0, 2.0, size=s).astype(np.float32).astype(np.float64)
    ints = lambda *s: rng.integers(-5, 6, size=s).astype(np.int64)

    f = {
        "a34": u(3, 4), "b45": u(4, 5), "v4": u(4), "u3": u(3), "w5": u(5), "sq44": u(4, 4),
        "c34": u(3, 4), "q3": u(2, 3, 4), "k3": u(2, 5, 4), "q4": u(2, 2, 3, 4),
        "k4": u(2, 2, 5, 4), "bij": u(2, 3, 4), "bjk": u(2, 4, 5), "e2134": u(2, 1, 3, 4),
        "e345": u(3, 4, 5), "t234": u(2, 3, 4), "t45x": u(4, 5), "t546": u(5, 4, 6),
        "s0": u(),
    }
    for n, v in f.items():
        write(n, v)
    es = np.einsum

    # einsum, float inputs
    write("ij_jk", es("ij,jk->ik", f["a34"], f["b45"]))
    write("ij_jk_ki", es("ij,jk->ki", f["a34"], f["b45"]))
    write("qd_kd3", es("...qd,...kd->...qk", f["q3"], f["k3"]))
    write("qd_kd4", es("...qd,...kd->...qk", f["q4"], f["k4"]))
    write("ii_i", es("ii->i", f["sq44"]))
    write("trace", es("ii->", f["sq44"]))
    write("ij_sum", es("ij->", f["a34"]))
    write("ij_ji", es("ij->ji", f["a34"]))
    write("outer", es("i,j->ij", f["u3"], f["v4"]))
    write("bij_bjk", es("bij,bjk->bik", f["bij"], f["bjk"]))
    write("bij_bjk_ikb", es("bij,bjk->ikb", f["bij"], f["bjk"]))
    write("bij_jk_i", es("bij,jk->i", f["bij"], f["b45"]))
    write("frobenius", es("ij,ij->", f["a34"], f["c34"]))
    write("ij_j", es("ij,j->i", f["a34"], f["v4"]))
    write("ba", es("ba", f["a34"]))
    write("ell_bcast", es("...ij,...jk->...ik", f["e2134"], f["e345"]))

    # matmul and dot, float inputs
    write("mm_vec_mat", np.matmul(f["v4"], f["b45"]))
    write("mm_mat_vec", np.matmul(f["a34"], f["v4"]))
    write("mm_vec_vec", np.matmul(f["v4"], f["v4"]))
    write("mm_bcast", np.matmul(f["e2134"], f["e345"]))
    write("dot_vec_vec", np.dot(f["v4"], f["v4"]))
    write("dot_mat_vec", np.dot(f["a34"], f["v4"]))
    write("dot_mat_mat", np.dot(f["a34"], f["b45"]))
    write("dot_3_2", np.dot(f["t234"], f["t45x"]))
    write("dot_3_3", np.dot(f["t234"], f["t546"]))
    write("dot_s_mat", np.dot(f["s0"], f["a34"]))

    # int32 inputs (generic reduction path): exact
    i = {"ia34": ints(3, 4), "ib45": ints(4, 5), "iv4": ints(4), "isq44": ints(4, 4),
         "ic34": ints(3, 4), "ibij": ints(2, 3, 4), "ibjk": ints(2, 4, 5),
         "ie2134": ints(2, 1, 3, 4), "ie345": ints(3, 4, 5)}
    for n, v in i.items():
        write(n, v)
    write("i_ij_jk", es("ij,jk->ik", i["ia34"], i["ib45"]))
    write("i_ii_i", es("ii->i", i["isq44"]))
    write("i_trace", es("ii->", i["isq44"]))
    write("i_ij_sum", es("ij->", i["ia34"]))
    write("i_ij_ji", es("ij->ji", i["ia34"]))
    write("i_bij_bjk", es("bij,bjk->bik", i["ibij"], i["ibjk"]))
    write("i_frobenius", es("ij,ij->", i["ia34"], i["ic34"]))
    write("i_ij_j", es("ij,j->i", i["ia34"], i["iv4"]))
    write("i_ell_bcast", es("...ij,...jk->...ik", i["ie2134"], i["ie345"]))


if __name__ == "__main__":
    main()
