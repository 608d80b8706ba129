"""td.distribute.MirroredStrategy on two logical CPU devices: replicas on
their shares of a batch give the weights of one process on the whole batch,
in each of the three ways a step runs (eager replica functions, strategy.run
traced into a td.function, a td.function per replica)."""

import threading

import numpy as np
import pytest

import treadle as td
from tests.distribute.dist_models import (GLOBAL_BATCH, DenseModel, LoomModel, dense_data, loom_data, loom_step,
                                          train_step, train_woven, woven_reference)
from treadle.distribute.values import PerReplica

CPU = td.config.list_physical_devices("CPU")[0]


@pytest.fixture
def two_cpus():
    td.config.set_logical_device_configuration(CPU, [td.config.LogicalDeviceConfiguration()] * 2)
    yield
    td.config.set_logical_device_configuration(CPU, None)


def _reference_weights(make_optimizer, steps, x, y):
    model = DenseModel()
    opt = make_optimizer()
    step = train_step(model, opt)
    for k in range(steps):
        rows = slice(k * GLOBAL_BATCH, (k + 1) * GLOBAL_BATCH)
        step(td.constant(x[rows]), td.constant(y[rows]))
    return [v.numpy() for v in model.variables]


def _distributed_weights(strategy, make_optimizer, steps, x, y, mode):
    with strategy.scope():
        model = DenseModel()
        opt = make_optimizer()
    step = train_step(model, opt)
    if mode == "function_per_replica":
        step = td.function(step)
    dataset = td.data.Dataset.from_tensor_slices((x, y)).batch(GLOBAL_BATCH)
    if mode == "traced_run":
        @td.function
        def run(xs, ys):
            return strategy.reduce("SUM", strategy.run(step, args=(xs, ys)), axis=None)
    else:
        def run(xs, ys):
            return strategy.reduce("SUM", strategy.run(step, args=(xs, ys)), axis=None)
    for xs, ys in strategy.experimental_distribute_dataset(dataset):
        run(xs, ys)
    if mode != "eager":
        fn = run if mode == "traced_run" else step
        assert fn.experimental_get_tracing_count() == 1
    return [v.numpy() for v in model.variables]


OPTIMIZERS = {"sgd": lambda: td.optimizers.SGD(0.1, momentum=0.9), "adam": lambda: td.optimizers.Adam(0.05)}


@pytest.mark.parametrize("mode", ["eager", "traced_run", "function_per_replica"])
@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
def test_two_replicas_equal_one_process_on_the_whole_batch(two_cpus, mode, optimizer):
    x, y = dense_data(steps=4)
    strategy = td.distribute.MirroredStrategy()
    assert strategy.num_replicas_in_sync == 2
    got = _distributed_weights(strategy, OPTIMIZERS[optimizer], 4, x, y, mode)
    want = _reference_weights(OPTIMIZERS[optimizer], 4, x, y)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def test_loom_model_two_replicas_equal_one_process(two_cpus):
    trees, labels = loom_data(GLOBAL_BATCH)
    strategy = td.distribute.MirroredStrategy()
    with strategy.scope():
        model = LoomModel()
        opt = td.optimizers.SGD(0.5)
    step = loom_step(model, opt)
    half = GLOBAL_BATCH // 2
    for _ in range(2):
        strategy.run(step, args=(PerReplica([trees[:half], trees[half:]]),
                                 PerReplica([td.constant(labels[:half]), td.constant(labels[half:])])))
    reference = LoomModel()
    ref_step = loom_step(reference, td.optimizers.SGD(0.5))
    for _ in range(2):
        ref_step(trees, td.constant(labels))
    for g, w in zip(model.variables, reference.variables):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-10, atol=1e-12)


