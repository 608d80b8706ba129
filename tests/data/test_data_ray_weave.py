"""parallel_weave on Ray: a local Ray with two workers, started by the test
set-up (scripts/test_ray.sh installs Ray); skipped where Ray is not installed."""

import numpy as np
import pytest

import treadle as td
import weave_helpers
from test_data_schedules import VEC, expected, make_loom

ray = pytest.importorskip("ray")
parallel_weave = td.data.experimental.parallel_weave


@pytest.fixture(scope="module")
def local_ray():
    from treadle.data import ray_weaving
    started = not ray.is_initialized()
    ray_weaving.ensure_ray(None, num_cpus=2)
    yield ray
    if started:
        ray.shutdown()


def test_ray_schedules_are_identical_to_local_weaving(local_ray):
    loom = make_loom()
    ds = parallel_weave(range(30), weave_helpers.weave_vector, loom, processes=2, chunk_size=4, use_ray=True)
    messages = [m.numpy() for m in ds]
    local = []
    for i in range(30):
        w = loom.make_weaver()
        weave_helpers.weave_vector(w, i)
        local.append(w.serialize())
    assert messages == local
    outs = np.concatenate([loom.output_tensor(VEC, b).numpy() for b in ds.batch(8)])
    np.testing.assert_allclose(outs, expected(range(30)))


def test_ray_workers_are_other_processes_unordered(local_ray):
    import os
    loom = make_loom()
    ds = parallel_weave(range(12), weave_helpers.weave_with_pid, loom, chunk_size=1, ordered=False, use_ray=True,
                        extra_signature=td.TensorSpec([], td.int64))
    pids = [int(p) for _, p in ds]
    assert len(pids) == 12 and os.getpid() not in pids


def test_ray_worker_error_and_death(local_ray):
    loom = make_loom()
    ds = parallel_weave(range(10), weave_helpers.weave_fails_on_5, loom, chunk_size=2, use_ray=True)
    with pytest.raises(td.data.experimental.WeaveError, match="(?s)example 5.*KeyError.*Worker traceback"):
        list(ds)
    ds = parallel_weave(range(10), weave_helpers.weave_dies_on_5, loom, chunk_size=2, use_ray=True)
    with pytest.raises(td.data.experimental.WorkerDiedError, match="Ray task"):
        list(ds)


# ------------------------------------------------------------------ faults, as with local workers
def test_ray_faults_name_the_example_task_and_function(local_ray):
    loom = make_loom()
    ds = parallel_weave(range(10), weave_helpers.weave_fails_on_5, loom, chunk_size=2, use_ray=True)
    with pytest.raises(td.data.experimental.WeaveError,
                       match=r"(?s)weave_helpers.weave_fails_on_5 failed on example 5 in Ray task \(worker process "
                             r"\d+\): KeyError"):
        list(ds)
    ds = parallel_weave(range(10), weave_helpers.weave_unpicklable_on_5, loom, chunk_size=2, use_ray=True)
    with pytest.raises(td.data.experimental.WeaveError,
                       match="weave_unpicklable_on_5 failed on example 5 in Ray task.*returned a lock that cannot be "
                             "sent back"):
        list(ds)


@pytest.mark.parametrize("weave_fn", [weave_helpers.weave_dies_on_5, weave_helpers.weave_exits_on_5])
def test_ray_worker_killed_or_exiting(local_ray, weave_fn):
    loom = make_loom()
    ds = parallel_weave(range(10), weave_fn, loom, chunk_size=2, use_ray=True)
    with pytest.raises(td.data.experimental.WorkerDiedError,
                       match=f"a Ray task \\(killed or crashed\\) died while weave_fn .*{weave_fn.__name__} was "
                             "weaving examples 4 to 5"):
        list(ds)
    # Ray starts another worker: the cluster still weaves
    ds = parallel_weave(range(6), weave_helpers.weave_vector, loom, chunk_size=2, use_ray=True)
    assert len(list(ds)) == 6


def test_ray_hung_task_times_out_and_is_cancelled(local_ray):
    loom = make_loom()
    ds = parallel_weave(range(10), weave_helpers.weave_hangs_on_5, loom, chunk_size=2, use_ray=True, timeout=10)
    with pytest.raises(td.data.experimental.WorkerTimeoutError,
                       match="no Ray task finished weaving examples 4 to 5 with weave_fn "
                             "weave_helpers.weave_hangs_on_5 within the timeout of 10 s"):
        list(ds)
    ds = parallel_weave(range(6), weave_helpers.weave_vector, loom, chunk_size=2, use_ray=True)
    assert len(list(ds)) == 6  # the hung task's CPU was given back
