"""td.distribute.Strategy: what every strategy offers, and the default one.

A strategy has `num_replicas_in_sync` replicas. `run(fn, args)` runs fn once
per replica that lives in this process; `reduce` combines per-replica
values; `scope()` marks where variables are created that the replicas
share. Subclasses say how replicas run (threads, processes) and which
collectives connect them."""

import contextlib
import itertools
import weakref

import numpy as np

from treadle.framework import distribution_context, variables
from treadle.framework.tensor import convert_to_tensor
from treadle.ops import array_ops, math_ops
from treadle.distribute import input_lib
from treadle.distribute.reduce_op import ReduceOp, as_reduce_op
from treadle.distribute.replica_context import ReplicaContext
from treadle.distribute.values import PerReplica, local_results
from treadle.util import nest


class StrategyExtended:
    """The strategy's devices (TensorFlow's `strategy.extended`)."""

    def __init__(self, strategy, worker_devices):
        self._strategy = strategy
        self.worker_devices = tuple(worker_devices)
        self.parameter_devices = self.worker_devices

    def variable_created_in_scope(self, v):
        return any(ref() is v for ref in self._strategy._scope_variables.values())


class Strategy:
    """The base of td.distribute's strategies (TensorFlow's tf.distribute.Strategy)."""

    # Replicas of a process-level strategy are processes (one per process), so a
    # traced collective can name its group when it is traced.
    _replicas_are_processes = False

    def __init__(self, worker_devices):
        self.extended = StrategyExtended(self, worker_devices)
        # The variables created in scope(), in creation order: a number of
        # their own (an id() could be reused) -> a weak reference.
        self._scope_variables = {}
        self._created = itertools.count()

    # ---------------------------------------------------------- sizes
    @property
    def num_replicas_in_sync(self):
        raise NotImplementedError

    @property
    def _num_local_replicas(self):
        return len(self.extended.worker_devices)

    # ---------------------------------------------------------- scope
    @contextlib.contextmanager
    def scope(self):
        """Variables created inside belong to the strategy: every replica reads
        the same values, and optimizers update them with gradients summed over
        the replicas."""
        stack = distribution_context.strategy_stack()
        if stack and stack[-1] is not self and not isinstance(stack[-1], _DefaultStrategy):
            raise ValueError("Mixing different td.distribute.Strategy objects: this scope is inside the scope of "
                             f"{stack[-1]!r}")
        stack.append(self)
        try:
            yield self
        finally:
            stack.pop()

    def _on_variable_created(self, variable):
        key = next(self._created)
        self._scope_variables[key] = weakref.ref(variable, lambda _ref: self._scope_variables.pop(key, None))

    # ---------------------------------------------------------- running
    def run(self, fn, args=(), kwargs=None, options=None):
        """Runs fn(*args, **kwargs) on every replica; a td.distribute
        PerReplica argument gives each replica its own value. Returns fn's
        result, with PerReplica leaves where replicas return different values."""
        raise NotImplementedError

    def _cross_replica(self, merge_fn, args, kwargs):
        """merge_fn(self, *args, **kwargs) outside any replica context."""
        previous = distribution_context.set_replica_context(None)
        try:
            return merge_fn(self, *args, **kwargs)
        finally:
            distribution_context.set_replica_context(previous)

    def experimental_local_results(self, value):
        """The values of `value` on this process's replicas, as a tuple."""
        return local_results(value)

    # ---------------------------------------------------------- reducing
    def reduce(self, reduce_op, value, axis=None):
        """Combines a per-replica `value` (or a nest of them) over all replicas:
        with `axis`, each replica's tensor is first reduced along it (MEAN then
        averages over every element, as TensorFlow does)."""
        op = as_reduce_op(reduce_op)
        return nest.map_structure(lambda v: self._reduce_one(op, v, axis), value)

    def _reduce_one(self, op, value, axis):
        values = local_results(value)
        if not isinstance(value, PerReplica):
            values = values * self._num_local_replicas   # a value that is the same on every replica
        values = [convert_to_tensor(v) for v in values]
        if axis is None:
            local_sum = values[0] if len(values) == 1 else math_ops.add_n(values)
            count = convert_to_tensor(np.array(self.num_replicas_in_sync, values[0].dtype.as_numpy_dtype))
            total = self._process_all_reduce([local_sum])[0]
            return total / count if op is ReduceOp.MEAN else total
        sums = [math_ops.reduce_sum(v, axis=axis) for v in values]
        local_sum = sums[0] if len(sums) == 1 else math_ops.add_n(sums)
        if op is ReduceOp.SUM:
            return self._process_all_reduce([local_sum])[0]
        counts = [math_ops.cast(array_ops.shape(v)[axis], v.dtype) for v in values]
        local_count = counts[0] if len(counts) == 1 else math_ops.add_n(counts)
        total, count = self._process_all_reduce([local_sum, local_count])
        return total / count

    def _process_all_reduce(self, tensors):
        """Sums each tensor over the processes of the strategy (in one process: as it is)."""
        return tensors

    def gather(self, value, axis):
        """The per-replica tensors of `value` concatenated along `axis`, over all replicas."""
        def one(v):
            parts = [convert_to_tensor(x) for x in local_results(v)]
            local = parts[0] if len(parts) == 1 else array_ops.concat(parts, axis)
            return self._process_all_gather(local, axis)
        return nest.map_structure(one, value)

    def _process_all_gather(self, tensor, axis):
        return tensor

    # ---------------------------------------------------------- input
    def experimental_distribute_dataset(self, dataset, options=None):
        """Iterating the result gives, for each global batch of `dataset`, each
        replica's share of its rows (a PerReplica where this process has
        several replicas)."""
        return input_lib.DistributedDataset(dataset, self)

    def distribute_datasets_from_function(self, dataset_fn, options=None):
        """dataset_fn(td.distribute.InputContext) makes this process's dataset,
        whose elements are per-replica batches."""
        return input_lib.DatasetsFromFunction(dataset_fn, self)

    def _split_batch(self, element):
        """This process's replicas' shares of one global batch."""
        return input_lib.split_for_replicas(element, self._replica_shares())

    def _replica_shares(self):
        """(number of parts to cut a global batch into, indices of the parts
        this process's replicas take, in order)."""
        n = self.num_replicas_in_sync
        return n, list(range(n))

    def _input_context(self):
        return input_lib.InputContext(1, 0, self.num_replicas_in_sync)

    def __repr__(self):
        return f"<td.distribute.{type(self).__name__} num_replicas_in_sync={self.num_replicas_in_sync}>"