def test_sparse_gradients_are_gathered_not_densified(two_cpus):
    strategy = td.distribute.MirroredStrategy()
    with strategy.scope():
        table = td.Variable(np.zeros((10, 2)))
    seen = []

    class Recording(td.optimizers.SGD):
        def _update_sparse(self, grad, var):
            seen.append(grad)
            super()._update_sparse(grad, var)

    opt = Recording(1.0)

    def step(ids):
        with td.GradientTape() as tape:
            loss = td.reduce_sum(td.gather(table, ids))
        opt.apply_gradients(zip(tape.gradient(loss, [table]), [table]))

    strategy.run(step, args=(PerReplica([td.constant([1, 2]), td.constant([2, 7])]),))
    assert len(seen) == 1 and isinstance(seen[0], td.IndexedSlices)
    assert sorted(seen[0].indices.numpy().tolist()) == [1, 2, 2, 7]
    want = np.zeros((10, 2))
    for i in (1, 2, 2, 7):
        want[i] -= 1.0
    np.testing.assert_array_equal(table.numpy(), want)


def test_replicas_run_on_threads_at_the_same_time(two_cpus):
    strategy = td.distribute.MirroredStrategy()
    both_inside = threading.Barrier(2, timeout=10)
    names = []

    def fn():
        names.append(threading.current_thread().name)
        both_inside.wait()   # would time out if the replicas ran one after the other
        return td.distribute.get_replica_context().replica_id_in_sync_group

    result = strategy.run(fn)
    assert isinstance(result, PerReplica) and result.values == (0, 1)
    assert len(set(names)) == 2


def test_replica_context_all_reduce_and_merge_call(two_cpus):
    strategy = td.distribute.MirroredStrategy()

    def fn():
        ctx = td.distribute.get_replica_context()
        i = ctx.replica_id_in_sync_group
        total = ctx.all_reduce(td.distribute.ReduceOp.SUM, td.constant([1.0, 2.0]) * (i + 1))
        mean = ctx.all_reduce("MEAN", {"a": td.constant(float(i))})
        merged = ctx.merge_call(lambda s, value: (s.num_replicas_in_sync, value), args=(7,))
        return total, mean["a"], merged

    total, mean, merged = strategy.run(fn)
    for t in total.values:
        np.testing.assert_allclose(t.numpy(), [3.0, 6.0])
    assert [m.numpy() for m in mean.values] == [0.5, 0.5]
    assert [m.shape for m in mean.values] == [(), ()]     # a scalar stays a scalar
    assert merged[0].values == (2, 2) and merged[1].values == (7, 7)


def test_contexts_and_get_strategy(two_cpus):
    strategy = td.distribute.MirroredStrategy()
    assert td.distribute.get_replica_context() is not None       # the default one
    assert not td.distribute.has_strategy()
    with strategy.scope():
        assert td.distribute.get_strategy() is strategy
        assert td.distribute.in_cross_replica_context()
        assert td.distribute.get_replica_context() is None
        v = td.Variable(1.0)
    assert strategy.extended.variable_created_in_scope(v)
    assert not strategy.extended.variable_created_in_scope(td.Variable(1.0))
    seen = strategy.run(lambda: (td.distribute.get_strategy() is strategy, td.distribute.in_cross_replica_context()))
    assert seen[0].values == (True, True) and seen[1].values == (False, False)


def test_reduce_with_axis(two_cpus):
    strategy = td.distribute.MirroredStrategy()
    value = PerReplica([td.constant([[1.0, 2.0], [3.0, 4.0]]), td.constant([[5.0, 6.0]])])
    np.testing.assert_allclose(strategy.reduce("SUM", value, axis=0).numpy(), [9.0, 12.0])
    np.testing.assert_allclose(strategy.reduce("MEAN", value, axis=0).numpy(), [3.0, 4.0])   # over 3 rows
    scalars = PerReplica([td.constant(2.0), td.constant(4.0)])
    assert strategy.reduce("MEAN", scalars, axis=None).numpy() == 3.0
    assert strategy.reduce(td.distribute.ReduceOp.SUM, scalars, axis=None).numpy() == 6.0
    assert strategy.reduce("SUM", td.constant(1.5), axis=None).numpy() == 3.0   # the same on both replicas
    with pytest.raises(ValueError, match="SUM or MEAN"):
        strategy.reduce("MAX", value, axis=None)


