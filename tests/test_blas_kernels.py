"""treadle's choice of OpenBLAS kernels (treadle/_blas.py): AVX-512 kernels
where the CPU has AVX-512, unless OPENBLAS_CORETYPE says otherwise, with the
environment left as it was."""

import json
import os
import subprocess
import sys

import pytest

from treadle import _blas

HAS_AVX512 = _blas._SKYLAKEX_FEATURES <= _blas._cpu_flags()


def test_a_set_core_type_is_left_alone(monkeypatch):
    monkeypatch.setenv("OPENBLAS_CORETYPE", "Haswell")
    monkeypatch.setattr(_blas, "_cpu_flags", lambda: set(_blas._SKYLAKEX_FEATURES))
    monkeypatch.setattr(_blas, "_library_loaded", lambda: False)
    assert _blas.core_type_to_set() is None


@pytest.mark.parametrize("missing", sorted(_blas._SKYLAKEX_FEATURES))
def test_avx512_kernels_need_every_subset(monkeypatch, missing):
    monkeypatch.delenv("OPENBLAS_CORETYPE", raising=False)
    monkeypatch.delenv("TREADLE_ISA", raising=False)
    monkeypatch.setattr(_blas, "_library_loaded", lambda: False)
    monkeypatch.setattr(_blas, "_cpu_flags", lambda: set(_blas._SKYLAKEX_FEATURES) | {"avx2"})
    assert _blas.core_type_to_set() == "SkylakeX"
    monkeypatch.setattr(_blas, "_cpu_flags", lambda: set(_blas._SKYLAKEX_FEATURES) - {missing} | {"avx2"})
    assert _blas.core_type_to_set() is None


@pytest.mark.parametrize("cap, chosen", [("avx2", None), ("sse4", None), ("scalar", None), ("avx512", "SkylakeX"),
                                          ("", "SkylakeX")])
def test_a_treadle_isa_cap_below_avx512_keeps_blas_off_avx512(monkeypatch, cap, chosen):
    monkeypatch.delenv("OPENBLAS_CORETYPE", raising=False)
    monkeypatch.setenv("TREADLE_ISA", cap)
    monkeypatch.setattr(_blas, "_library_loaded", lambda: False)
    monkeypatch.setattr(_blas, "_cpu_flags", lambda: set(_blas._SKYLAKEX_FEATURES) | {"avx2"})
    assert _blas.core_type_to_set() == chosen


def test_nothing_is_set_once_the_library_is_loaded(monkeypatch):
    monkeypatch.delenv("OPENBLAS_CORETYPE", raising=False)
    monkeypatch.setattr(_blas, "_cpu_flags", lambda: set(_blas._SKYLAKEX_FEATURES))
    assert _blas._library_loaded()  # this process imported treadle
    assert _blas.core_type_to_set() is None


PROBE = """
import json, os
import numpy as np
import treadle as td
from treadle import _core
rng = np.random.default_rng(0)
errs = []
for dt in (np.float32, np.float64):
    a, b = rng.normal(size=(67, 130)).astype(dt), rng.normal(size=(130, 45)).astype(dt)
    errs.append(float(np.abs(td.matmul(a, b).numpy() - a @ b).max()))
print(json.dumps({"core": _core.blas_config()[1], "env": os.environ.get("OPENBLAS_CORETYPE"), "errs": errs}))
"""


def probe(core_type):
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    if core_type:
        env["OPENBLAS_CORETYPE"] = core_type
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_core_loads_the_chosen_kernels_and_restores_the_environment():
    got = probe(None)
    assert got["env"] is None
    if HAS_AVX512:
        assert got["core"] == "SkylakeX"
    assert got["errs"][0] < 1e-3 and got["errs"][1] < 1e-11


def test_the_users_choice_wins():
    got = probe("Haswell")
    assert got["core"] == "Haswell" and got["env"] == "Haswell"
    assert got["errs"][0] < 1e-3 and got["errs"][1] < 1e-11
