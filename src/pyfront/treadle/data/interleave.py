"""interleave: TensorFlow's cycle. `cycle_length` input elements are each
mapped to a dataset; `block_length` elements are taken from each in turn, and
an exhausted one is replaced by the dataset of the next input element.

The cycle runs in C++ (data/interleave.cc). With num_parallel_calls, that
many C++ threads fetch the open datasets' elements ahead without the GIL; the
order is still TensorFlow's unless deterministic=False, which lets the cycle
skip a dataset whose next element is not ready yet."""

import os

from treadle import _core, errors
from treadle.data import structure
from treadle.data.dataset_ops import AUTOTUNE, Dataset, as_count, parallelism
from treadle.function.polymorphic_function import function


class InterleaveDataset(Dataset):
    """map_func is called in Python on each input element (eager tensors) and
    must return a Dataset: datasets are Python objects here, not graph values.
    The element_spec is, as in TensorFlow, that of the dataset map_func
    returns when traced on symbolic elements of the input's element_spec
    (the input is not read for it). A map_func that needs concrete values
    (e.g. Dataset.range(x)) cannot be traced: the element_spec is then that of
    the dataset of the input's first element."""

    def __init__(self, input_dataset, map_func, cycle_length, block_length, num_parallel_calls=None,
                 deterministic=None, element_spec=None):
        self._input = input_dataset
        self._map_func = map_func
        cycle = AUTOTUNE if cycle_length is None else as_count(cycle_length, "cycle_length")
        self._cycle = max(1, os.cpu_count() or 1) if cycle == AUTOTUNE else cycle
        self._block = 1 if block_length is None else as_count(block_length, "block_length")
        if self._cycle < 1 or self._block < 1:
            raise errors.InvalidArgumentError(None, None, f"interleave: cycle_length ({cycle_length}) and "
                                                          f"block_length ({block_length}) must be positive")
        if self._cycle > _core.data_max_interleave_cycle:
            raise errors.InvalidArgumentError(None, None, f"interleave: cycle_length {self._cycle} is more than the "
                                                          f"{_core.data_max_interleave_cycle} datasets one "
                                                          f"interleave may keep open")
        # More threads than open datasets would have nothing to fetch.
        self._threads = 0 if num_parallel_calls is None else min(parallelism(num_parallel_calls), self._cycle)
        self._deterministic = deterministic is not False
        self._known_spec = element_spec

    @property
    def element_spec(self):
        if self._known_spec is None:
            traced, why = self._traced_spec()
            self._known_spec = traced if traced is not None else self._first_dataset_spec(why)
        return self._known_spec

    def _traced_spec(self):
        """(the element_spec of the dataset map_func returns on symbolic
        elements, None) or (None, why it could not be traced)."""
        spec = self._input.element_spec
        returned = []

        def trace(*flat):
            returned.append(self._call_map_func(flat))

        try:
            function(trace, autograph=False).get_concrete_function(*structure.flat_specs(spec))
        except Exception as e:  # noqa: BLE001 - map_func needs concrete values: learn the spec from one
            return None, e
        return _checked_dataset(returned[0]).element_spec, None

    def _first_dataset_spec(self, why):
        first = next(self._input._flat_iter(), None)
        if first is None:
            raise ValueError(f"interleave: the element_spec is not known: `map_func` could not be traced on "
                             f"symbolic elements ({type(why).__name__}: {why}) and the input dataset is empty")
        return self._dataset_for(first).element_spec

    @property
    def _spec(self):
        return self.element_spec

    def _call_map_func(self, flat):
        element = structure.pack(self._input.element_spec, flat)
        return self._map_func(*element) if isinstance(element, tuple) else self._map_func(element)

    def _dataset_for(self, flat):
        return _checked_dataset(self._call_map_func(flat))

    def _stage_for(self, flat):
        """The C++ stage of an input element's dataset (called by the cycle, with the GIL)."""
        ds = self._dataset_for(flat)
        want = [s.dtype for s in structure.flat_specs(self._known_spec)]
        if [s.dtype for s in structure.flat_specs(ds.element_spec)] != want:
            raise TypeError(f"interleave: `map_func` returned datasets of different element types: "
                            f"{self._known_spec} and {ds.element_spec}")
        return ds._input_stage()

    def _cpp_stage(self):
        self.element_spec  # noqa: B018 - known before the cycle checks each dataset against it
        return _core.data_interleave(self._input._input_stage(), self._stage_for, self._cycle, self._block,
                                     self._threads, self._deterministic)


def _checked_dataset(ds):
    if not isinstance(ds, Dataset):
        raise TypeError(f"interleave: `map_func` must return a td.data.Dataset, got {type(ds).__name__}")
    return ds
