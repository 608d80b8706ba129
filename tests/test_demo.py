"""scripts/demo.sh's parts: the race against PyTorch says its result in plain
words and draws no progress bar into a log, and the build's progress filter
turns ninja's steps into a counter while keeping the whole output."""

import importlib.util
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_the_race_speaks_plainly_and_leaves_no_bar_in_a_log():
    result = subprocess.run([sys.executable, "bench/demo_race.py", "--rounds", "1", "--steps", "1", "--batch", "4",
                             "--limit", "8"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    out = result.stdout
    assert re.search(r"on .+, \d+ cores \(", out)  # the machine is named
    for mode in ("inference", "training"):
        line = next(l for l in out.splitlines() if l.strip().startswith(mode))
        assert re.search(r"treadle ran [\d,]+ trees/s", line)
        if importlib.util.find_spec("torch"):
            assert re.search(r"PyTorch batched by hand [\d,]+: \d+\.\d\d× (faster|slower)", line)
    assert "target" not in out and "≥" not in out
    assert "\r" not in result.stderr  # stderr is a pipe here: no bar


def test_build_progress_counts_steps_and_keeps_the_log(tmp_path):
    log = tmp_path / "setup.log"
    # As pip -v shows a build's output: indented by two spaces.
    lines = "  -- Configuring done\n  [1/2] Building CXX object src/a.cc.o\nwarning: x\n  [2/2] Linking CXX shared module _core.so\n"
    result = subprocess.run([sys.executable, "scripts/build_progress.py", str(log)], cwd=ROOT, input=lines,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0
    assert "setup: compiling 1/2 (50%) a.cc.o" in result.stdout
    assert "setup: compiling 2/2 (100%) _core.so" in result.stdout
    assert log.read_text() == lines
