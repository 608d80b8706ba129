"""The benchmark figures: the same-process report draws throughput with the
spread of its rounds and a speedup panel; --plot-only says what is missing
instead of printing "None" when matplotlib is not installed."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.treelstm import plot  # noqa: E402

REPORT = {"benchmark": "treelstm_same_process", "trees": 16, "rounds": 3, "machine": {"cpu_model": "CPU", "cores": 2},
          "load_average_start": [0.5, 0.5, 0.5],
          "results": {"inference/4": {"treadle": {"rounds": [10.0, 12.0, 11.0]}, "torch": {"rounds": [5.0, 4.0, 6.0]}},
                      "inference/8": {"treadle": {"rounds": [20.0, 22.0, 21.0]}, "torch": {"rounds": [10.0, 10.0, 11.0]}}}}


def test_series_are_medians_and_ranges_of_the_rounds():
    [(b4, sides4, ratio4), (b8, _, _)] = plot.same_process_series(REPORT, "inference")
    assert (b4, b8) == (4, 8)
    assert sides4["treadle"] == (11.0, 10.0, 12.0) and sides4["torch"] == (5.0, 4.0, 6.0)
    assert ratio4 == (2.0, 11 / 6, 3.0)  # per-round ratios 2.0, 3.0, 11/6
    assert plot.same_process_series(REPORT, "training") == []


def test_same_process_figure_is_drawn(tmp_path):
    pytest.importorskip("matplotlib")
    path = plot.plot_same_process(REPORT, str(tmp_path / "f.png"))
    assert path and (tmp_path / "f.png").read_bytes()[:4] == b"\x89PNG"


def test_plot_only_without_matplotlib_says_so(tmp_path):
    report = tmp_path / "r.json"
    report.write_text(json.dumps(REPORT))
    blocker = tmp_path / "block" / "matplotlib"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('no matplotlib here')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(blocker.parent), os.environ.get("PYTHONPATH", "")]))
    result = subprocess.run([sys.executable, "bench/treelstm_bench.py", "--plot-only", str(report)], cwd=ROOT,
                            env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert "needs matplotlib" in result.stderr and "None" not in result.stdout + result.stderr