class _DefaultStrategy(Strategy):
    """The strategy in force outside any scope: one replica, this thread."""

    def __init__(self):
        super().__init__(["/device:CPU:0"])

    @property
    def num_replicas_in_sync(self):
        return 1

    def run(self, fn, args=(), kwargs=None, options=None):
        return fn(*args, **(kwargs or {}))


_DEFAULT = _DefaultStrategy()


class _DefaultReplicaContext(ReplicaContext):
    """The replica context outside any strategy: one replica; collectives
    return their input."""

    def __init__(self):
        super().__init__(_DEFAULT, 0, None)

    def all_reduce(self, reduce_op, value, options=None):
        as_reduce_op(reduce_op)
        return value

    def all_gather(self, value, axis, options=None):
        return value

    def merge_call(self, merge_fn, args=(), kwargs=None):
        return merge_fn(_DEFAULT, *args, **(kwargs or {}))


_DEFAULT_REPLICA_CONTEXT = _DefaultReplicaContext()


def get_strategy():
    """The strategy whose scope() (or run()) this code is in; the default
    strategy (one replica) elsewhere."""
    replica = distribution_context.replica_context()
    if replica is not None:
        return replica.strategy
    stack = distribution_context.strategy_stack()
    return stack[-1] if stack else _DEFAULT


def has_strategy():
    """Whether a strategy other than the default one is in force."""
    return get_strategy() is not _DEFAULT


def get_replica_context():
    """The ReplicaContext inside strategy.run; None in cross-replica context
    (inside a strategy's scope(), outside run); the default one elsewhere."""
    replica = distribution_context.replica_context()
    if replica is not None:
        return replica
    return None if has_strategy() else _DEFAULT_REPLICA_CONTEXT


def in_cross_replica_context():
    """True inside a strategy's scope() and outside its run()."""
    return distribution_context.replica_context() is None and has_strategy()


def _note_variable(variable):
    stack = distribution_context.strategy_stack()
    if stack:
        stack[-1]._on_variable_created(variable)


variables._creation_hooks.append(_note_variable)
