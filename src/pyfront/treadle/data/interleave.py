"""interleave: TensorFlow's cycle. `cycle_length` input elements are each
mapped to a dataset; `block_length` elements are taken from each in turn, and
an exhausted one is replaced by the dataset of the next input element."""

import os

from treadle import errors
from treadle.data import structure
from treadle.data.dataset_ops import AUTOTUNE, Dataset, as_count


class InterleaveDataset(Dataset):
    """map_func is called in Python on each input element (eager tensors) and
    must return a Dataset: datasets are Python objects here, not graph values.
    The element_spec is that of the first dataset map_func returns, unless
    the caller knows it."""

    def __init__(self, input_dataset, map_func, cycle_length, block_length, element_spec=None):
        self._input = input_dataset
        self._map_func = map_func
        cycle = AUTOTUNE if cycle_length is None else as_count(cycle_length, "cycle_length")
        self._cycle = max(1, os.cpu_count() or 1) if cycle == AUTOTUNE else cycle
        self._block = 1 if block_length is None else as_count(block_length, "block_length")
        if self._cycle < 1 or self._block < 1:
            raise errors.InvalidArgumentError(None, None, f"interleave: cycle_length ({cycle_length}) and "
                                                          f"block_length ({block_length}) must be positive")
        self._known_spec = element_spec

    @property
    def element_spec(self):
        if self._known_spec is None:
            first = next(self._input._flat_iter(), None)
            if first is None:
                raise ValueError("interleave: the element_spec of an interleave over an empty dataset is not known")
            self._known_spec = self._dataset_for(first).element_spec
        return self._known_spec

    @property
    def _spec(self):
        return self.element_spec

    def _dataset_for(self, flat):
        element = structure.pack(self._input.element_spec, flat)
        ds = self._map_func(*element) if isinstance(element, tuple) else self._map_func(element)
        if not isinstance(ds, Dataset):
            raise TypeError(f"interleave: `map_func` must return a td.data.Dataset, got {type(ds).__name__}")
        return ds

    def _py_iter(self):
        """TensorFlow's order: a slot's iterator is opened when the cycle first
        reaches it; when one ends, the cycle moves on and the slot is refilled
        from the input when the cycle comes back to it."""
        inputs = self._input._flat_iter()
        cycle, block = self._cycle, self._block
        slots = [None] * cycle
        at = taken = num_open = 0
        end_of_input = False
        while not end_of_input or num_open > 0:
            it = slots[at]
            if it is not None:
                flat = next(it, None)
                if flat is not None:
                    taken += 1
                    if taken == block:
                        taken, at = 0, (at + 1) % cycle
                    yield flat
                    continue
                slots[at] = None
                num_open -= 1
                taken, at = 0, (at + 1) % cycle
            elif not end_of_input:
                flat = next(inputs, None)
                if flat is None:
                    end_of_input = True
                else:
                    slots[at] = self._dataset_for(flat)._flat_iter()
                    num_open += 1
            else:
                taken, at = 0, (at + 1) % cycle
