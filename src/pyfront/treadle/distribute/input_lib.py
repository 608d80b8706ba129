"""Feeding replicas: distributed datasets and the InputContext.

`strategy.experimental_distribute_dataset(dataset)` takes a dataset of
global batches and gives each replica its share of every batch: the rows
are cut into num_replicas_in_sync contiguous parts (sizes differing by at
most one, as numpy.array_split cuts), and replica i takes part i. So N
replicas on parts b1..bN see exactly the rows one process would see in the
whole batch. Every process reads the whole dataset and keeps its parts.

`strategy.distribute_datasets_from_function(dataset_fn)` calls dataset_fn
with an InputContext once per process; the dataset it returns yields
per-replica batches (shard it with ctx.input_pipeline_id, as TensorFlow's
users do), and the process's replicas take successive elements."""

from treadle.framework.op_execution import execute
from treadle.framework.tensor import convert_to_tensor
from treadle.function import trace_type
from treadle.ops import array_ops, math_ops
from treadle.distribute.values import PerReplica
from treadle.util import nest


class InputContext:
    """Where this input pipeline stands (TensorFlow's tf.distribute.InputContext)."""

    def __init__(self, num_input_pipelines=1, input_pipeline_id=0, num_replicas_in_sync=1):
        self.num_input_pipelines = num_input_pipelines
        self.input_pipeline_id = input_pipeline_id
        self.num_replicas_in_sync = num_replicas_in_sync

    def get_per_replica_batch_size(self, global_batch_size):
        """global_batch_size / num_replicas_in_sync, which must divide evenly."""
        if global_batch_size % self.num_replicas_in_sync:
            raise ValueError(f"The `global_batch_size` {global_batch_size} is not divisible by "
                             f"`num_replicas_in_sync` {self.num_replicas_in_sync}")
        return global_batch_size // self.num_replicas_in_sync

    def __repr__(self):
        return (f"InputContext(num_input_pipelines={self.num_input_pipelines}, "
                f"input_pipeline_id={self.input_pipeline_id}, num_replicas_in_sync={self.num_replicas_in_sync})")


def _bounds(rows, parts):
    """numpy.array_split's cut points of `rows` rows into `parts` parts."""
    base, extra = divmod(rows, parts)
    bounds, start = [], 0
    for i in range(parts):
        stop = start + base + (1 if i < extra else 0)
        bounds.append((start, stop))
        start = stop
    return bounds


def _rows(leaf):
    shape = getattr(leaf, "shape", None)
    if shape is None or len(shape) == 0:
        raise ValueError(f"a distributed dataset's elements must be batches (a leading batch dimension); got {leaf!r}")
    rows = shape[0]
    if rows is None:
        rows = int(leaf.nrows()) if hasattr(leaf, "nrows") else len(leaf)
    return int(rows)


def _static_rows(leaf):
    shape = getattr(leaf, "shape", None)
    if shape is not None and len(shape) and shape[0] is not None:
        return int(shape[0])
    return None


def _traced_share(leaf, parts, i):
    """Part i of a traced batch whose row count is known only when it runs
    (the same cut as _bounds, computed with ops)."""
    rows = array_ops.shape(leaf)[0]
    base, extra = rows // parts, rows % parts
    start = base * i + execute("Minimum", [extra, convert_to_tensor(i, dtype=rows.dtype)])[0]
    stop = start + base + math_ops.cast(extra > i, rows.dtype)
    return leaf[start:stop]


def split_for_replicas(element, shares):
    """This process's replicas' parts of one global batch `element` (a nest):
    one part as it is, several as PerReplica leaves."""
    parts, mine = shares

    def split(leaf):
        if not hasattr(leaf, "shape"):
            leaf = convert_to_tensor(leaf)
        rows = _static_rows(leaf)
        if rows is None and not hasattr(leaf, "numpy"):
            pieces = [_traced_share(leaf, parts, i) for i in mine]
        else:
            bounds = _bounds(_rows(leaf) if rows is None else rows, parts)
            pieces = [leaf[bounds[i][0]:bounds[i][1]] for i in mine]
        return pieces[0] if len(pieces) == 1 else PerReplica(pieces)

    return nest.map_structure(split, element)


class _SplitStagedIteration:
    """AutoGraph's staged iteration of a distributed dataset (`for x in
    dist_dataset` inside a td.function): the dataset's own, each element cut
    into the replicas' shares as the loop body receives it."""

    # As in TensorFlow, a loop over distributed input checks its variables'
    # shapes (and shape invariants) as a while loop does; only a plain
    # dataset's loop, a reduction, relaxes them.
    relaxes_shapes = False

    def __init__(self, inner, shares):
        self._inner = inner
        self._shares = shares

    def start(self):
        return self._inner.start()

    def get_next(self, handle):
        return self._inner.get_next(handle)

    def pack(self, flat):
        return split_for_replicas(self._inner.pack(flat), self._shares)

    def finish(self, handle, after):
        return self._inner.finish(handle, after)