def test_distributed_dataset_splits_like_array_split(two_cpus):
    strategy = td.distribute.MirroredStrategy()
    dataset = td.data.Dataset.range(5).batch(5)
    (element,) = list(strategy.experimental_distribute_dataset(dataset))
    assert [v.numpy().tolist() for v in element.values] == [[0, 1, 2], [3, 4]]


def test_datasets_from_function(two_cpus):
    strategy = td.distribute.MirroredStrategy()
    contexts = []

    def dataset_fn(ctx):
        contexts.append(ctx)
        return td.data.Dataset.range(8).batch(ctx.get_per_replica_batch_size(4))

    elements = list(strategy.distribute_datasets_from_function(dataset_fn))
    assert [(c.num_input_pipelines, c.input_pipeline_id, c.num_replicas_in_sync) for c in contexts] == [(1, 0, 2)]
    assert [[v.numpy().tolist() for v in e.values] for e in elements] == [[[0, 1], [2, 3]], [[4, 5], [6, 7]]]
    with pytest.raises(ValueError, match="not divisible"):
        contexts[0].get_per_replica_batch_size(5)


def test_a_replica_that_raises_stops_the_other(two_cpus):
    strategy = td.distribute.MirroredStrategy()

    def fn():
        ctx = td.distribute.get_replica_context()
        if ctx.replica_id_in_sync_group == 1:
            raise ZeroDivisionError("replica one divided by zero")
        return ctx.all_reduce("SUM", td.constant(1.0))   # replica 0 waits here

    with pytest.raises(ZeroDivisionError, match="replica one divided by zero") as info:
        strategy.run(fn)
    assert "replica 1" in "".join(getattr(info.value, "__notes__", []))


def test_device_configuration():
    assert [d.name for d in td.config.list_logical_devices("CPU")] == ["/device:CPU:0"]
    assert td.config.list_physical_devices("GPU") == []
    td.config.set_logical_device_configuration(CPU, [td.config.LogicalDeviceConfiguration()] * 3)
    try:
        assert len(td.config.get_logical_device_configuration(CPU)) == 3
        assert td.distribute.MirroredStrategy().num_replicas_in_sync == 3
        assert td.distribute.MirroredStrategy(["/cpu:0", "CPU:2"]).extended.worker_devices == (
            "/device:CPU:0", "/device:CPU:2")
        with pytest.raises(ValueError, match="does not exist"):
            td.distribute.MirroredStrategy(["/gpu:0"])
        with pytest.raises(ValueError, match="twice"):
            td.distribute.MirroredStrategy(["/cpu:0", "/device:CPU:0"])
    finally:
        td.config.set_logical_device_configuration(CPU, None)
    assert td.distribute.MirroredStrategy().num_replicas_in_sync == 1


def test_autograph_loop_over_a_distributed_dataset(two_cpus):
    strategy = td.distribute.MirroredStrategy()
    dataset = td.data.Dataset.range(10).map(lambda x: td.cast(x, td.float32)).batch(4)   # 4, 4, 2 rows
    distributed = strategy.experimental_distribute_dataset(dataset)

    def weighted(rows):
        replica = td.distribute.get_replica_context().replica_id_in_sync_group
        return td.reduce_sum(rows) * (replica + 1)

    @td.function
    def loop(batches):
        total = td.constant(0.0)
        for x in batches:
            total += strategy.reduce("SUM", strategy.run(weighted, args=(x,)), axis=None)
        return total

    # shares [0,1]|[2,3], [4,5]|[6,7], [8]|[9]: 1 + 2*5 + 9 + 2*13 + 8 + 2*9
    assert loop(distributed).numpy() == 72.0
    assert loop(distributed).numpy() == 72.0
    assert loop.experimental_get_tracing_count() == 1


def test_loom_replicas_fed_by_parallel_weaving(two_cpus):
    x = train_woven(td.distribute.MirroredStrategy())
    # one input pipeline: the replicas take successive batches of 2, so a
    # step covers 4 examples; one process on those 4 at once updates alike
    want = woven_reference([range(0, 4), range(4, 8)])
    np.testing.assert_allclose(x.numpy(), want.numpy(), rtol=1e-12)
