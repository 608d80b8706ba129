"""Datasets inside td.function.

A dataset reaches a graph as an int64 token (a function argument of trace
type DatasetType, or a constant for a dataset the function closes over). The
graph iterates it with PyFunc nodes: one makes an iterator of the dataset the
token names, `get_next` pulls an element from the pipeline (has_value first,
then the element's components, zeros at the end), and `release` drops the
iterator. AutoGraph's dataset loop operator (autograph/operators/
dataset_loops.py) turns `for x in dataset` into a While over these nodes, so
each call of the function iterates the dataset afresh, as in TensorFlow.
The pipeline itself runs in Python threads and C++ as it does eagerly; the
PyFunc nodes take the GIL only to hand an element over."""

import dis
import functools
import itertools
import sys
import threading
import weakref

import numpy as np

from treadle import errors
from treadle.data import structure
from treadle.data.dataset_ops import Dataset
from treadle.data.transformations import reduce_in_graph
from treadle.framework import dtypes
from treadle.framework.tensor import Tensor, constant
from treadle.function import trace_type
from treadle.ops.script_ops import py_function

_tokens = itertools.count(1)
_datasets = weakref.WeakValueDictionary()  # token -> Dataset
_iterators = {}  # iterator id -> (flat element iterator, element flat specs)
_iterator_ids = itertools.count(1)
_lock = threading.Lock()


def token_of(dataset):
    """The dataset's token, registering it on first use."""
    token = dataset.__dict__.get("_graph_token")
    if token is None:
        with _lock:
            token = dataset.__dict__.get("_graph_token")
            if token is None:
                token = next(_tokens)
                dataset._graph_token = token
                _datasets[token] = dataset
    return token


# ------------------------------------------------------------------ run time (inside PyFunc nodes)
def _make_iterator(token):
    dataset = _datasets.get(int(token.numpy()))
    if dataset is None:
        raise errors.FailedPreconditionError(None, None, "td.data: the dataset this function iterates no longer "
                                                         "exists")
    return _make_iterator_of(dataset)


def _make_iterator_of(dataset):
    with _lock:
        it_id = next(_iterator_ids)
        _iterators[it_id] = (dataset._flat_iter(), structure.flat_specs(dataset.element_spec))
    return constant(np.int64(it_id))


def _get_next(it_id):
    entry = _iterators.get(int(it_id.numpy()))
    if entry is None:
        raise errors.FailedPreconditionError(None, None, "td.data: the iterator was released")
    source, specs = entry
    flat = next(source, None)
    if flat is None:
        return [constant(False)] + [_zeros(s) for s in specs]
    return [constant(True)] + list(flat)


def _release(it_id, *unused_dependencies):
    with _lock:
        _iterators.pop(int(it_id.numpy()), None)
    return constant(True)


def _zeros(spec):
    shape = [d if d is not None else 0 for d in spec.shape.as_list()] if spec.shape.rank is not None else [0]
    if spec.dtype == dtypes.string:
        return constant(np.full(shape, b"", dtype=object), dtype=dtypes.string)
    return constant(np.zeros(shape, spec.dtype.as_numpy_dtype))


