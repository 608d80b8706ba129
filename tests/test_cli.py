"""The `treadle` command line: `info` and `demo`, in-process and as
`python -m treadle`."""

import subprocess
import sys

import numpy as np
import pytest

import treadle as td
from treadle import cli


def test_info_prints_versions_and_op_count(capsys):
    assert cli.main(["info"]) == 0
    out = capsys.readouterr().out
    assert f"treadle        {td.__version__}" in out
    assert f"numpy          {np.__version__}" in out
    assert "(libprotobuf the core was built with)" in out
    count = int(next(line for line in out.splitlines() if line.startswith("registered ops")).split()[-1])
    assert count == len(td._core.op_defs()) and count > 0


def test_info_prints_the_simd_level(capsys):
    assert cli.main(["info"]) == 0
    out = capsys.readouterr().out
    isa = td.config.isa_info()
    line = next(line for line in out.splitlines() if line.startswith("SIMD kernels"))
    assert line.split()[2] == isa["level"]
    assert f"Highway target {isa['target']}" in line
    assert ", ".join(isa["available"]) in line


def test_info_verbose_lists_ops(capsys):
    assert cli.main(["info", "--verbose"]) == 0
    out = capsys.readouterr().out
    assert "AddV2" in out and "MatMul" in out


def test_demo_runs(capsys):
    assert cli.main(["demo", "--repeats", "2"]) == 0
    out = capsys.readouterr().out
    assert "a + b = td.Tensor([[1.5  1.  ]" in out
    assert "td.matmul(a, b) matches NumPy: True" in out
    assert "np.asarray(a) shares memory with a: True" in out
    assert "from_dlpack(arr) shares memory: True" in out
    assert "raises InvalidArgumentError" in out


def test_no_command_prints_help_and_fails(capsys):
    assert cli.main([]) == 2
    assert "usage: treadle" in capsys.readouterr().out


def test_bad_arguments_exit_with_usage_error():
    with pytest.raises(SystemExit) as e:
        cli.main(["demo", "--repeats", "0"])
    assert e.value.code == 2
    with pytest.raises(SystemExit) as e:
        cli.main(["no-such-command"])
    assert e.value.code == 2


def test_python_dash_m_treadle():
    result = subprocess.run([sys.executable, "-m", "treadle", "info"], capture_output=True, text=True,
                            timeout=120, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr
    assert "registered ops" in result.stdout
