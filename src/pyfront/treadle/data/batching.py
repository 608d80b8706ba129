"""batch, padded_batch and unbatch."""

import numpy as np

from treadle import _core, errors
from treadle.data import structure
from treadle.data.dataset_ops import INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, Dataset, as_count, parallelism
from treadle.framework import dtypes
from treadle.framework.tensor import constant
from treadle.framework.tensor_shape import TensorShape
from treadle.framework.tensor_spec import TensorSpec
from treadle.util import nest


def _batch_size(value):
    n = as_count(value, "batch_size")
    if n < 1:
        raise errors.InvalidArgumentError(None, None, f"batch_size must be greater than zero, got {n}")
    return n


def _groups(source, size, drop_remainder):
    group = []
    for flat in source:
        group.append(flat)
        if len(group) == size:
            yield group
            group = []
    if group and not drop_remainder:
        yield group


def _batched_cardinality(n, size, drop_remainder):
    if n < 0:
        return n
    return n // size if drop_remainder else -(-n // size)


class BatchDataset(Dataset):
    """batch: in C++; with num_parallel_calls, batches are gathered and
    stacked on that many C++ threads, in order unless deterministic=False."""

    def __init__(self, input_dataset, batch_size, drop_remainder, num_parallel_calls=None, deterministic=None):
        self._input = input_dataset
        self._size = _batch_size(batch_size)
        self._drop = bool(drop_remainder)
        self._threads = parallelism(num_parallel_calls)
        self._deterministic = deterministic is not False
        infinite = input_dataset._cardinality() == INFINITE_CARDINALITY
        self._spec = structure.batched_spec(input_dataset.element_spec,
                                            self._size if self._drop or infinite else None)

    def _cpp_stage(self):
        if self._threads > 1:
            return _core.data_parallel_batch(self._input._input_stage(), self._size, self._drop, self._threads,
                                             self._deterministic)
        return _core.data_batch(self._input._input_stage(), self._size, self._drop)

    def _cardinality(self):
        return _batched_cardinality(self._input._cardinality(), self._size, self._drop)


class PaddedBatchDataset(Dataset):
    """padded_batch: each component padded to `padded_shapes` (None dims: the
    longest in the batch) with `padding_values` (0, False or b"" by default)."""

    def __init__(self, input_dataset, batch_size, padded_shapes, padding_values, drop_remainder):
        self._input = input_dataset
        self._size = _batch_size(batch_size)
        self._drop = bool(drop_remainder)
        spec = input_dataset.element_spec
        if padded_shapes is None:
            for s in structure.flat_specs(spec):
                if s.shape.rank is None:
                    raise ValueError("padded_batch: padded_shapes must be given when a component's rank is unknown")
            padded_shapes = nest.map_structure(lambda s: s.shape.as_list(), spec)
        flat_specs = structure.flat_specs(spec)
        self._shapes = _flatten_shapes(spec, padded_shapes)
        if padding_values is None:
            self._pads = [_default_pad(s.dtype) for s in flat_specs]
        else:
            pads = nest.flatten(padding_values) if not isinstance(spec, TensorSpec) else [padding_values]
            if len(pads) == 1 and len(flat_specs) > 1:
                pads = pads * len(flat_specs)
            self._pads = [np.asarray(p.numpy() if hasattr(p, "numpy") else p, dtype=object if s.dtype == dtypes.string
                                     else s.dtype.as_numpy_dtype) for p, s in zip(pads, flat_specs)]
        for shape, s in zip(self._shapes, flat_specs):
            if shape.rank is None or (s.shape.rank is not None and shape.rank != s.shape.rank):
                raise ValueError(f"padded_batch: padded shape {shape} does not fit the component {s}")
        infinite = input_dataset._cardinality() == INFINITE_CARDINALITY
        batch_dim = self._size if self._drop or infinite else None
        self._flat_specs = [TensorSpec(TensorShape([batch_dim] + shape.as_list()), s.dtype)
                            for shape, s in zip(self._shapes, flat_specs)]
        self._spec = structure.pack(spec, self._flat_specs)

    def _py_iter(self):
        for group in _groups(self._input._flat_iter(), self._size, self._drop):
            yield [self._pad(c, parts) for c, parts in enumerate(zip(*group))]

    def _pad(self, c, parts):
        arrays = [p.numpy() for p in parts]
        target = []
        for d, want in enumerate(self._shapes[c].as_list()):
            longest = max(a.shape[d] for a in arrays)
            if want is not None and longest > want:
                raise errors.InvalidArgumentError(
                    None, None, f"padded_batch: component {c} has size {longest} in dimension {d}, more than its "
                                f"padded shape {self._shapes[c]} allows")
            target.append(longest if want is None else want)
        pad = self._pads[c]
        out = np.empty([len(arrays)] + target, dtype=arrays[0].dtype)
        out[...] = pad
        for i, a in enumerate(arrays):
            out[(i,) + tuple(slice(0, n) for n in a.shape)] = a
        return constant(out, dtype=self._flat_specs[c].dtype)

    def _cardinality(self):
        return _batched_cardinality(self._input._cardinality(), self._size, self._drop)


def _flatten_shapes(spec, padded_shapes):
    """padded_shapes has the element's structure with shapes (lists, tuples,
    TensorShapes) as leaves, which nest would otherwise flatten."""
    if isinstance(spec, TensorSpec):
        return [TensorShape(padded_shapes)]
    if isinstance(spec, dict):
        return [s for k in sorted(spec) for s in _flatten_shapes(spec[k], padded_shapes[k])]
    if isinstance(spec, (tuple, list)):
        if len(spec) != len(padded_shapes):
            raise ValueError(f"padded_batch: padded_shapes {padded_shapes} does not match the element {spec}")
        return [s for sub, shp in zip(spec, padded_shapes) for s in _flatten_shapes(sub, shp)]
    raise TypeError(f"padded_batch: unsupported element structure {spec}")


def _default_pad(dtype):
    if dtype == dtypes.string:
        return np.asarray(b"", dtype=object)
    return np.zeros((), dtype=dtype.as_numpy_dtype)


class UnbatchDataset(Dataset):
    """unbatch: splits every element along its first dimension."""

    def __init__(self, input_dataset):
        self._input = input_dataset
        self._spec = structure.unbatched_spec(input_dataset.element_spec)

    def _cardinality(self):
        """Known when every component's first dimension is static (and the same), as in TensorFlow."""
        dims = {s.shape[0] if s.shape.rank is not None else None
                for s in structure.flat_specs(self._input.element_spec)}
        n = self._input._cardinality()
        if len(dims) != 1 or None in dims or n == UNKNOWN_CARDINALITY:
            return UNKNOWN_CARDINALITY
        dim = dims.pop()
        if n == INFINITE_CARDINALITY:
            return INFINITE_CARDINALITY if dim > 0 else UNKNOWN_CARDINALITY
        return n * dim

    def _cpp_stage(self):
        return _core.data_unbatch(self._input._input_stage())
