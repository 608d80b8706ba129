"""Programs that the MPI tests start as a two-process world:

    mpiexec -n 2 python -m tests.distribute.mpi_programs NAME DIRECTORY

Each prints "RANK <r> OK" when its checks pass on that process."""

import faulthandler
import os
import signal
import sys
import time

import numpy as np

import treadle as td
from tests.distribute.dist_models import (GLOBAL_BATCH, DenseModel, LoomModel, dense_data, loom_data, loom_schedule_step, loom_step,
                                          train_step, train_woven, woven_reference)


def _strategy():
    return td.distribute.MultiWorkerMirroredStrategy()


def _gathered(strategy, variables):
    """Every process's values of `variables` (a list per variable)."""
    return strategy._group.all_gather([v.numpy()[None] for v in variables])


def _reference_dense(make_optimizer, steps, x, y):
    model = DenseModel(seed=0)
    step = train_step(model, make_optimizer())
    for k in range(steps):
        rows = slice(k * GLOBAL_BATCH, (k + 1) * GLOBAL_BATCH)
        step(td.constant(x[rows]), td.constant(y[rows]))
    return [v.numpy() for v in model.variables]


def equivalence(strategy, directory):
    """Two processes on halves of each batch give the weights of one process
    on the whole batch: dense models in the three ways a step runs, and the
    TreeLSTM loom (IndexedSlices gradients of its embedding)."""
    rank = strategy.cluster_resolver.task_id
    x, y = dense_data(steps=3)
    dataset = td.data.Dataset.from_tensor_slices((x, y)).batch(GLOBAL_BATCH)
    for name, make in (("sgd", lambda: td.optimizers.SGD(0.1, momentum=0.9)), ("adam", lambda: td.optimizers.Adam(0.05))):
        for mode in ("eager", "function", "traced_run"):
            with strategy.scope():
                model = DenseModel(seed=rank + 10)     # different until the first run broadcasts process 0's
                opt = make()
            step = train_step(model, opt)
            if mode == "function":
                step = td.function(step)
            run = (lambda xs, ys: strategy.reduce("SUM", strategy.run(step, args=(xs, ys)), axis=None))
            if mode == "traced_run":
                run = td.function(run)
            # process 0's initial values are those of the reference's seed
            if rank == 0:
                for v, w in zip(model.variables, DenseModel(seed=0).variables):
                    v.assign(w.numpy())
            for xs, ys in strategy.experimental_distribute_dataset(dataset):
                assert xs.shape[0] == GLOBAL_BATCH // 2
                run(xs, ys)
            want = _reference_dense(make, 3, x, y)
            for got, w in zip(model.variables, want):
                np.testing.assert_allclose(got.numpy(), w, rtol=1e-10, atol=1e-12, err_msg=f"{name} {mode}")
    for name, make in (("sgd", lambda: td.optimizers.SGD(0.5, momentum=0.9)), ("adam", lambda: td.optimizers.Adam(0.05))):
        for mode in ("eager", "function"):
            _loom_equivalence(strategy, make, mode, f"loom {name} {mode}")
    _woven_by_each_process(strategy)


def _loom_equivalence(strategy, make_optimizer, mode, what):
    """The TreeLSTM loom (IndexedSlices gradients of its embedding, gathered
    across processes; in a td.function, the update traced after the gather)."""
    rank = strategy.cluster_resolver.task_id
    trees, labels = loom_data(GLOBAL_BATCH)
    with strategy.scope():
        model = LoomModel(seed=0)
        opt = make_optimizer()
    step = loom_step(model, opt)
    half = GLOBAL_BATCH // 2
    mine = slice(rank * half, (rank + 1) * half)
    if mode == "function":
        body = td.function(lambda schedule, labels: loom_schedule_step(model, opt, schedule, labels))
        step = (lambda ts, ls: body(td.constant(model.schedule(ts)), ls))
    for _ in range(2):
        strategy.run(step, args=(trees[mine], td.constant(labels[mine])))
    reference = LoomModel(seed=0)
    ref_step = loom_step(reference, make_optimizer())
    for _ in range(2):
        ref_step(trees, td.constant(labels))
    for got, w in zip(model.variables, reference.variables):
        np.testing.assert_allclose(got.numpy(), w.numpy(), rtol=1e-10, atol=1e-12, err_msg=what)


def _woven_by_each_process(strategy):
    """Each process weaves its shard of the examples in a worker process; the
    update equals one process's on all the examples of a step."""
    x = train_woven(strategy)
    want = woven_reference([[0, 2, 1, 3], [4, 6, 5, 7]])   # process 0 weaves the even examples, 1 the odd
    np.testing.assert_allclose(x.numpy(), want.numpy(), rtol=1e-12, err_msg="parallel weaving")