# ------------------------------------------------------------------ graph building
class StagedIteration:
    """What AutoGraph's dataset loop operator builds on: start() makes the
    iterator (a tensor), get_next(handle) gives (has_value, flat element),
    finish(handle, after) releases it once `after` is computed."""

    def __init__(self, source, element_spec, owns_iterator=True, handle=None):
        self._source = source  # a token tensor (a dataset argument) or a Dataset the function closes over
        self.element_spec = element_spec
        self._specs = structure.flat_specs(element_spec)
        self._owns = owns_iterator
        self._handle = handle

    @property
    def relaxes_shapes(self):
        """Whether a loop over it relaxes its variables' shapes: a loop over a
        dataset is a reduction, which does (and ignores shape invariants), a
        loop over an iterator a while loop, which checks them, as in
        TensorFlow."""
        return self._owns

    def start(self):
        if self._handle is not None:
            return self._handle
        if isinstance(self._source, Tensor):
            return py_function(_make_iterator, [self._source], Tout=dtypes.int64)
        # The PyFunc registry keeps the dataset alive as long as the graph can run.
        return py_function(functools.partial(_make_iterator_of, self._source), [], Tout=dtypes.int64)

    def get_next(self, handle):
        out = py_function(_get_next, [handle], Tout=[dtypes.bool] + [s.dtype for s in self._specs])
        has_value, flat = out[0], list(out[1:])
        has_value.set_shape([])
        for t, s in zip(flat, self._specs):
            t.set_shape(s.shape)
        return has_value, flat

    def pack(self, flat):
        return structure.pack(self.element_spec, flat)

    def finish(self, handle, after):
        if self._owns:
            py_function(_release, [handle] + [a for a in after if isinstance(a, Tensor)], Tout=dtypes.bool)


_LOOP_OPCODES = frozenset(dis.opmap[name] for name in ("GET_ITER", "FOR_ITER") if name in dis.opmap)
# next() calls on one iterator while tracing before it counts as a Python loop
# that cannot end (list(dataset), zip(...)): each call adds nodes to the graph.
MAX_TRACED_NEXT = 10000

_UNENDING_LOOP = (
    "a Python loop over a dataset while a td.function is traced never ends: the number of elements is known only "
    "when the function runs, so each turn adds the next element's nodes to the graph, without end. AutoGraph turns "
    "`for x in dataset` into one staged loop, but this loop was not converted: AutoGraph cannot read the source of "
    "a function defined in the interactive interpreter, `python -c` or exec() (it warns so at the first call), and "
    "it is off with td.function(autograph=False). Define the function in a file, or iterate explicitly: "
    "`dataset.reduce(initial, fn)`, or `it = iter(dataset)` and `next(it)` a known number of times.")


def refuse_python_loop(what):
    """TypeError when the caller of `what`'s __iter__ is a Python `for` loop
    (or comprehension) being run as Python while tracing: AutoGraph's
    converted loops never call __iter__ from a loop instruction."""
    frame = sys._getframe(2)
    try:
        opcode = frame.f_code.co_code[frame.f_lasti]
    except (IndexError, AttributeError):  # an interpreter without CPython's frames: no check
        return
    if opcode in _LOOP_OPCODES:
        raise TypeError(f"td.data: {what}: {_UNENDING_LOOP}")


class GraphIterator:
    """iter(dataset) inside a td.function: `next(it)` pulls one element
    (OutOfRangeError when the graph runs past the end); `for x in it`
    continues from where the iterator is."""

    def __init__(self, source, element_spec, handle=None):
        if handle is None:
            self._iteration = StagedIteration(source, element_spec)
            self._handle = self._iteration.start()
        else:  # an iterator made outside, passed as an argument: it continues where it is
            self._iteration = StagedIteration(None, element_spec, owns_iterator=False, handle=handle)
            self._handle = handle
        self.element_spec = element_spec
        self._traced_next = 0

    def __iter__(self):
        refuse_python_loop("iterating a dataset iterator")
        return self

    def __next__(self):
        self._traced_next += 1
        if self._traced_next > MAX_TRACED_NEXT:
            raise TypeError(f"td.data: next() was called {MAX_TRACED_NEXT} times on one dataset iterator while "
                            f"tracing; {_UNENDING_LOOP}")
        has_value, flat = self._iteration.get_next(self._handle)
        py_function(_check_has_value, [has_value], Tout=None)
        return self._iteration.pack(flat)

    def get_next(self):
        return next(self)

    def _ag_staged_iteration(self):
        return StagedIteration(None, self.element_spec, owns_iterator=False, handle=self._handle)


def _check_has_value(has_value):
    if not has_value.numpy():
        raise errors.OutOfRangeError(None, None, "End of sequence")


