"""`for x in dataset` (and `for x in iterator`) while tracing: a While node
that pulls elements through the iterable's staged iteration, carrying the
loop's state, so the loop is a reduction over the dataset as in TensorFlow's
AutoGraph; `break` and `return` stop pulling (take_while / scan semantics).

The iterable provides `_ag_staged_iteration()` (td.data's datasets and graph
iterators do): an object with start(), get_next(handle) -> (has_value, flat
element), pack(flat) and finish(handle, after). AutoGraph needs no import of
td.data for it.

`enumerate(dataset)` (or of an iterator) is one such loop with a counter
carried beside the element, as TensorFlow's `dataset.enumerate()`: an int64
index from `start`. `zip` of datasets (or iterators) is one loop pulling
from each, ending with the shortest, as TensorFlow's `Dataset.zip`."""

from treadle.autograph.operators import logical
from treadle.autograph.operators.graph_loops import staged_loop
from treadle.framework import context, dtypes
from treadle.framework.func_graph import FuncGraph
from treadle.framework.tensor import Tensor, convert_to_tensor
from treadle.ops import math_ops
from treadle.util import nest


def is_staged_iterable(iter_):
    return context.current_graph() is not None and hasattr(type(iter_), "_ag_staged_iteration")


class StagedEnumerate:
    """`enumerate(iterable, start)` of a dataset or iterator while tracing."""

    __slots__ = ("iterable", "start")

    def __init__(self, iterable, start):
        self.iterable, self.start = iterable, start

    def _ag_staged_iteration(self):
        return self.iterable._ag_staged_iteration()


class StagedZip:
    """`zip(*iterables)` of datasets or iterators while tracing."""

    __slots__ = ("iterables",)

    def __init__(self, iterables):
        self.iterables = tuple(iterables)

    def _ag_staged_iteration(self):
        return _ZippedIteration([i._ag_staged_iteration() for i in self.iterables])


class _ZippedIteration:
    """Several staged iterations pulled in step: it has a value while all do;
    an element is the tuple of theirs."""

    def __init__(self, iterations):
        self._iterations = iterations
        self._widths = []

    @property
    def relaxes_shapes(self):
        return all(getattr(i, "relaxes_shapes", True) for i in self._iterations)

    def start(self):
        return [i.start() for i in self._iterations]

    def get_next(self, handles):
        has_value, flat, self._widths = None, [], []
        for iteration, handle in zip(self._iterations, handles):
            more, part = iteration.get_next(handle)
            has_value = more if has_value is None else math_ops.OPERATOR_FUNCTIONS["and"](has_value, more)
            flat.extend(part)
            self._widths.append(len(part))
        return has_value, flat

    def pack(self, flat):
        parts, at = [], 0
        for iteration, width in zip(self._iterations, self._widths):
            parts.append(iteration.pack(flat[at:at + width]))
            at += width
        return tuple(parts)

    def finish(self, handles, after):
        for iteration, handle in zip(self._iterations, handles):
            iteration.finish(handle, after)


def for_stmt(iter_, extra_test, body, get_state, set_state, symbol_names, opts):
    iteration = iter_._ag_staged_iteration()
    handle = iteration.start()
    current = list(iteration.get_next(handle))  # [has_value, flat element]
    width = len(current[1])
    counter = []  # [the index] of an enumerate loop, carried with the element
    if type(iter_) is StagedEnumerate:
        start = iter_.start
        start = math_ops.cast(start, dtypes.int64) if isinstance(start, Tensor) else convert_to_tensor(
            start, dtype=dtypes.int64)
        counter.append(start)

    def get_all():
        user = tuple(get_state()) if get_state is not None else ()
        return (current[0],) + tuple(current[1]) + tuple(counter) + user

    def set_all(values):
        current[0], current[1] = values[0], list(values[1:1 + width])
        rest = values[1 + width:]
        counter[:] = rest[:len(counter)]
        if set_state is not None:
            set_state(tuple(rest[len(counter):]))

    def item():
        element = iteration.pack(current[1])
        return (counter[0], element) if counter else element

    def test():
        has_value = current[0]
        if extra_test is None:
            return has_value
        return logical.and_(lambda: has_value, extra_test)

    def step():
        body(item())
        if counter:
            counter[0] = counter[0] + 1
        current[0], current[1] = iteration.get_next(handle)

    if getattr(iteration, "relaxes_shapes", True):  # a dataset's loop, not an iterator's (see StagedIteration)
        opts = _with_relaxed_shapes(opts, lambda: body(item()), get_state, set_state)
    names = ("the dataset's has_value",) + tuple(f"the dataset element's component {i}" for i in range(width))
    names += ("the enumerate index",) * len(counter)
    staged_loop(test, step, get_all, set_all, names + tuple(symbol_names), opts, opts.get("maximum_iterations"))
    iteration.finish(handle, [current[0]])


def _with_relaxed_shapes(opts, run_body, get_state, set_state):
    """As TensorFlow's dataset reduction relaxes its state to the shapes both
    the initial value and one iteration's result fit, so does this loop: the
    body is traced once in a throwaway graph, and each tensor whose shape
    changes gets that relaxed shape as its invariant."""
    if get_state is None:
        return opts
    before = tuple(get_state())
    probe = FuncGraph("dataset_loop_probe", outer_graph=context.current_graph())
    try:
        with probe:
            run_body()
        after = tuple(get_state())
    except Exception:  # noqa: BLE001 - the real trace reports it, in the right graph
        set_state(before)
        return opts
    set_state(before)
    pairs = list(opts.get("shape_invariants") or [])
    for b, a in zip(before, after):
        try:
            leaves = zip(nest.flatten(b), nest.flatten(a))
        except (TypeError, ValueError):
            continue
        for x, y in leaves:
            if isinstance(x, Tensor) and isinstance(y, Tensor) and not y.shape.is_subtype_of(x.shape):
                pairs.append((x, x.shape.most_specific_compatible_shape(y.shape)))
    return dict(opts, shape_invariants=pairs) if pairs else opts
