"""The TreeLSTM benchmark's figure: throughput against batch size for every
implementation (the median of the repeated runs, with their full range as a
band and error bars), and the training run's loss and training accuracy on
axes of their own.

Every implementation stays visible: each has its own marker and colour, the
points of implementations measured at one batch size are drawn large and
hollow, and the points at one batch size are spread a little sideways so that
equal figures do not hide each other."""

import statistics

MARKERS = ["o", "s", "D", "^", "v", "P", "X"]
COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2"]


def runs_of(result):
    """The per-run figures of one configuration (old single-run reports: one)."""
    return result.get("trees_per_s_runs") or [result["trees_per_s"]]


def summary(values):
    """(median, min, max) of a list of figures."""
    return statistics.median(values), min(values), max(values)


def _throughput_panel(ax, report, mode):
    impls = [(name, r) for name, r in report["implementations"].items() if r is not None]
    spread = 2 ** 0.09  # sideways offset factor between implementations on the log-2 axis
    for k, (name, r) in enumerate(impls):
        xs = [b for b in report["batches"] if f"{mode}/{b}" in r["results"]]
        if not xs:
            continue
        stats = [summary(runs_of(r["results"][f"{mode}/{b}"])) for b in xs]
        offset = spread ** (k - (len(impls) - 1) / 2)
        x = [b * offset for b in xs]
        med = [s[0] for s in stats]
        lo = [s[0] - s[1] for s in stats]
        hi = [s[2] - s[0] for s in stats]
        colour, marker = COLOURS[k % len(COLOURS)], MARKERS[k % len(MARKERS)]
        single = len(xs) == 1
        ax.errorbar(x, med, yerr=[lo, hi], color=colour, marker=marker, markersize=9 if single else 5,
                    markerfacecolor="none" if single else colour, linestyle="none" if single else "-",
                    capsize=3, linewidth=1.4, label=name + (" (batch 1 only)" if single and xs == [1] else ""))
        if len(xs) > 1 and any(s[1] != s[2] for s in stats):
            ax.fill_between(x, [s[1] for s in stats], [s[2] for s in stats], color=colour, alpha=0.12,
                            linewidth=0)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(report["batches"], [str(b) for b in report["batches"]])
    ax.set_xlabel("batch size (trees per step)")
    ax.set_ylabel("throughput (trees per second)")
    repeats = report.get("repeats", 1)
    ax.set_title(f"{mode}: median of {repeats} runs, bars from lowest to highest" if repeats > 1 else
                 f"{mode}: one run (no spread measured)")
    ax.grid(True, which="both", alpha=0.3)


def _training_panels(ax_loss, ax_acc, training):
    curve = training["curve"]
    epochs = [c["epoch"] for c in curve]
    ax_loss.plot(epochs, [c["loss"] for c in curve], marker="s", color=COLOURS[0])
    ax_loss.set_xlabel("epoch")
    ax_loss.set_ylabel("mean cross-entropy loss (training trees)")
    ax_loss.set_title(f"training loss (Adam {training['learning_rate']}, batch {training['batch_size']})")
    ax_loss.set_xticks(epochs)
    ax_loss.grid(True, alpha=0.3)
    ax_acc.plot(epochs, [100 * c["accuracy"] for c in curve], marker="o", color=COLOURS[2],
                label="training accuracy")
    ax_acc.axhline(100 * training["majority_class"], color="gray", linestyle="--",
                   label="majority class (always guessing it)")
    ax_acc.set_xlabel("epoch")
    ax_acc.set_ylabel("training accuracy (%), on the training trees")
    ax_acc.set_ylim(0, 100)
    ax_acc.set_xticks(epochs)
    ax_acc.set_title("training accuracy (no held-out set)")
    ax_acc.legend(fontsize=7, loc="lower right")
    ax_acc.grid(True, alpha=0.3)


