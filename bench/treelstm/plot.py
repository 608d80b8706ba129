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
    """Draws `report` (treelstm_bench's JSON) to `path`; None when matplotlib is missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(matplotlib is not installed: no plot)")
        return None
    training = report.get("training")
    rows = 2 if training else 1
    fig, grid = plt.subplots(rows, len(report["modes"]), figsize=(6.2 * len(report["modes"]), 4.8 * rows),
                             squeeze=False)
    axes = [ax for row in grid for ax in row]
    for ax, mode in zip(axes, report["modes"]):
        _throughput_panel(ax, report, mode)
    axes[0].legend(fontsize=7, loc="lower right")
    if training:
        _training_panels(axes[-2], axes[-1], training)
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
