#!/usr/bin/python3
"""Draws the block layouts of docs/sharding.md: an (8, 8) array over a 2x2 mesh ("x", "y").

Run with a Python that has matplotlib and NumPy (/usr/bin/python3 here):
    /usr/bin/python3 scripts/plot_sharding.py
Writes docs/img/sharding_mesh.png (the mesh) and docs/img/sharding_<name>.png, one per spec:
    x_y        P("x", "y")
    x_none     P("x", None)
    none_y     P(None, "y")
    xy_none    P(("x", "y"), None)
    replicated P()
Deterministic (no timestamps or version strings in the PNGs): rerunning it must leave `git diff`
empty.

The layout is computed here from the rules of include/kax/parallel/mesh.hpp, not read from kax:
mesh position k has coordinates unravel(k, shape) (row-major), and the device at position k holds,
along dimension d, block number sum over the spec entry's names (first name major) of its
coordinates.  A mesh axis that the spec does not name replicates the block: every device that
differs only along unnamed axes holds the same block, and the picture lists them all.  With one
process the mesh is kax::devices()[0..3], so position k is device k.
"""
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Polygon, Rectangle  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs", "img")

MESH_SHAPE = (2, 2)
MESH_NAMES = ("x", "y")
ARRAY_SHAPE = (8, 8)
# Light colours, one per device (matplotlib's tab10, lightened so black text stays readable).
DEVICE_COLORS = ["#9ecae9", "#ffbe86", "#a6dba0", "#f4a3a8"]

# (file name, spec as kax writes it, spec entries: a tuple of mesh axis names per dimension).
SPECS = [
    ("x_y", 'P("x", "y")', [("x",), ("y",)]),
    ("x_none", 'P("x", kax::none)', [("x",), ()]),
    ("none_y", 'P(kax::none, "y")', [(), ("y",)]),
    ("xy_none", 'P({"x", "y"}, kax::none)', [("x", "y"), ()]),
    ("replicated", "P()", [(), ()]),
]


def coords(k):
    """Mesh position k -> coordinates, row-major (Mesh::coords)."""
    c = [0] * len(MESH_SHAPE)
    for a in reversed(range(len(MESH_SHAPE))):
        c[a] = k % MESH_SHAPE[a]
        k //= MESH_SHAPE[a]
    return c


def shards(entry):
    """How many blocks a dimension is split into (NamedSharding::shards)."""
    n = 1
    for name in entry:
        n *= MESH_SHAPE[MESH_NAMES.index(name)]
    return n


def block_index(k, entry):
    """Which block of a dimension position k holds, first name major (NamedSharding::block_index)."""
    c = coords(k)
    i = 0
    for name in entry:
        a = MESH_NAMES.index(name)
        i = i * MESH_SHAPE[a] + c[a]
    return i


def device_label(k):
    c = coords(k)
    return f"dev {k} (" + ",".join(f"{n}={v}" for n, v in zip(MESH_NAMES, c)) + ")"