def plot(report, path):
    """Draws `report` (treelstm_bench's JSON) to `path`: a throughput panel per
    mode, treadle's speedup over PyTorch, and the training run when there is
    one. Returns `path`, or None when matplotlib is missing."""
    plt = _pyplot()
    if plt is None:
        return None
    training = report.get("training")
    columns = len(report["modes"]) + 1
    rows = 2 if training else 1
    fig, grid = plt.subplots(rows, columns, figsize=(5.6 * columns, 4.8 * rows), squeeze=False)
    axes = [ax for row in grid for ax in row]
    for ax, mode in zip(axes, report["modes"]):
        _throughput_panel(ax, report, mode)
    axes[0].legend(fontsize=7, loc="lower right")
    if not speedup_panel(axes[len(report["modes"])], report):
        axes[len(report["modes"])].set_axis_off()
    if training:
        _training_panels(axes[columns], axes[columns + 1], training)
        for ax in axes[columns + 2:]:
            ax.set_axis_off()
    machine = report.get("machine", {})
    load = report.get("load_average_start", [None])[0]
    context = (f"; sgemm measured at {report['sgemm_gflops']:.0f} GFLOP/s, load average {load:.1f} at the start "
               "(other work on the machine slows every figure)") if "sgemm_gflops" in report and load is not None else ""
    fig.suptitle(f"TreeLSTM on {report['trees']} SST-like trees; {machine.get('cpu_model', '?')}, "
                 f"{machine.get('cores', '?')} cores{context}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _pyplot():
    """matplotlib's pyplot on the file-only backend, or None when matplotlib is missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def same_process_series(report, mode):
    """[(batch, {side: (median, min, max)}, (ratio median, min, max))] of a
    treelstm_same_process report: trees/s over its rounds for treadle and
    PyTorch, and the per-round ratios treadle / PyTorch."""
    out = []
    for key, entry in report["results"].items():
        m, b = key.split("/")
        if m != mode or "torch" not in entry:
            continue
        sides = {side: summary(entry[side]["rounds"]) for side in ("treadle", "torch")}
        ratios = [x / y for x, y in zip(entry["treadle"]["rounds"], entry["torch"]["rounds"])]
        out.append((int(b), sides, summary(ratios)))
    return sorted(out, key=lambda item: item[0])


def _band(ax, xs, stats, colour, marker, label):
    med = [s[0] for s in stats]
    ax.errorbar(xs, med, yerr=[[s[0] - s[1] for s in stats], [s[2] - s[0] for s in stats]], color=colour,
                marker=marker, capsize=4, linewidth=1.6, markersize=6, label=label)
    ax.fill_between(xs, [s[1] for s in stats], [s[2] for s in stats], color=colour, alpha=0.15, linewidth=0)


def plot_same_process(report, path):
    """Draws a treelstm_same_process report to `path`: per mode, trees/s of
    treadle and PyTorch against batch size (median of the rounds, band and bars
    from the lowest to the highest round), and a panel of treadle's speedup
    (per-round ratios, same spread). Returns `path`, or None without matplotlib."""
    plt = _pyplot()
    if plt is None:
        return None
    modes = [m for m in ("inference", "training") if same_process_series(report, m)]
    fig, axes = plt.subplots(1, len(modes) + 1, figsize=(5.2 * (len(modes) + 1), 4.4), squeeze=False)
    axes = axes[0]
    names = {"treadle": "treadle (Loom)", "torch": "PyTorch, batched by height"}
    for ax, mode in zip(axes, modes):
        series = same_process_series(report, mode)
        xs = [b for b, _, _ in series]
        for k, side in enumerate(("treadle", "torch")):
            _band(ax, xs, [s[side] for _, s, _ in series], COLOURS[k], MARKERS[k], names[side])
        ax.set_xscale("log", base=2)
        ax.set_xticks(xs, [str(b) for b in xs])
        ax.set_ylim(bottom=0)
        ax.set_xlabel("batch size (trees per step)")
        ax.set_ylabel("trees per second")
        ax.set_title(f"{mode}")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
    ax = axes[-1]
    for k, mode in enumerate(modes):
        series = same_process_series(report, mode)
        _band(ax, [b for b, _, _ in series], [r for _, _, r in series], COLOURS[k + 2], MARKERS[k + 2], mode)
    ax.axhline(1.0, color="gray", linestyle="--", linewidth=1)
    ax.set_xscale("log", base=2)
    xs = sorted({b for mode in modes for b, _, _ in same_process_series(report, mode)})
    ax.set_xticks(xs, [str(b) for b in xs])
    ax.set_ylim(bottom=0)
    ax.set_xlabel("batch size (trees per step)")
    ax.set_ylabel("treadle's speedup over PyTorch (×)")
    ax.set_title("how much faster, at each batch size")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    machine = report.get("machine", {})
    fig.suptitle(f"TreeLSTM on {report['trees']} SST-like trees, treadle and PyTorch in one process: median of "
                 f"{report['rounds']} alternating rounds, bars from the lowest to the highest; "
                 f"{machine.get('cpu_model', '?')}, {machine.get('cores', '?')} cores, load average "
                 f"{report['load_average_start'][0]:.1f}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def speedup_panel(ax, report, mode_colours=None):
    """treadle's speedup over PyTorch by height against batch size, for a
    treelstm_bench report: per batch size, the ratios of the runs (each run of
    treadle against every run of PyTorch); the median, and bars from the lowest
    to the highest."""
    impls = report["implementations"]
    ours, theirs = impls.get("treadle loom"), impls.get("torch by height")
    if not ours or not theirs:
        return False
    for k, mode in enumerate(report["modes"]):
        xs, stats = [], []
        for b in report["batches"]:
            key = f"{mode}/{b}"
            if key in ours["results"] and key in theirs["results"]:
                # Runs in separate processes are not paired: every run of one against every run of the other.
                ratios = [x / y for x in runs_of(ours["results"][key]) for y in runs_of(theirs["results"][key])]
                xs.append(b)
                stats.append(summary(ratios))
        if xs:
            _band(ax, xs, stats, COLOURS[k + 2], MARKERS[k + 2], mode)
    ax.axhline(1.0, color="gray", linestyle="--", linewidth=1)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")  # runs in separate processes on a busy machine can differ by tens of times
    ax.set_xticks(report["batches"], [str(b) for b in report["batches"]])
    ax.set_xlabel("batch size (trees per step)")
    ax.set_ylabel("treadle's speedup over PyTorch by height (×)")
    ax.set_title("how much faster, at each batch size")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return True
