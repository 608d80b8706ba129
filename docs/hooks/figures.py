"""MkDocs hook: draws the site's pictures when the site is built, and adds the
pages other parts of the project may add to the navigation when they exist.

The pictures are drawn by code (matplotlib), never kept as hand-made files:
- figures/loom-depths.svg: three trees, each node coloured by its depth, and
  the batched runs the Loom makes of them, one per op and depth;
- figures/treelstm-same-process.svg: treadle against PyTorch, from the
  benchmark results in bench/results, with the spread of the rounds and the
  speedup at each batch size;
- figures/treelstm-grid.svg: every implementation of the TreeLSTM benchmark
  against batch size, from its latest full run.
They are written to build/figures and added to the site as if they were in
docs/figures/."""

import json
import os
import re
import pathlib
import sys

from mkdocs.structure.files import File

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "build" / "figures"
RESULTS = ROOT / "bench" / "results"
OUTPUT_BLOCK = re.compile(r"(^```python[^\n]*\n.*?^```[ \t]*\n\s*^```)text[ \t]*$", re.S | re.M)


def on_page_markdown(markdown, page, config, files):
    """Labels the text block right after a python block as its output."""
    return OUTPUT_BLOCK.sub(r'\1text title="Output"', markdown)


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "treadle"  # the same drawing gives the same file
    import matplotlib.pyplot as plt
    return plt


# ------------------------------------------------------------ the Loom picture
TREES = [(1, (2, 3)), ((4, 5), (6, (7, 8))), (9, 10)]
DEPTH_COLOURS = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1"]


def depth(tree):
    """A leaf is at depth 1; a node one above its deeper child."""
    return 1 if isinstance(tree, int) else 1 + max(depth(tree[0]), depth(tree[1]))


def layout(tree, x0, counter, y_of):
    """[(x, y, depth, parent index)] of a tree's nodes, leaves spaced evenly."""
    nodes = []

    def place(t, parent):
        index = len(nodes)
        nodes.append(None)
        if isinstance(t, int):
            x = x0 + counter[0]
            counter[0] += 1
        else:
            left = place(t[0], index)
            right = place(t[1], index)
            x = (nodes[left][0] + nodes[right][0]) / 2
        nodes[index] = (x, y_of(depth(t)), depth(t), parent)
        return index

    place(tree, None)
    return nodes


def draw_loom_depths(path):
    plt = _pyplot()
    plt.rcParams.update({"font.size": 11})
    fig, (ax_trees, ax_runs) = plt.subplots(1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [1.1, 1]})
    x0, calls = 0.0, {}
    for tree in TREES:
        counter = [0]
        nodes = layout(tree, x0, counter, lambda d: d)
        for x, y, d, parent in nodes:
            if parent is not None:
                px, py = nodes[parent][:2]
                ax_trees.plot([x, px], [y, py], color="#999999", linewidth=1.2, zorder=1)
        for x, y, d, _ in nodes:
            ax_trees.scatter([x], [y], s=220, color=DEPTH_COLOURS[d - 1], edgecolor="black", zorder=2,
                             marker="s" if d == 1 else "o")
            calls[d] = calls.get(d, 0) + 1
        x0 += counter[0] + 1
    ax_trees.set_title("three trees: leaves (squares) and nodes, by depth", fontsize=12)
    ax_trees.set_yticks(range(1, max(calls) + 1), [f"depth {d}" for d in range(1, max(calls) + 1)])
    ax_trees.set_xticks([])
    ax_trees.set_ylim(0.4, max(calls) + 0.6)
    for side in ("top", "right", "bottom"):
        ax_trees.spines[side].set_visible(False)

    depths = sorted(calls)
    for d in depths:
        n = calls[d]
        ax_runs.barh(d, n, color=DEPTH_COLOURS[d - 1], edgecolor="black", height=0.6)
        op = "leaf" if d == 1 else "node"
        ax_runs.text(n + 0.3, d, f"{op} × {n}: one run", va="center", fontsize=11)
    total = sum(calls.values())
    ax_runs.set_yticks(depths, [f"depth {d}" for d in depths])
    ax_runs.set_ylim(0.4, max(depths) + 0.6)
    ax_runs.set_xlim(0, max(calls.values()) + 6)
    ax_runs.set_xlabel("calls batched into one run")
    ax_runs.set_title(f"the Loom: {len(depths)} batched runs instead of {total} calls", fontsize=12)
    for side in ("top", "right"):
        ax_runs.spines[side].set_visible(False)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


# ------------------------------------------------------------ the benchmark pictures
def _bench_plot():
    sys.path.insert(0, str(ROOT))
    from bench.treelstm import plot
    return plot


def draw_same_process(path):
    report = json.loads((RESULTS / "treelstm-avx2" / "treelstm_same_process.json").read_text())
    _bench_plot().plot_same_process(report, path)


def draw_grid(path):
    report = json.loads((RESULTS / "treelstm-avx2" / "treelstm.json").read_text())
    _bench_plot().plot(report, path)


FIGURES = {"loom-depths.svg": draw_loom_depths, "treelstm-same-process.svg": draw_same_process,
           "treelstm-grid.svg": draw_grid}


def on_files(files, config):
    OUT.mkdir(parents=True, exist_ok=True)
    for name, draw in FIGURES.items():
        draw(str(OUT / name))
        files.append(File(os.path.join("figures", name), str(OUT.parent), config["site_dir"],
                          config["use_directory_urls"]))
    return files
