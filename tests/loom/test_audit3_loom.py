"""Regression tests of the third reliability audit: the Loom items. Each test
is named test_itemNN_... after the audit's item it checks."""

import gc

import numpy as np

import treadle as td
from treadle import cli
from loom_testlib import VEC3, vector_loom


def _run(loom, value):
    w = loom.make_weaver()
    w.add_output(w.add(w.x, w(np.full(3, value))))
    return loom.output_tensor(VEC3, [w.serialize()]).numpy()


def _saved_vector_loom(tmp_path):
    loom, x, _ = vector_loom()
    path = str(tmp_path / "v.loom")
    td.save(loom, path)
    expected = x.numpy()
    del loom
    gc.collect()
    return path, expected


def test_item01_dropping_a_second_load_keeps_the_first_loom_running(tmp_path):
    path, x = _saved_vector_loom(tmp_path)
    live = td.load(path)
    np.testing.assert_allclose(_run(live, 1.0), [x + 1.0])
    copy = td.load(path)
    np.testing.assert_allclose(_run(copy, 2.0), [x + 2.0])
    del copy
    gc.collect()
    np.testing.assert_allclose(_run(live, 3.0), [x + 3.0])
    # Copies loaded and dropped in any order: whichever is alive runs.
    copies = [td.load(path) for _ in range(3)]
    del live
    for i in (2, 0):
        del copies[i]
        gc.collect()
        np.testing.assert_allclose(_run(copies[0], 4.0), [x + 4.0])


def test_item01_in_process_loom_run_keeps_the_live_loom_running(tmp_path):
    path, x = _saved_vector_loom(tmp_path)
    live = td.load(path)
    w = live.make_weaver()
    w.add_output(w.add(w.x, w(np.full(3, 5.0))))
    td.loom.write_schedules(tmp_path / "s.tfrecord", [w.serialize()])
    assert cli.main(["loom", "run", path, str(tmp_path / "s.tfrecord"), "-o", str(tmp_path / "out")]) == 0
    gc.collect()
    np.testing.assert_allclose(_run(live, 6.0), [x + 6.0])
