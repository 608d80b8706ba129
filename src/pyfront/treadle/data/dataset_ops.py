"""td.data.Dataset: TensorFlow's tf.data.Dataset names and semantics.

A dataset is a description; iterating it makes a fresh pipeline of stage
iterators, each yielding elements as flat lists of eager tensors (packed into
the element_spec's structure only when handed to the user). The stages live
in sources.py, transformations.py, batching.py, interleave.py, readers.py and
iterator_ops.py, which subclass Dataset; the Dataset methods that make them
(from_tensor_slices, map, batch, iteration, ...) are written in
dataset_methods.py, a module above them, and installed here through
install_methods, so that this module imports none of its subclasses."""

import os

import numpy as np

from treadle import _core
from treadle.framework.tensor import constant

AUTOTUNE = -1
INFINITE_CARDINALITY = -1
UNKNOWN_CARDINALITY = -2
_MAX_THREADS = 64


class Dataset:
    """A stream of elements, as `tf.data.Dataset`: make one with a source
    (`Dataset.from_tensor_slices`, `Dataset.range`, `td.data.TFRecordDataset`,
    ...), chain transformations (`map`, `batch`, `shuffle`, `prefetch`, ...),
    and iterate it with a `for` loop, eagerly or inside a `td.function`.

        ds = td.data.Dataset.from_tensor_slices(x).map(f).batch(32).prefetch(2)
        for batch in ds:
            ...
    """
    # For subclasses: set `_spec` (the element_spec) and implement `_py_iter()`
    # (a new Python iterator of flat element lists), `_cardinality()` (an int)
    # and, where the stage runs in C++, `_cpp_stage()` (a _core.DataStage).
    # `_flat_iter()` runs the C++ pipeline when there is one: its elements then
    # flow between stages without Python, and prefetch threads run it ahead
    # with the GIL released. The sources, transformations and iteration are
    # installed by dataset_methods.py (see install_methods).

    _spec = None

    def _flat_iter(self):
        stage = self._stage()
        return self._py_iter() if stage is None else _stage_elements(stage.iterator())

    def _stage(self):
        if "_stage_cache" not in self.__dict__:
            self._stage_cache = self._cpp_stage()
        return self._stage_cache

    def _cpp_stage(self):
        return None

    def _input_stage(self):
        """This dataset as the input of a C++ stage: its own C++ stage, or its
        Python iteration behind a bridge that takes the GIL per element."""
        stage = self._stage()
        return stage if stage is not None else _core.data_python(self._py_iter)

    # ------------------------------------------------------------ inspection
    @property
    def element_spec(self):
        """The structure of an element: a nest of `td.TensorSpec` (dtype and shape, `None` for unknown
        dimensions), as tf.data's."""
        return self._spec

    def cardinality(self):
        """The number of elements as an int64 scalar tensor; `td.data.INFINITE_CARDINALITY` (-1) for a
        dataset that never ends, `td.data.UNKNOWN_CARDINALITY` (-2) where it cannot be known without
        iterating (after a `filter`, say)."""
        return constant(np.int64(self._cardinality()))

    def _cardinality(self):
        return UNKNOWN_CARDINALITY

    def __len__(self):
        n = self._cardinality()
        if n == INFINITE_CARDINALITY:
            raise TypeError("The dataset is infinite.")
        if n == UNKNOWN_CARDINALITY:
            raise TypeError("The dataset length is unknown.")
        return n

    def __bool__(self):
        return True

    def __repr__(self):
        return f"<{type(self).__name__} element_spec={self._spec}>"

    def apply(self, transformation_func):
        """`transformation_func(self)`, which must return a Dataset: lets a chain of methods include a
        function of the whole dataset."""
        result = transformation_func(self)
        if not isinstance(result, Dataset):
            raise TypeError(f"Dataset.apply: `transformation_func` must return a Dataset, got {type(result).__name__}")
        return result


def install_methods(methods):
    """Installs the attributes `methods` (a class) defines on Dataset: the
    methods that make datasets of Dataset's subclasses, which live in modules
    above this one. Each name is defined once: installing over an attribute
    Dataset already has is an error (and installs nothing)."""
    found = {name: value for name, value in vars(methods).items()
             if name not in ("__module__", "__qualname__", "__doc__", "__dict__", "__weakref__")}
    twice = sorted(set(found) & set(vars(Dataset)))
    if twice:
        raise AttributeError(f"Dataset.{', Dataset.'.join(twice)} defined twice ({methods.__qualname__} and Dataset)")
    for name, value in found.items():
        function = value.__func__ if isinstance(value, staticmethod) else value
        if hasattr(function, "__qualname__"):
            function.__qualname__ = f"Dataset.{name}"  # as help() and reprs should name it
        setattr(Dataset, name, value)


def _stage_elements(iterator):
    while True:
        element = iterator.next()
        if element is None:
            return
        yield element


def as_count(value, what):
    """An int64 count argument (a Python int or an integer scalar tensor)."""
    v = np.asarray(value)
    if v.ndim != 0 or not np.issubdtype(v.dtype, np.integer):
        raise TypeError(f"{what} must be an integer scalar, got {value!r}")
    return int(v)


def parallelism(num_parallel_calls):
    """How many threads AUTOTUNE or a requested count means here."""
    if num_parallel_calls is None:
        return 1
    n = as_count(num_parallel_calls, "num_parallel_calls")
    if n == AUTOTUNE:
        return max(2, os.cpu_count() or 2)
    if n < 1:
        raise ValueError(f"num_parallel_calls must be positive or td.data.AUTOTUNE, got {n}")
    return min(n, _MAX_THREADS)  # parallelism beyond this only costs threads


def check_dataset(value, what):
    if not isinstance(value, Dataset):
        raise TypeError(f"{what} must be a td.data.Dataset, got {type(value).__name__}")
    return value