def layout(spec):
    """{(block row, block col): [mesh positions holding it]} and the block shape."""
    block = tuple(ARRAY_SHAPE[d] // shards(spec[d]) for d in range(2))
    assert all(ARRAY_SHAPE[d] % shards(spec[d]) == 0 for d in range(2))
    holders = {}
    for k in range(MESH_SHAPE[0] * MESH_SHAPE[1]):
        holders.setdefault(tuple(block_index(k, spec[d]) for d in range(2)), []).append(k)
    return holders, block


def fill_block(ax, left, top, width, height, ks):
    """Fills a block with its device's colour; a replicated block gets diagonal bands of every
    holder's colour (diagonal, so that they do not read as a split of the block)."""
    if len(ks) == 1:
        ax.add_patch(Rectangle((left, top), width, height, facecolor=DEVICE_COLORS[ks[0]], edgecolor="none"))
        return
    clip = Rectangle((left, top), width, height, transform=ax.transData, facecolor="none", edgecolor="none")
    ax.add_patch(clip)
    band = 0.6  # cells, measured along the array's rows
    n = int((width + height) / band) + 2
    for b in range(n):
        t0, t1 = b * band, (b + 1) * band  # the band between the lines x + y = left + top + t
        corners = [(left + t0, top), (left + t1, top), (left + t1 - height - band, top + height + band),
                   (left + t0 - height - band, top + height + band)]
        poly = Polygon(corners, closed=True, facecolor=DEVICE_COLORS[ks[b % len(ks)]], edgecolor="none")
        ax.add_patch(poly)
        poly.set_clip_path(clip)


def new_figure():
    fig, ax = plt.subplots(figsize=(4.6, 4.9))
    ax.set_aspect("equal")
    ax.invert_yaxis()  # row 0 at the top, as the array prints
    ax.xaxis.tick_top()
    return fig, ax


def save(fig, name):
    path = os.path.join(OUT, f"sharding_{name}.png")
    # Software=None drops matplotlib's version string, so the file depends only on the picture.
    fig.savefig(path, dpi=80, metadata={"Software": None})
    plt.close(fig)
    print(f"wrote {os.path.relpath(path)} ({os.path.getsize(path) // 1024} KB)")


def plot_spec(name, text, spec):
    holders, (bh, bw) = layout(spec)
    rows, cols = ARRAY_SHAPE
    fig, ax = new_figure()
    for (bi, bj), ks in sorted(holders.items()):
        top, left = bi * bh, bj * bw
        fill_block(ax, left, top, bw, bh, ks)
        ax.add_patch(Rectangle((left, top), bw, bh, fill=False, edgecolor="black", linewidth=2.5, zorder=3))
        ax.text(left + bw / 2, top + bh / 2, "\n".join(device_label(k) for k in ks), ha="center", va="center",
                fontsize=8, zorder=4,
                bbox=dict(boxstyle="round,pad=0.25", facecolor="white", edgecolor="none", alpha=0.85))
    for i in range(rows + 1):
        ax.plot([0, cols], [i, i], color="black", linewidth=0.4, alpha=0.35, zorder=2)
    for j in range(cols + 1):
        ax.plot([j, j], [0, rows], color="black", linewidth=0.4, alpha=0.35, zorder=2)
    ax.set_xlim(0, cols)
    ax.set_ylim(rows, 0)
    ax.set_xticks([j + 0.5 for j in range(cols)], [str(j) for j in range(cols)], fontsize=7)
    ax.set_yticks([i + 0.5 for i in range(rows)], [str(i) for i in range(rows)], fontsize=7)
    ax.tick_params(length=0)
    ax.set_title(f"{text}: blocks of shape ({bh}, {bw})", fontsize=10, pad=16)
    ax.set_xlabel("(8, 8) array over Mesh('x': 2, 'y': 2)", fontsize=8)
    fig.tight_layout()
    save(fig, name)


def plot_mesh():
    fig, ax = new_figure()
    for k in range(MESH_SHAPE[0] * MESH_SHAPE[1]):
        i, j = coords(k)
        ax.add_patch(Rectangle((j, i), 1, 1, facecolor=DEVICE_COLORS[k], edgecolor="black", linewidth=2.5))
        ax.text(j + 0.5, i + 0.5, f"position {k}\n{device_label(k)}", ha="center", va="center", fontsize=9)
    ax.set_xlim(0, MESH_SHAPE[1])
    ax.set_ylim(MESH_SHAPE[0], 0)
    ax.set_xticks([j + 0.5 for j in range(MESH_SHAPE[1])], [f"y={j}" for j in range(MESH_SHAPE[1])], fontsize=9)
    ax.set_yticks([i + 0.5 for i in range(MESH_SHAPE[0])], [f"x={i}" for i in range(MESH_SHAPE[0])], fontsize=9)
    ax.tick_params(length=0)
    ax.set_title('kax::make_mesh({2, 2}, {"x", "y"})', fontsize=10, pad=16)
    ax.set_xlabel("mesh positions are row-major: position k = 2 x + y", fontsize=8)
    fig.tight_layout()
    save(fig, "mesh")


def main():
    os.makedirs(OUT, exist_ok=True)
    plot_mesh()
    for name, text, spec in SPECS:
        plot_spec(name, text, spec)


if __name__ == "__main__":
    main()