class SymbolicDataset:
    """A dataset argument as the traced function sees it: its element_spec,
    iteration (for loops, iter/next) and reduce, nothing else."""

    def __init__(self, token, element_spec):
        self._token = token
        self.element_spec = element_spec

    def __iter__(self):
        refuse_python_loop("iterating a dataset")
        return GraphIterator(self._token, self.element_spec)

    def _ag_staged_iteration(self):
        return StagedIteration(self._token, self.element_spec)

    def reduce(self, initial_state, reduce_func, name=None):
        return reduce_in_graph(self, initial_state, reduce_func)

    def __getattr__(self, name):
        if hasattr(Dataset, name):
            raise NotImplementedError(f"td.data: Dataset.{name} on a dataset passed to a td.function is not "
                                      "supported inside the function; transform the dataset before passing it, "
                                      "and iterate it inside (for x in dataset, iter/next)")
        raise AttributeError(name)


class ElementSpecType(trace_type.TraceType):
    """A trace type that is its element_spec, matched exactly: arguments
    with equal element_specs share a trace (datasets, iterators)."""

    def __init__(self, element_spec):
        self.element_spec = element_spec
        self._key = repr(element_spec)

    def is_subtype_of(self, other):
        return self == other

    def most_specific_common_supertype(self, others):
        return self if all(self == o for o in others) else None

    def __eq__(self, other):
        return type(other) is type(self) and other._key == self._key

    def __hash__(self):
        return hash((type(self).__name__, self._key))


class DatasetType(ElementSpecType):
    """The trace type of a dataset argument: its element_spec. Datasets with
    equal element_specs share a trace; each call passes its dataset's token."""

    def placeholder_value(self, placeholder_context=None):
        token = placeholder_context.graph.add_placeholder(dtypes.int64, [], placeholder_context.name)
        return SymbolicDataset(token, self.element_spec)

    def to_tensors(self, value):
        return [constant(np.int64(token_of(value)))]

    def cast(self, value, casting_context=None):
        if not isinstance(value, Dataset) or repr(value.element_spec) != self._key:
            raise ValueError(f"{value!r} is not a dataset with element_spec {self.element_spec}")
        return value

    def __repr__(self):
        return f"DatasetSpec({self.element_spec})"


# ------------------------------------------------------------------ iterator arguments
def iterator_id_of(iterator):
    """The id under which the graph pulls from an eager iterator (its own flat
    element source, so that graph and Python pulls share one position),
    registering it on first use; the entry goes when the iterator does."""
    it_id = iterator.__dict__.get("_graph_id")
    if it_id is None:
        with _lock:
            it_id = iterator.__dict__.get("_graph_id")
            if it_id is None:
                it_id = next(_iterator_ids)
                _iterators[it_id] = (iterator._flat, structure.flat_specs(iterator.element_spec))
                iterator._graph_id = it_id
                weakref.finalize(iterator, _forget_iterator, it_id)
    return it_id


def _forget_iterator(it_id):
    with _lock:
        _iterators.pop(it_id, None)


class IteratorType(ElementSpecType):
    """The trace type of an iterator argument (`iter(dataset)` made outside
    the function): its element_spec. The function pulls from the iterator it
    is given, from where it is, and a `for` loop over it is one While loop
    with the loop checks of a while loop, as in TensorFlow."""

    def placeholder_value(self, placeholder_context=None):
        handle = placeholder_context.graph.add_placeholder(dtypes.int64, [], placeholder_context.name)
        return GraphIterator(None, self.element_spec, handle=handle)

    def to_tensors(self, value):
        return [constant(np.int64(iterator_id_of(value)))]

    def cast(self, value, casting_context=None):
        if getattr(value, "__tf_tracing_type__", None) is None or repr(value.element_spec) != self._key:
            raise ValueError(f"{value!r} is not an iterator with element_spec {self.element_spec}")
        return value

    def __repr__(self):
        return f"IteratorSpec({self.element_spec})"