class DistributedDataset:
    """A dataset of global batches, each cut into the replicas' shares."""

    def __init__(self, dataset, strategy):
        self._dataset = dataset
        self._strategy = strategy

    @property
    def element_spec(self):
        return self._dataset.element_spec

    def __iter__(self):
        return DistributedIterator(iter(self._dataset), self._strategy)

    def _ag_staged_iteration(self):
        return _SplitStagedIteration(self._dataset._ag_staged_iteration(), self._strategy._replica_shares())

    def __tf_tracing_type__(self, context):
        """As a td.function argument: its dataset's trace type (one trace per
        element_spec and strategy)."""
        return DistributedDatasetType(trace_type.from_value(self._dataset, context), self._strategy)


class DistributedIterator:
    """iter(distributed dataset): `next()` gives the replicas' shares of the
    next batch; inside a td.function it pulls from the graph's iterator (an
    OutOfRangeError when the function runs past the end)."""

    def __init__(self, iterator, strategy):
        self._iterator = iterator
        self._strategy = strategy

    def __iter__(self):
        return self

    def __next__(self):
        return split_for_replicas(next(self._iterator), self._strategy._replica_shares())

    def get_next(self):
        return split_for_replicas(self._iterator.get_next(), self._strategy._replica_shares())

    @property
    def element_spec(self):
        return self._iterator.element_spec

    def _ag_staged_iteration(self):
        return _SplitStagedIteration(self._iterator._ag_staged_iteration(), self._strategy._replica_shares())

    @property
    def _dataset(self):
        return self._iterator  # what DistributedDatasetType traces: the wrapped iterator

    def __tf_tracing_type__(self, context):
        """As a td.function argument: its iterator's trace type (one trace per
        element_spec and strategy); the function pulls from this iterator."""
        return DistributedDatasetType(trace_type.from_value(self._iterator, context), self._strategy,
                                      DistributedIterator)


class DistributedDatasetType(trace_type.TraceType):
    """The trace type of a distributed dataset argument (or, with `kind`
    DistributedIterator, of an iterator over one): the trace type of the
    dataset (iterator) it wraps, and its strategy."""

    def __init__(self, dataset_type, strategy, kind=None):
        self.dataset_type = dataset_type
        self.strategy = strategy
        self.kind = kind or DistributedDataset

    def is_subtype_of(self, other):
        return self == other

    def most_specific_common_supertype(self, others):
        return self if all(self == o for o in others) else None

    def placeholder_value(self, placeholder_context=None):
        return self.kind(self.dataset_type.placeholder_value(placeholder_context), self.strategy)

    def to_tensors(self, value):
        return self.dataset_type.to_tensors(value._dataset)

    def cast(self, value, casting_context=None):
        if not isinstance(value, self.kind) or value._strategy is not self.strategy:
            what = "dataset" if self.kind is DistributedDataset else "iterator over a dataset"
            raise ValueError(f"{value!r} is not a {what} distributed by {self.strategy!r}")
        return value

    def __eq__(self, other):
        return (type(other) is DistributedDatasetType and other.dataset_type == self.dataset_type
                and other.strategy is self.strategy and other.kind is self.kind)

    def __hash__(self):
        return hash((self.dataset_type, id(self.strategy), self.kind))

    def __repr__(self):
        return f"{self.kind.__name__}[{self.dataset_type!r}]"

    def reduce(self, initial_state, reduce_fn):
        state = initial_state
        for element in self:
            state = reduce_fn(state, element)
        return state


class DatasetsFromFunction:
    """The per-process dataset of dataset_fn, its elements dealt to this
    process's replicas in turn."""

    def __init__(self, dataset_fn, strategy):
        self._strategy = strategy
        self._dataset = dataset_fn(strategy._input_context())

    @property
    def element_spec(self):
        return self._dataset.element_spec

    def _ag_staged_iteration(self):
        if self._strategy._num_local_replicas != 1:
            raise NotImplementedError(
                "`for x in strategy.distribute_datasets_from_function(...)` inside a td.function with several "
                "replicas in this process; iterate it outside the td.function and pass each element in")
        return self._dataset._ag_staged_iteration()

    def __iter__(self):
        local = self._strategy._num_local_replicas
        iterator = iter(self._dataset)
        while True:
            group = []
            for _ in range(local):
                try:
                    group.append(next(iterator))
                except StopIteration:
                    return
            yield group[0] if local == 1 else _per_replica_nest(group)


def _per_replica_nest(elements):
    flats = [nest.flatten(e) for e in elements]
    return nest.pack_sequence_as(elements[0], [PerReplica(vs) for vs in zip(*flats)])