def identical_after_100_steps(strategy, directory):
    """Mirrored copies stay bit-identical across processes over 100 steps on
    different data."""
    rank = strategy.cluster_resolver.task_id
    with strategy.scope():
        model = DenseModel(seed=rank)
        opt = td.optimizers.Adam(0.01)
    step = td.function(train_step(model, opt))
    rng = np.random.default_rng(100 + rank)
    for _ in range(100):
        x = rng.normal(size=(GLOBAL_BATCH // 2, 3))
        strategy.run(step, args=(td.constant(x), td.constant(np.cos(x).sum(axis=1, keepdims=True))))
    for per_process in _gathered(strategy, model.variables):
        np.testing.assert_array_equal(per_process[0], per_process[1])
    assert int(opt.iterations.numpy()) == 100


def _failing_step(kind):
    def step(rank, k):
        ctx = td.distribute.get_replica_context()
        if rank == 1 and k == 2:
            if kind == "raise":
                raise ZeroDivisionError("the step of replica one divided by zero")
            os.kill(os.getpid(), signal.SIGKILL)
        return ctx.all_reduce("SUM", td.constant(float(k)))
    return step


def replica_raises(strategy, directory):
    rank = strategy.cluster_resolver.task_id
    step = _failing_step("raise")
    start = time.monotonic()
    try:
        for k in range(5):
            strategy.run(step, args=(rank, k))
    except td.errors.AbortedError as e:
        assert rank == 0, rank
        print(f"RANK 0 CAUGHT after {time.monotonic() - start:.2f} s: {e}", flush=True)
        raise
    raise AssertionError("no error")


def replica_killed(strategy, directory):
    rank = strategy.cluster_resolver.task_id
    step = _failing_step("kill")
    for k in range(5):
        strategy.run(step, args=(rank, k))
    raise AssertionError("no error")


def checkpoint_resume(strategy, directory):
    """The chief saves; every process restores; training resumes with
    identical weights everywhere, equal to an uninterrupted run."""
    rank = strategy.cluster_resolver.task_id
    x, y = dense_data(steps=5, seed=7)
    shares = [(td.constant(x[k * 8:(k + 1) * 8][rank * 4:(rank + 1) * 4]),
               td.constant(y[k * 8:(k + 1) * 8][rank * 4:(rank + 1) * 4])) for k in range(5)]

    def trained(model, opt, steps):
        step = train_step(model, opt)
        for xs, ys in steps:
            strategy.run(step, args=(xs, ys))

    with strategy.scope():
        model = DenseModel(seed=0)
        opt = td.optimizers.Adam(0.05)
    trained(model, opt, shares[:3])
    prefix = os.path.join(directory, "ckpt")
    if rank == 0:
        td.train.Checkpoint(model=_Tracked(model), optimizer=opt).write(prefix)
    strategy._group.barrier()
    with strategy.scope():
        resumed = DenseModel(seed=rank + 50)
        resumed_opt = td.optimizers.Adam(0.05)
    trained_once = train_step(resumed, resumed_opt)   # builds the optimizer's slots before the restore
    del trained_once
    td.train.Checkpoint(model=_Tracked(resumed), optimizer=resumed_opt).read(prefix)
    for per_process in _gathered(strategy, resumed.variables):
        np.testing.assert_array_equal(per_process[0], per_process[1])
    trained(resumed, resumed_opt, shares[3:])
    trained(model, opt, shares[3:])
    for got, want in zip(resumed.variables, model.variables):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
    for per_process in _gathered(strategy, resumed.variables):
        np.testing.assert_array_equal(per_process[0], per_process[1])


def collectives(strategy, directory):
    """The MPI group's collectives against NumPy, with different row counts
    on the two processes (1 and 3 rows) and several buckets."""
    group = strategy._group
    group.bucket_bytes = 64   # several buckets of small arrays
    rank = group.rank

    def arrays_of(r):
        rng = np.random.default_rng(r)
        return ([rng.normal(size=(4, 5)), rng.normal(size=(3,)).astype(np.float32), np.arange(6, dtype=np.int64) * r],
                [rng.normal(size=(1 + 2 * r, 2)), np.arange(1 + 2 * r, dtype=np.int64) + 10 * r, np.float64(r)])

    reduce_arrays, gather_arrays = arrays_of(rank)
    reduced, gathered = group.all_reduce_and_gather(reduce_arrays, td.distribute.ReduceOp.SUM, gather_arrays)
    both = [arrays_of(r) for r in range(2)]
    for got, want in zip(reduced, [a + b for a, b in zip(both[0][0], both[1][0])]):
        np.testing.assert_allclose(got, want, rtol=1e-6)
        assert got.dtype == want.dtype and got.shape == want.shape
    for got, k in zip(gathered, range(3)):
        want = np.concatenate([np.reshape(both[r][1][k], (-1,) + np.shape(both[r][1][k])[1:]) for r in range(2)])
        np.testing.assert_array_equal(got, want)
    means = group.all_reduce(reduce_arrays[:2], td.distribute.ReduceOp.MEAN)
    np.testing.assert_allclose(means[0], (both[0][0][0] + both[1][0][0]) / 2)
    parts = group.all_gather(gather_arrays)
    for k in range(3):
        for r in range(2):
            np.testing.assert_array_equal(parts[k][r], both[r][1][k])
            assert parts[k][r].shape == np.shape(both[r][1][k])


def different_variables(strategy, directory):
    """Processes that created other variables in scope() all raise, naming
    them (then exit with an error, as a failed replica does)."""
    rank = strategy.cluster_resolver.task_id
    with strategy.scope():
        kept = [td.Variable(np.zeros(3), name="both")]
        if rank == 1:
            kept.append(td.Variable(np.zeros(2), name="only_one"))
    try:
        strategy.run(lambda: None)
    except ValueError as e:
        assert "only_one" in str(e) and "created other variables" in str(e), e
        print(f"RANK {rank} CAUGHT", flush=True)
        raise
    else:
        raise AssertionError("no error")


class _Tracked(td.Module):
    def __init__(self, model):
        super().__init__()
        self.w1, self.b1, self.w2, self.b2 = model.variables


PROGRAMS = {f.__name__: f for f in (equivalence, identical_after_100_steps, replica_raises, replica_killed,
                                    checkpoint_resume, collectives, different_variables)}

if __name__ == "__main__":
    # a hung program shows where each process waits, and ends, before the test's own timeout
    faulthandler.dump_traceback_later(150, exit=True)
    name, directory = sys.argv[1], sys.argv[2]
    strategy = _strategy()
    PROGRAMS[name](strategy, directory)
    print(f"RANK {strategy.cluster_resolver.task_id} OK", flush=True)
