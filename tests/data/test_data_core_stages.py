"""The C++ pipeline stages called directly (_core.data_*): they validate
their arguments themselves, whatever the Python layer above checked."""

import numpy as np
import pytest

import treadle as td
from treadle import _core


def drain(stage):
    it = stage.iterator()
    out = []
    while True:
        e = it.next()
        if e is None:
            return out
        out.append([t.numpy() for t in e])


def test_stages_validate_their_arguments():
    a, b = td.constant(np.arange(3)), td.constant(np.arange(4))
    with pytest.raises(td.errors.InvalidArgumentError, match="first dimension"):
        _core.data_slices([a, b])
    with pytest.raises(td.errors.InvalidArgumentError, match="scalar"):
        _core.data_slices([td.constant(1)])
    with pytest.raises(td.errors.InvalidArgumentError, match="step"):
        _core.data_range(0, 3, 0, td.int64)
    src = _core.data_slices([a])
    for bad in (lambda: _core.data_batch(src, 0, False), lambda: _core.data_prefetch(src, 0),
                lambda: _core.data_shuffle(src, 0, 1, 2, True)):
        with pytest.raises(td.errors.InvalidArgumentError):
            bad()
    with pytest.raises(TypeError):
        _core.data_slices([np.arange(3)])  # EagerTensors only


def test_stages_compose():
    src = _core.data_slices([td.constant(np.arange(10)), td.constant(np.arange(10) * 2.0)])
    out = drain(_core.data_prefetch(_core.data_batch(_core.data_skip(_core.data_take(src, 7), 2), 2, True), 1))
    assert [o[0].tolist() for o in out] == [[2, 3], [4, 5]]
    assert [o[1].tolist() for o in out] == [[4.0, 6.0], [8.0, 10.0]]
    twice = drain(_core.data_repeat(_core.data_range(0, 3, 1, td.int32), 2))
    assert [int(e[0]) for e in twice] == [0, 1, 2, 0, 1, 2]


def test_an_iteration_outlives_its_description():
    it = _core.data_prefetch(_core.data_range(0, 5, 1, td.int64), 2).iterator()
    assert [int(it.next()[0].numpy()) for _ in range(5)] == [0, 1, 2, 3, 4]
    assert it.next() is None


def test_python_stage_errors_cross_the_prefetch_thread():
    def gen():
        yield [td.constant(1)]
        raise KeyError("from the generator")

    it = _core.data_prefetch(_core.data_python(gen), 4).iterator()
    assert int(it.next()[0].numpy()) == 1
    with pytest.raises(KeyError, match="from the generator"):
        it.next()
    assert it.next() is None
