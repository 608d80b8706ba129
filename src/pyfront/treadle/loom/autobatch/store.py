"""The store of an autobatched call: per type shape, the rows its rounds
computed that were still in use, numbered from 0 in the order they came.

Outside a gradient tape and a graph being traced nothing needs the rows as
the ops' own tensors: a type shape's rows are then one NumPy array (an
ArrayColumn) that each round's rows are copied onto the end of, grown by
doubling. A round reads it whole, as a tensor sharing its memory (rows once
written never change), so its batch input costs no gather and no copy, and
the schedule reads store rows by their own numbers.

Under a tape (or in a graph), each round's rows stay the tensor its LoomRun
returned (a chunk, a StoreColumn's), and a round's batch input holds only
the rows it reads, gathered from their chunks (a chunk read whole and in
order is used as it is). Chunks are never merged: a chunk's gradient is
then the concatenation of the slices its gathers give, made dense once, by
the gradient of the LoomRun that made it. A merged chunk would get both
its merge's dense gradient and its gathers' slices, so each gather's slices
would be made dense at the merged chunk's size, and added up: every round
would pay for the whole store. (A store kept as one tensor, copied whole
at each round, costs a call with a round per decision more than its matrix
products.)"""

import functools
from bisect import bisect_right

import numpy as np

from treadle import _core
from treadle.framework import dtypes
from treadle.framework.op_execution import execute


class StoreColumn:
    """The stored rows of one type shape, as the tensors of the rounds that
    computed them (a chunk per round); for rounds run under a tape or in a graph."""

    __slots__ = ("chunks", "starts", "counts", "size", "_arrays")

    def __init__(self):
        self.chunks = []   # tensors, in order
        self.starts = []   # the row number of each chunk's first row
        self.counts = []   # each chunk's number of rows
        self.size = 0
        self._arrays = {}  # chunk index -> its NumPy value (read by examples)

    def append(self, tensor):
        """Adds a round's rows (its output tensor of this type shape), a chunk of its own."""
        n = tensor._shape_tuple()[0]
        self.starts.append(self.size)
        self.chunks.append(tensor)
        self.counts.append(n)
        self.size += n

    def _locate(self, row):
        starts = self.starts
        i = len(starts) - 1 if row >= starts[-1] else bisect_right(starts, row) - 1  # often the last round's row
        return i, row - starts[i]

    def numpy_row(self, row):
        """Row `row`'s value as NumPy (an example reads it)."""
        i, local = self._locate(row)
        array = self._arrays.get(i)
        if array is None:
            array = self._arrays[i] = np.asarray(self.chunks[i])
        return array[local]

    def eager_row(self, row):
        """Row `row` as an eager tensor (a tape sees the op)."""
        i, local = self._locate(row)
        return self.chunks[i][local]

    def gather_sorted(self, rows):
        """One tensor of the rows `rows` (sorted, distinct: np.unique's), in that order."""
        starts = self.starts
        if len(starts) == 1 or rows[0] >= starts[-1]:  # all in the last chunk (often: the last round's rows)
            return self._part(len(starts) - 1, rows)
        cuts = np.searchsorted(rows, starts).tolist() + [len(rows)]  # chunk i's rows: rows[cuts[i]:cuts[i + 1]]
        pieces = [self._part(i, rows[a:b]) for i, (a, b) in enumerate(zip(cuts, cuts[1:])) if a < b]
        return pieces[0] if len(pieces) == 1 else concat_rows(pieces)

    def _part(self, i, rows):
        """Rows `rows` (sorted, distinct, all in chunk i) of chunk i."""
        if len(rows) == self.counts[i]:  # the whole chunk, in order
            return self.chunks[i]
        return gather_rows(self.chunks[i], rows - self.starts[i])

    def gather(self, rows):
        """One tensor of the rows `rows` (an int64 array, any order, repeats allowed)."""
        unique, inverse = np.unique(rows, return_inverse=True)
        gathered = self.gather_sorted(unique)
        if len(unique) == len(rows) and np.array_equal(unique, rows):
            return gathered
        return gather_rows(gathered, inverse.astype(np.int64))


# The store is read and written between examples, eagerly, a few times per
# round: its gathers and concatenations call the ops directly (td.gather
# would first ask autobatch's recording hook, and convert its arguments).
@functools.cache
def _axis0():
    """The axis of both ops, as the int32 scalar tensor they read (made once)."""
    return _core.scalar_tensor(0, dtypes.int32)


def gather_rows(tensor, rows):
    """Rows `rows` (a fresh int64 NumPy array, owned by the result) of `tensor`."""
    return execute("GatherV2", [tensor, _core.tensor_from_numpy(rows, False), _axis0()], {"batch_dims": 0})[0]


def concat_rows(tensors):
    """The tensors one after another along axis 0."""
    return execute("ConcatV2", tensors + [_axis0()])[0]


# The dtypes an ArrayColumn holds (NumPy's own, shared with tensors without a copy).
ARRAY_DTYPES = frozenset(np.dtype(t) for t in (np.float16, np.float32, np.float64, np.int8, np.uint8, np.int32,
                                                np.int64, np.bool_))


class ArrayColumn:
    """The stored rows of one type shape as one NumPy array, rows [0, size)
    written (each once) and the rest spare; for rounds run outside a tape
    and a graph. `capacities` ({type shape: rows}, kept between calls)
    starts it as large as the largest so far, so that a call like the last
    one copies no rows to grow it."""

    __slots__ = ("array", "size", "_readonly", "_capacities", "_ts")

    def __init__(self, ts, capacities=None):
        self._capacities, self._ts = {} if capacities is None else capacities, ts
        self.array = np.empty((self._capacities.setdefault(ts, 64),) + tuple(ts.shape), ts.dtype.as_numpy_dtype)
        self.size = 0
        self._readonly = _readonly_view(self.array)  # what examples read: rows they cannot change

    def append(self, tensor):
        """Adds a round's rows (its output tensor of this type shape)."""
        self.append_array(np.asarray(tensor))

    def append_array(self, rows):
        """Adds rows (an array of them, or a sequence of rows); returns the first one's number."""
        first, n = self.size, len(rows)
        if first + n > len(self.array):
            grown = np.empty((max(2 * len(self.array), first + n),) + self.array.shape[1:], self.array.dtype)
            grown[:first] = self.array[:first]
            self.array, self._readonly = grown, _readonly_view(grown)
            self._capacities[self._ts] = len(grown)
        self.array[first:first + n] = rows
        self.size = first + n
        return first

    def batch(self):
        """Every row so far, as one tensor sharing the array's memory."""
        return _core.tensor_from_numpy(self.array[:self.size], False)

    def numpy_row(self, row):
        """Row `row`'s value as NumPy (a read-only view: an example reads it)."""
        return self._readonly[row]

    def eager_row(self, row):
        """Row `row` as an eager tensor (sharing the array's memory; a 0-d one for scalar rows)."""
        return _core.tensor_from_numpy(self.array[row, ...], False)

    def gather(self, rows):
        """One tensor of the rows `rows` (an int64 array, any order, repeats allowed)."""
        return _core.tensor_from_numpy(self.array[rows], False)

    def as_store_column(self):
        """The rows as a StoreColumn (of one chunk), for rounds run under a tape or in a graph."""
        column = StoreColumn()
        if self.size:
            column.append(self.batch())
        return column


def _readonly_view(array):
    view = array.view()
    view.flags.writeable = False
    return view
