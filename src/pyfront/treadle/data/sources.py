"""Datasets that make elements: from tensors, ranges, generators, and the
combinations zip and concatenate."""

from treadle import _core, errors
from treadle.data import structure
from treadle.data.dataset_ops import INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, Dataset, as_count, check_dataset
from treadle.framework import dtypes
from treadle.framework.tensor import convert_to_tensor
from treadle.framework.tensor_shape import TensorShape
from treadle.framework.tensor_spec import TensorSpec
from treadle.util import nest


class TensorDataset(Dataset):
    """from_tensors: one element, the whole structure."""

    def __init__(self, tensors):
        self._element = structure.to_tensors(tensors)
        self._flat = structure.flatten(self._element)
        self._spec = structure.spec_of(self._element)

    def _py_iter(self):
        return iter([list(self._flat)])

    def _cardinality(self):
        return 1


class TensorSliceDataset(Dataset):
    """from_tensor_slices: the slices along the first dimension of every component."""

    def __init__(self, tensors):
        element = structure.to_tensors(tensors)
        flat = structure.flatten(element)
        if not flat:
            raise ValueError("from_tensor_slices: the structure has no tensors")
        sizes = set()
        for t in flat:
            if t.shape.rank == 0:
                raise ValueError(f"from_tensor_slices: cannot slice a scalar component ({t.shape}, "
                                 f"{t.dtype.name}); every component needs a first dimension")
            sizes.add(t.shape[0])
        if len(sizes) > 1:
            raise ValueError(f"from_tensor_slices: the components' first dimensions differ: {sorted(sizes)}; "
                             "all must have the same size")
        self._count = sizes.pop()
        self._components = flat
        self._spec = structure.unbatched_spec(structure.spec_of(element))

    def _cpp_stage(self):
        return _core.data_slices(self._components)

    def _cardinality(self):
        return self._count


class RangeDataset(Dataset):
    """range(stop), range(start, stop[, step]) as Python's range, int64 by default."""

    def __init__(self, *args, output_type=None):
        if not 1 <= len(args) <= 3:
            raise TypeError(f"Dataset.range takes 1 to 3 positional arguments (start, stop, step), got {len(args)}")
        values = [as_count(a, "Dataset.range's arguments") for a in args]
        if len(values) == 1:
            values = [0] + values
        if len(values) == 2:
            values.append(1)
        if values[2] == 0:
            raise errors.InvalidArgumentError(None, None, "Dataset.range: step must not be 0")
        self._range = range(*values)
        self._dtype = dtypes.as_dtype(output_type) if output_type is not None else dtypes.int64
        self._spec = TensorSpec([], self._dtype)

    def _cpp_stage(self):
        r = self._range
        return _core.data_range(r.start, r.stop, r.step, self._dtype)

    def _cardinality(self):
        return len(self._range)


class GeneratorDataset(Dataset):
    """from_generator: calls `generator(*args)` at each iteration and checks
    every yielded value against the output signature."""

    def __init__(self, generator, output_types, output_shapes, args, output_signature):
        if not callable(generator):
            raise TypeError("from_generator: `generator` must be callable")
        if output_signature is not None:
            if output_types is not None or output_shapes is not None:
                raise TypeError("from_generator: give either `output_signature` or `output_types` (and "
                                "`output_shapes`), not both")
            for s in nest.flatten(output_signature):
                if not isinstance(s, TensorSpec):
                    raise TypeError(f"from_generator: output_signature must be a structure of td.TensorSpec, "
                                    f"found {s!r}")
            self._spec = output_signature
        elif output_types is not None:
            if output_shapes is None:
                output_shapes = nest.map_structure(lambda _: None, output_types)
            self._spec = nest.map_structure(lambda t, s: TensorSpec(TensorShape(s), dtypes.as_dtype(t)),
                                            output_types, output_shapes)
        else:
            raise TypeError("from_generator: `output_signature` (or `output_types`) must be given")
        self._generator = generator
        self._args = tuple(args) if args is not None else ()
        self._flat_specs = structure.flat_specs(self._spec)

    def _py_iter(self):
        args = [convert_to_tensor(a) for a in self._args]
        for value in self._generator(*args):
            yield self._convert(value)

    def _convert(self, value):
        """The yielded value as flat tensors; a list stands for a tuple, as in TensorFlow."""
        try:
            leaves = structure.flatten_like(self._spec, value)
        except (TypeError, ValueError) as e:
            raise errors.InvalidArgumentError(
                None, None, f"from_generator: `generator` yielded an element that did not match the expected "
                            f"structure {self._spec}: {value!r} ({e})") from None
        flat = []
        for leaf, spec in zip(leaves, self._flat_specs):
            try:
                t = convert_to_tensor(leaf, dtype=spec.dtype)
            except (TypeError, ValueError) as e:
                raise errors.InvalidArgumentError(
                    None, None, f"from_generator: `generator` yielded {leaf!r}, which is not a {spec.dtype.name} "
                                f"tensor as expected ({e})") from None
            if not spec.shape.is_compatible_with(t.shape):
                raise errors.InvalidArgumentError(
                    None, None, f"from_generator: `generator` yielded an element of shape {t.shape} where an "
                                f"element of shape {spec.shape} was expected")
            flat.append(t)
        return flat


class ZipDataset(Dataset):
    """zip: elements of several datasets side by side, until the shortest ends."""

    def __init__(self, datasets):
        for d in nest.flatten(datasets):
            check_dataset(d, "Dataset.zip's arguments")
        self._datasets = nest.flatten(datasets)
        self._spec = nest.map_structure(lambda d: d.element_spec, datasets)

    def _py_iter(self):
        iters = [d._flat_iter() for d in self._datasets]
        while True:
            flat = []
            for it in iters:
                try:
                    flat.extend(next(it))
                except StopIteration:
                    return
            yield flat

    def _cardinality(self):
        cards = [d._cardinality() for d in self._datasets]
        finite = [c for c in cards if c >= 0]
        if finite:
            return min(finite) if UNKNOWN_CARDINALITY not in cards or min(finite) == 0 else UNKNOWN_CARDINALITY
        return UNKNOWN_CARDINALITY if UNKNOWN_CARDINALITY in cards else INFINITE_CARDINALITY


class ConcatenateDataset(Dataset):
    def __init__(self, first, second):
        check_dataset(second, "Dataset.concatenate's argument")
        self._first, self._second = first, second
        self._spec = structure.common_spec(first.element_spec, second.element_spec, "Dataset.concatenate")

    def _py_iter(self):
        yield from self._first._flat_iter()
        yield from self._second._flat_iter()

    def _cardinality(self):
        a, b = self._first._cardinality(), self._second._cardinality()
        if INFINITE_CARDINALITY in (a, b):
            return INFINITE_CARDINALITY
        if UNKNOWN_CARDINALITY in (a, b):
            return UNKNOWN_CARDINALITY
        return a + b

