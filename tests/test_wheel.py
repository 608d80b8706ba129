"""The binary wheel is self-contained: built with scripts/build_wheel.sh (or
taken from $TREADLE_WHEEL), installed into a fresh virtual environment, it
imports and computes there, using the libprotobuf it carries."""

import os
import pathlib
import subprocess
import sys
import venv
import zipfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def _run(cmd, **kwargs):
    result = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL, **kwargs)
    assert result.returncode == 0, f"{cmd} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    prebuilt = os.environ.get("TREADLE_WHEEL")
    if prebuilt:
        return pathlib.Path(prebuilt)
    out = tmp_path_factory.mktemp("wheelhouse")
    env = dict(os.environ, PYTHON=sys.executable)
    stdout = _run(["bash", str(ROOT / "scripts" / "build_wheel.sh"), str(out)], cwd=ROOT, env=env, timeout=900)
    return pathlib.Path(stdout.strip().splitlines()[-1])


def test_wheel_contents(wheel):
    assert "manylinux" in wheel.name, "auditwheel repair gives the wheel a manylinux tag"
    names = zipfile.ZipFile(wheel).namelist()
    assert any(n.startswith("treadle/_core.") and n.endswith(".so") for n in names)
    assert "treadle/tensor_pb2.py" in names and "treadle/graph_pb2.py" in names
    assert any(n.startswith("treadle.libs/libprotobuf") for n in names), "libprotobuf is bundled"
    assert not any("libscipy_openblas" in n for n in names), "OpenBLAS comes from scipy-openblas32"


def test_wheel_installs_and_runs_in_a_fresh_venv(wheel, tmp_path):
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = str(env_dir / "bin" / "python")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    _run([python, "-m", "pip", "install", "-q", str(wheel)], env=env, timeout=600)
    out = _run([python, "-c", "import treadle as td; print(td.constant([1, 2]) + 1)"], cwd=tmp_path, env=env,
               timeout=120)
    assert out.strip() == "td.Tensor([2 3], shape=(2,), dtype=int32)"
    # The extension loads the libprotobuf from the wheel, not the system's.
    maps = _run([python, "-c", "import treadle, numpy; print(open('/proc/self/maps').read())"], cwd=tmp_path,
                env=env, timeout=120)
    protobuf_libs = {line.split()[-1] for line in maps.splitlines() if "libprotobuf" in line}
    assert protobuf_libs and all("/treadle.libs/" in p for p in protobuf_libs), protobuf_libs
    assert any("scipy_openblas32" in line for line in maps.splitlines())
    info = _run([str(env_dir / "bin" / "treadle"), "info"], cwd=tmp_path, env=env, timeout=120)
    assert "registered ops" in info
