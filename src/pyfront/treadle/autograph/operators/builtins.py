"""Python builtins as converted code sees them: on Python values they are the
builtins themselves; on tensors being traced they do what the builtin means
for a tensor (td.range, its length, a cast). `print` stays Python's print,
as in TensorFlow: it runs while tracing (use td.print to print when the
graph runs), unless Feature.BUILTIN_FUNCTIONS is on: then a print of a
tensor prints its value each time the graph runs."""

import builtins
import sys

from treadle.autograph import features
from treadle.autograph.operators import dataset_loops, tensors
from treadle.autograph.operators.iteration import TensorEnumerate
from treadle.framework import dtypes
from treadle.framework.tensor import Tensor
from treadle.ops import array_ops, math_ops, script_ops


def range_(*args):
    if not any(tensors.is_symbolic(a) for a in args):
        return range(*args)
    if not 1 <= len(args) <= 3:
        raise TypeError(f"range expected at most 3 arguments, got {len(args)}")
    return array_ops._range(*args)  # td.range: a staged for loop iterates over it without building it


def enumerate_(iterable, start=0):
    if tensors.is_symbolic(iterable):
        return TensorEnumerate(iterable, start)
    if _is_dataset(iterable):  # as TensorFlow's
        return iterable.enumerate(start)
    if dataset_loops.is_staged_iterable(iterable):  # an iterator or a dataset argument: one staged loop
        return dataset_loops.StagedEnumerate(iterable, start)
    return enumerate(iterable, start)


def zip_(*iterables, strict=False):
    """As TensorFlow's: zip of datasets (or their iterators) is one staged loop
    over all of them in step; anything else is Python's zip."""
    if iterables and not strict and all(dataset_loops.is_staged_iterable(i) for i in iterables):
        if any(type(i) is dataset_loops.StagedEnumerate for i in iterables):
            raise NotImplementedError(
                "zip over enumerate() of a dataset iterator or of a dataset passed to the td.function is not "
                "supported while tracing; enumerate the zip instead: `for i, (x, y) in enumerate(zip(a, b))`")
        return dataset_loops.StagedZip(iterables)
    return zip(*iterables, strict=strict) if strict else zip(*iterables)


def map_(fn, *iterables):
    """As TensorFlow's: map over one dataset is `dataset.map(fn)`."""
    if len(iterables) == 1 and _is_dataset(iterables[0]):
        return iterables[0].map(fn)
    _refuse_untransformable("map", iterables)
    return map(fn, *iterables)


def filter_(fn, iterable):
    """As TensorFlow's: filter of a dataset is `dataset.filter(fn)`."""
    if _is_dataset(iterable):
        return iterable.filter(fn)
    _refuse_untransformable("filter", (iterable,))
    return filter(fn, iterable)


def _refuse_untransformable(name, iterables):
    """A Python map/filter over a dataset iterator (or a dataset argument,
    which the function cannot transform) would pull elements while tracing
    without end: said plainly instead."""
    if any(dataset_loops.is_staged_iterable(i) for i in iterables):
        raise NotImplementedError(
            f"{name}() over a dataset iterator, or over a dataset passed to the td.function, is not supported "
            f"while tracing: apply the function in the loop body, or {name} the dataset before passing it")


def _is_dataset(value):
    """A dataset the traced code can transform (not an iterator, nor a dataset
    passed as an argument, whose transformations are not available inside)."""
    kind = type(value)
    return dataset_loops.is_staged_iterable(value) and not hasattr(kind, "__next__") and hasattr(kind, "map") \
        and hasattr(kind, "enumerate")


def len_(value):
    if tensors.is_symbolic(value):
        shape = value.shape
        if shape.rank == 0:
            raise TypeError(f"len() of a scalar tensor ({value.name}) is not defined")
        if shape.rank is not None and shape[0] is not None:
            return shape[0]
        return array_ops.shape(value)[0]
    return len(value)


def int_(value=0, base=None):
    if tensors.is_symbolic(value):
        return math_ops.cast(value, dtypes.int32)
    return int(value) if base is None else int(value, base)


def float_(value=0.0):
    if tensors.is_symbolic(value):
        return math_ops.cast(value, dtypes.float32)
    return float(value)


def print_(*objects, sep=" ", end="\n", file=None, flush=False):
    if not any(tensors.is_symbolic(o) for o in objects):
        return print(*objects, sep=sep, end=end, file=file, flush=flush)
    positions = [i for i, o in enumerate(objects) if isinstance(o, Tensor)]

    def print_values(*values):
        # As TensorFlow: tensors print as their NumPy values, strings decoded;
        # the other objects as they are; to sys.stdout as it is at run time.
        items = list(objects)
        for i, v in zip(positions, values):
            v = v.numpy()
            items[i] = v.decode("utf-8") if isinstance(v, bytes) else v
        print(*items, sep=sep, end=end, file=sys.stdout if file is None else file, flush=True)

    script_ops.py_function(print_values, [objects[i] for i in positions], None)
    return None


OVERRIDES = {
    builtins.range: range_,
    builtins.enumerate: enumerate_,
    builtins.zip: zip_,
    builtins.map: map_,
    builtins.filter: filter_,
    builtins.len: len_,
    builtins.int: int_,
    builtins.float: float_,
}

# Stand-ins used only with an optional feature (features.py) in effect.
OPTIONAL_OVERRIDES = {
    builtins.print: (features.Feature.BUILTIN_FUNCTIONS, print_),
}


def optional_override(f):
    """The stand-in for builtin `f` under the features in effect, or None."""
    entry = OPTIONAL_OVERRIDES.get(f)
    return entry[1] if entry is not None and features.uses(entry[0]) else None
