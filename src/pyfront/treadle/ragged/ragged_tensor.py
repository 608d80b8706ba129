"""td.RaggedTensor: rows of different lengths, as TensorFlow's RaggedTensor.
A ragged tensor of shape [nrows, None, *inner] is `values` (all rows'
entries, [nvalues, *inner]) and `row_splits` (row i is
values[row_splits[i]:row_splits[i+1]]). `values` is a Tensor, or itself a
RaggedTensor for more than one ragged dimension (ragged_rank > 1): the
innermost Tensor is `flat_values`, the splits on the way `nested_row_splits`.
Everything it does is ordinary ops on those tensors, so it works eagerly and
inside td.function, and gradients flow to the flat values."""

import numpy as np

from treadle.framework import dtypes
from treadle.framework.op_execution import execute
from treadle.framework.tensor import EagerTensor, Tensor, convert_to_tensor
from treadle.framework.tensor_shape import TensorShape
from treadle.framework.tensor_spec import TensorSpec
from treadle.framework.type_spec import TypeSpec
from treadle.function.trace_type import TraceType
from treadle.ops import debugging_ops, math_ops

_SPLIT_DTYPES = (dtypes.int32, dtypes.int64)


def _run1(op_name, inputs, attrs=None):
    return execute(op_name, inputs, attrs)[0]


def _index(value, what, dtype=None):
    t = value if isinstance(value, Tensor) else convert_to_tensor(value, dtype=dtype or dtypes.int64)
    if t.dtype not in _SPLIT_DTYPES:
        raise TypeError(f"td.RaggedTensor: {what} must be int32 or int64, got {t.dtype.name}")
    if t.shape.rank is not None and t.shape.rank != 1:
        raise ValueError(f"td.RaggedTensor: {what} must be a vector, got shape {t.shape}")
    return t


def _scalar(value, dtype):
    return convert_to_tensor(value, dtype=dtype)


def _check_splits(splits, nvalues):
    """Eager validation (TensorFlow validates with assertions): starts at 0,
    never decreases, ends at the number of values."""
    s = splits.numpy()
    if s.size == 0:
        raise ValueError("td.RaggedTensor: row_splits must have at least one entry (0)")
    if s[0] != 0:
        raise ValueError(f"td.RaggedTensor: row_splits must start with 0, got {s[0]}")
    if np.any(np.diff(s) < 0):
        i = int(np.argmax(np.diff(s) < 0))
        raise ValueError(f"td.RaggedTensor: row_splits must not decrease, got {s[i]} then {s[i + 1]}")
    if nvalues is not None and s[-1] != nvalues:
        raise ValueError(f"td.RaggedTensor: row_splits ends at {s[-1]} but there are {nvalues} values")


def _graph_check(condition, message):
    """A run-time assertion while tracing (TensorFlow's validate=True inside a
    tf.function): the Assert op raises InvalidArgumentError with `message`
    when the function runs (it is stateful, so it always runs)."""
    debugging_ops.Assert(condition, [f"td.RaggedTensor: {message}"])


def _all(op_name, x, y):
    return math_ops.reduce_all(_run1(op_name, [x, y]))


def _graph_check_splits(splits, values):
    """_check_splits' rules as assertions, for symbolic row_splits."""
    size = _run1("Size", [splits], {"out_type": splits.dtype})
    _graph_check(_run1("GreaterEqual", [size, _scalar(1, splits.dtype)]),
                 "row_splits must have at least one entry (0)")
    _graph_check(_all("Equal", _slice(splits, 0, 1), _scalar(0, splits.dtype)), "row_splits must start with 0")
    _graph_check(_all("GreaterEqual", _slice(splits, 1, None), _slice(splits, 0, -1)),
                 "row_splits must not decrease")
    if isinstance(values, RaggedTensor):
        nvalues = _run1("Reshape", [values.nrows(out_type=splits.dtype), convert_to_tensor([1], dtypes.int32)])
    else:
        nvalues = _run1("Shape", [values], {"out_type": splits.dtype})
    _graph_check(_all("Equal", _slice(splits, -1, None), _slice(nvalues, 0, 1)),
                 "row_splits must end at the number of values")


def _graph_check_rowids(rowids, nrows):
    _graph_check(_all("GreaterEqual", rowids, _scalar(0, rowids.dtype)), "value_rowids must be non-negative")
    _graph_check(_all("GreaterEqual", _slice(rowids, 1, None), _slice(rowids, 0, -1)),
                 "value_rowids must be sorted")
    if nrows is not None:
        nrows = _run1("Cast", [convert_to_tensor(nrows)], {"DstT": rowids.dtype})
        _graph_check(_all("Less", rowids, nrows), "value_rowids must be less than nrows")


def _symbolic(t):
    return isinstance(t, Tensor) and type(t) is not EagerTensor


class RaggedTensor:
    """Made by `from_row_splits`, `from_row_lengths` or `from_value_rowids`
    (as in TensorFlow, not by calling the class)."""

    __slots__ = ("_values", "_row_splits", "_value_rowids", "_row_lengths")
    _td_extension_type = True  # a td.function returns it as its components, rebuilt by the caller

    def __init__(self, values, row_splits, value_rowids=None, row_lengths=None, internal=False):
        if not internal:
            raise ValueError("td.RaggedTensor is made by RaggedTensor.from_row_splits, from_row_lengths or "
                             "from_value_rowids")
        self._values = values
        self._row_splits = row_splits
        self._value_rowids = value_rowids
        self._row_lengths = row_lengths

    # ------------------------------------------------------------ construction
    @classmethod
    def from_row_splits(cls, values, row_splits, name=None, validate=True):
        """Row i is values[row_splits[i]:row_splits[i + 1]]."""
        values = _as_values(values)
        splits = _index(row_splits, "row_splits")
        if validate and type(splits) is EagerTensor:
            _check_splits(splits, _nvalues(values))
        elif validate:
            _graph_check_splits(splits, values)
        return cls(values, splits, internal=True)

    @classmethod
    def from_nested_row_splits(cls, flat_values, nested_row_splits, name=None, validate=True):
        """A RaggedTensor with one ragged dimension per entry of
        `nested_row_splits` (outermost first) over `flat_values`."""
        return cls._nested(flat_values, nested_row_splits, "nested_row_splits", "row-splits",
                           lambda values, splits: cls.from_row_splits(values, splits, validate=validate))

    @classmethod
    def from_nested_row_lengths(cls, flat_values, nested_row_lengths, name=None, validate=True):
        """As from_nested_row_splits, from each ragged dimension's row lengths."""
        return cls._nested(flat_values, nested_row_lengths, "nested_row_lengths", "row-lengths",
                           lambda values, lengths: cls.from_row_lengths(values, lengths, validate=validate))

    @classmethod
    def _nested(cls, flat_values, partitions, argument, what, one_level):
        """flat_values partitioned by each of `partitions`, innermost (last) first."""
        if isinstance(partitions, Tensor) or not partitions:
            raise ValueError(f"td.RaggedTensor.from_{argument}: {argument} must be a non-empty list of {what} "
                             "vectors")
        result = flat_values
        for partition in reversed(list(partitions)):
            result = one_level(result, partition)
        return result

    @classmethod
    def from_row_lengths(cls, values, row_lengths, name=None, validate=True):
        """Row i has row_lengths[i] values, in order."""
        values = _as_values(values)
        lengths = _index(row_lengths, "row_lengths")
        if validate and type(lengths) is EagerTensor and np.any(lengths.numpy() < 0):
            raise ValueError("td.RaggedTensor: row_lengths must be non-negative")
        if validate and _symbolic(lengths):
            _graph_check(_all("GreaterEqual", lengths, _scalar(0, lengths.dtype)), "row_lengths must be non-negative")
        zero = convert_to_tensor([0], dtype=lengths.dtype)
        splits = _run1("ConcatV2", [zero, math_ops_cumsum(lengths), _scalar(0, dtypes.int32)])
        if validate and type(splits) is EagerTensor:
            _check_splits(splits, _nvalues(values))
        elif validate:
            _graph_check_splits(splits, values)
        return cls(values, splits, row_lengths=lengths, internal=True)

    @classmethod
    def from_value_rowids(cls, values, value_rowids, nrows=None, name=None, validate=True):
        """Value j belongs to row value_rowids[j] (sorted); `nrows` defaults to
        the last row id + 1."""
        values = _as_values(values)
        rowids = _index(value_rowids, "value_rowids")
        if validate and type(rowids) is EagerTensor:
            r = rowids.numpy()
            if np.any(r < 0) or np.any(np.diff(r) < 0):
                raise ValueError("td.RaggedTensor: value_rowids must be sorted and non-negative")
            n_given = None if nrows is None or isinstance(nrows, Tensor) else int(nrows)
            if n_given is not None and r.size and r[-1] >= n_given:
                raise ValueError(f"td.RaggedTensor: value_rowids has row {r[-1]} but nrows is {n_given}")
        elif validate:
            _graph_check_rowids(rowids, nrows)
        if nrows is None:
            # The last row id + 1; the max of no ids is the lowest int, so 0 rows.
            last = _run1("Max", [rowids, convert_to_tensor([0], dtype=dtypes.int32)], {"keep_dims": False})
            nrows = _run1("Maximum", [_run1("AddV2", [last, _scalar(1, rowids.dtype)]), _scalar(0, rowids.dtype)])
        nrows = nrows if isinstance(nrows, Tensor) else _scalar(int(nrows), rowids.dtype)
        nrows = _run1("Cast", [nrows], {"DstT": rowids.dtype})
        lengths = _run1("UnsortedSegmentSum", [_run1("OnesLike", [rowids]), rowids, nrows])
        zero = convert_to_tensor([0], dtype=rowids.dtype)
        splits = _run1("ConcatV2", [zero, math_ops_cumsum(lengths), _scalar(0, dtypes.int32)])
        if validate and type(splits) is EagerTensor:
            _check_splits(splits, _nvalues(values))
        elif validate:
            _graph_check_splits(splits, values)
        return cls(values, splits, value_rowids=rowids, row_lengths=lengths, internal=True)

    # ------------------------------------------------------------ composite protocol
    # Graph conds and loops carry a RaggedTensor as its flat values and its
    # nested row splits.
    def _to_components(self):
        return [self.flat_values, *self.nested_row_splits]

    def _from_components(self, parts):
        return _from_nested(parts[0], parts[1:])

    def _component_invariants(self, shape=None):
        """A loop may change the number of rows and values; the flat values'
        inner dimensions stay."""
        inner = self.flat_values.shape
        values = TensorShape(None) if inner.rank is None else TensorShape([None]).concatenate(inner[1:])
        return [values] + [TensorShape([None])] * self.ragged_rank

    def __tf_tracing_type__(self, context):
        # As a td.function argument: one trace per spec (dtype, ragged rank,
        # flat values' inner shape), fed as its components, not per object.
        return RaggedTensorType.of(self)

    # ------------------------------------------------------------ TensorFlow's accessors
    @property
    def values(self):
        return self._values

    @property
    def flat_values(self):
        """The innermost values, a Tensor (values itself when ragged_rank is 1)."""
        values = self._values
        while isinstance(values, RaggedTensor):
            values = values._values
        return values

    @property
    def nested_row_splits(self):
        """The row splits of each ragged dimension, outermost first."""
        splits = [self._row_splits]
        values = self._values
        while isinstance(values, RaggedTensor):
            splits.append(values._row_splits)
            values = values._values
        return tuple(splits)

    @property
    def row_splits(self):
        return self._row_splits

    @property
    def dtype(self):
        return self._values.dtype

    @property
    def ragged_rank(self):
        return 1 + self._values.ragged_rank if isinstance(self._values, RaggedTensor) else 1

    @property
    def shape(self):
        """[nrows, None, *values.shape[1:]] (nrows None when not known yet)."""
        n = self._row_splits.shape[0]
        nrows = None if n is None else n - 1
        return TensorShape([nrows, None]).concatenate(self._values.shape[1:])

    def row_lengths(self, axis=1, name=None):
        if axis != 1:
            raise ValueError(f"td.RaggedTensor.row_lengths: axis must be 1 (the ragged axis), got {axis}")
        if self._row_lengths is None:
            s = self._row_splits
            self._row_lengths = _run1("Sub", [_slice(s, 1, None), _slice(s, 0, -1)])
        return self._row_lengths

    def value_rowids(self, name=None):
        """The row of each value: row i repeated row_lengths()[i] times."""
        if self._value_rowids is None:
            dt = self._row_splits.dtype
            rows = _run1("Range", [_scalar(0, dt), self.nrows(), _scalar(1, dt)])
            self._value_rowids = _run1("Repeat", [rows, self.row_lengths()], {"axis": 0})
        return self._value_rowids

    def nrows(self, out_type=None, name=None):
        s = self._row_splits
        n = s.shape[0]
        if n is not None:
            result = _scalar(n - 1, s.dtype)
        else:
            result = _run1("Sub", [_run1("Size", [s], {"out_type": s.dtype}), _scalar(1, s.dtype)])
        return result if out_type is None else _run1("Cast", [result], {"DstT": dtypes.as_dtype(out_type)})

    def row_starts(self, name=None):
        return _slice(self._row_splits, 0, -1)

    def row_limits(self, name=None):
        return _slice(self._row_splits, 1, None)

    def __getitem__(self, key):
        """rt[i]: row i (a Tensor; a RaggedTensor when ragged_rank > 1), as
        TensorFlow's; i is an int (negative counts from the end) or an integer
        scalar tensor. rt[a:b]: rows a to b, a RaggedTensor."""
        if isinstance(key, slice):
            return self._row_slice(key)
        if isinstance(key, (bool, np.bool_)) or not isinstance(key, (int, np.integer, Tensor)):
            raise TypeError(f"td.RaggedTensor indices must be an int, a slice or an integer scalar tensor (a row), "
                            f"got {key!r}")
        splits = self._row_splits
        if isinstance(key, Tensor):
            i = _run1("Cast", [key], {"DstT": splits.dtype})
        else:
            n = splits.shape[0]
            i = int(key)
            if n is not None and not -(n - 1) <= i < n - 1:
                raise IndexError(f"td.RaggedTensor: row {i} is out of range for {n - 1} rows")
            if i < 0:
                i = _run1("AddV2", [self.nrows(), _scalar(i, splits.dtype)]) if n is None else i + n - 1
            if not isinstance(i, Tensor):
                i = _scalar(i, splits.dtype)
        start = _gather(splits, i)
        limit = _gather(splits, _run1("AddV2", [i, _scalar(1, splits.dtype)]))
        return _rows_of(self._values, start, limit)

    def _row_slice(self, key):
        n = self._row_splits.shape[0]
        if key.step is not None and not (isinstance(key.step, (int, np.integer)) and key.step == 1):
            if n is None or not all(b is None or isinstance(b, (int, np.integer)) for b in (key.start, key.stop,
                                                                                           key.step)):
                raise ValueError(f"td.RaggedTensor: rows are sliced with a step other than 1 only when the number "
                                 f"of rows is known and the bounds are ints, got {key!r}")
            rows = list(range(n - 1))[key]  # Python's rules for the bounds and the step
            return _gather_rows(self, convert_to_tensor(np.asarray(rows, np.int64), dtype=self._row_splits.dtype))
        if n is not None and not any(isinstance(b, Tensor) for b in (key.start, key.stop)):
            start, stop, _ = key.indices(n - 1)
            start, stop = _scalar(start, self._row_splits.dtype), _scalar(max(stop, start), self._row_splits.dtype)
        else:
            start = self._slice_bound(key.start, 0)
            stop = _run1("Maximum", [self._slice_bound(key.stop, None), start])
        return self._rows_between(start, stop)

    def _slice_bound(self, bound, default):
        """A slice bound as a row number in [0, nrows] (Python's rules for
        negative and out-of-range bounds), a scalar tensor."""
        dt = self._row_splits.dtype
        n = self.nrows()
        if bound is None:
            return _scalar(default, dt) if default is not None else n
        b = _run1("Cast", [bound], {"DstT": dt}) if isinstance(bound, Tensor) else _scalar(int(bound), dt)
        from_end = _run1("AddV2", [b, n])
        b = _run1("SelectV2", [_run1("Less", [b, _scalar(0, dt)]), from_end, b])
        return _run1("Minimum", [_run1("Maximum", [b, _scalar(0, dt)]), n])

    def _rows_between(self, start, limit):
        """Rows start to limit (scalar tensors, 0 <= start <= limit <= nrows)."""
        splits = self._row_splits
        one = _scalar(1, splits.dtype)
        kept = splits[start:_run1("AddV2", [limit, one])]
        new_splits = _run1("Sub", [kept, _gather(kept, _scalar(0, splits.dtype))])
        values = _rows_of(self._values, _gather(splits, start), _gather(splits, limit))
        return RaggedTensor(values, new_splits, internal=True)

    def __iter__(self):
        """The rows, as Tensors (eagerly; a td.function loops over the rows
        of a RaggedTensor as a graph loop)."""
        if type(self._row_splits) is not EagerTensor:
            raise TypeError("iterating over a symbolic td.RaggedTensor in Python is not supported: use a for loop "
                            "inside a td.function (AutoGraph makes it a graph loop) or td.map_fn")
        return (self[i] for i in range(self._row_splits.shape[0] - 1))

    def with_values(self, new_values):
        """The same rows holding `new_values` (one per value)."""
        return RaggedTensor(_as_values(new_values), self._row_splits, self._value_rowids, self._row_lengths,
                            internal=True)

    def with_flat_values(self, new_values):
        """The same nested rows holding `new_values` (one per flat value)."""
        if isinstance(self._values, RaggedTensor):
            return self.with_values(self._values.with_flat_values(new_values))
        return self.with_values(new_values)

    def to_list(self):
        """The rows as nested Python lists (as TensorFlow's)."""
        if isinstance(self._values, RaggedTensor):
            values = self._values.to_list()
        else:
            values = self._values.numpy().tolist()
        s = self._row_splits.numpy()
        return [values[s[i]:s[i + 1]] for i in range(len(s) - 1)]

    def numpy(self):
        """An object array of the rows (as TensorFlow's eager RaggedTensor.numpy())."""
        values = self._values.numpy()
        s = self._row_splits.numpy()
        out = np.empty(len(s) - 1, dtype=object)
        for i in range(len(s) - 1):
            out[i] = values[s[i]:s[i + 1]]
        return out

    def to_tensor(self, default_value=None, name=None):
        """A dense [nrows, longest row, *inner] tensor, padded with default_value (0)."""
        # Inner ragged dimensions are padded first; this one then pads its rows
        # of those dense values.
        values = self._values
        if isinstance(values, RaggedTensor):
            values = values.to_tensor(default_value)
        lengths = self.row_lengths()
        width = _run1("Max", [lengths, convert_to_tensor([0], dtype=dtypes.int32)], {"keep_dims": False}) \
            if lengths.shape[0] != 0 else _scalar(0, lengths.dtype)
        width = _run1("Maximum", [width, _scalar(0, lengths.dtype)])
        rowids = self.value_rowids()
        cols = _run1("Sub", [_run1("Range", [_scalar(0, rowids.dtype), _run1("Size", [rowids], {"out_type": rowids.dtype}),
                                             _scalar(1, rowids.dtype)]),
                             _run1("GatherV2", [self._row_splits, rowids, _scalar(0, dtypes.int32)])])
        flat = _run1("AddV2", [_run1("Mul", [rowids, width]), cols])
        inner = _run1("Shape", [values], {"out_type": rowids.dtype})
        inner = _slice(inner, 1, None)
        rows = _run1("Mul", [self.nrows(), width])
        dense = _run1("UnsortedSegmentSum", [values, flat, rows])
        if default_value is not None:
            mask = _run1("UnsortedSegmentSum", [_run1("OnesLike", [flat]), flat, rows])
            mask = _run1("Reshape", [_run1("Cast", [mask], {"DstT": dtypes.bool}),
                                     _run1("ConcatV2", [_run1("Reshape", [rows, convert_to_tensor([1], dtypes.int32)]),
                                                        _run1("OnesLike", [inner]), _scalar(0, dtypes.int32)])])
            dense = _run1("SelectV2", [mask, dense, convert_to_tensor(default_value, dtype=self.dtype)])
        shape = _run1("ConcatV2", [_run1("Reshape", [self.nrows(), convert_to_tensor([1], dtypes.int32)]),
                                   _run1("Reshape", [width, convert_to_tensor([1], dtypes.int32)]), inner,
                                   _scalar(0, dtypes.int32)])
        return _run1("Reshape", [dense, shape])

    def __repr__(self):
        if all(type(t) is EagerTensor for t in self._to_components()):
            return f"<td.RaggedTensor {self.to_list()}>"
        return f"td.RaggedTensor(values={self._values!r}, row_splits={self._row_splits!r})"


def _as_values(values):
    if isinstance(values, RaggedTensor):  # one more ragged dimension
        return values
    v = convert_to_tensor(values)
    if v.shape.rank == 0:
        raise ValueError("td.RaggedTensor: values must have rank >= 1")
    return v


def _from_nested(flat_values, nested_splits):
    """A RaggedTensor from its components, with no checks (they were made by one)."""
    result = flat_values
    for splits in reversed(list(nested_splits)):
        result = RaggedTensor(result, splits, internal=True)
    return result


def _gather(vector, i):
    return _run1("GatherV2", [vector, i, _scalar(0, dtypes.int32)])


def _rows_of(values, start, limit):
    """values[start:limit] along the first dimension (rows, for a ragged `values`)."""
    if isinstance(values, RaggedTensor):
        return values._rows_between(start, limit)
    return values[start:limit]


def _gather_rows(values, ids):
    """The rows `ids` (a vector of row numbers, any order) of `values`: a
    Tensor's slices, or a RaggedTensor's rows with their own nested rows."""
    if not isinstance(values, RaggedTensor):
        return _gather(values, ids)
    splits = values.row_splits
    starts = _gather(splits, ids)
    lengths = _run1("Sub", [_gather(splits, _run1("AddV2", [ids, _scalar(1, ids.dtype)])), starts])
    new_splits = _run1("ConcatV2", [convert_to_tensor([0], dtype=splits.dtype), math_ops_cumsum(lengths),
                                    _scalar(0, dtypes.int32)])
    # Value k of the result is value offset_k of its row: the row's start
    # plus k less the row's first position in the result.
    nrows = _run1("Size", [ids], {"out_type": splits.dtype})
    rowids = _run1("Repeat", [_run1("Range", [_scalar(0, splits.dtype), nrows, _scalar(1, splits.dtype)]), lengths],
                   {"axis": 0})
    total = _gather(new_splits, nrows)
    positions = _run1("Range", [_scalar(0, splits.dtype), total, _scalar(1, splits.dtype)])
    inner = _run1("AddV2", [_gather(starts, rowids), _run1("Sub", [positions, _gather(new_splits, rowids)])])
    return RaggedTensor(_gather_rows(values.values, inner), new_splits, internal=True)


def _nvalues(values):
    """The number of values (rows of a ragged `values`) when known while tracing."""
    if isinstance(values, RaggedTensor):
        n = values.row_splits.shape[0]
        return None if n is None else n - 1
    return values.shape[0] if values.shape.rank is not None else None


def _slice(t, begin, end):
    """t[begin:end] of a vector (end None: to the end; negative: from the end)."""
    b = convert_to_tensor([begin], dtype=dtypes.int32)
    e = convert_to_tensor([0 if end is None else end], dtype=dtypes.int32)
    return _run1("StridedSlice", [t, b, e, convert_to_tensor([1], dtype=dtypes.int32)],
                 {"end_mask": 1 if end is None else 0})


def math_ops_cumsum(x):
    return _run1("Cumsum", [x, _scalar(0, dtypes.int32)])


# ---------------------------------------------------------------- reductions

def _reduce(public_name, rt, axis, keepdims):
    """td.reduce_sum/mean/max/min/... of a RaggedTensor. axis=1 reduces each
    row (a segment reduction of the values by row); None reduces everything;
    axes past 1 reduce inside the values and keep the rows ragged."""
    fn = getattr(math_ops, public_name)
    if axis is None:
        return fn(rt.flat_values, None, keepdims)
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"td.{public_name} of a td.RaggedTensor: axis must be an int or None, got {axis!r}")
    rank = rt.values.shape.rank
    ndims = None if rank is None else rank + 1
    axis = int(axis)
    if axis < 0:
        if ndims is None:
            raise ValueError(f"td.{public_name} of a td.RaggedTensor: a negative axis needs a known rank")
        axis += ndims
    if axis >= 2:
        return rt.with_values(fn(rt.values, axis - 1, keepdims))
    if axis == 1 and rt.ragged_rank > 1 and not keepdims and public_name in _ROW_REDUCTIONS:
        return _reduce_rows_of_rows(public_name, rt)
    if axis != 1 or keepdims:
        raise ValueError(f"td.{public_name} of a td.RaggedTensor reduces axis 1 (each row), None, or axes of the "
                         f"values; got axis={axis}{' with keepdims' if keepdims else ''}")
    kind = _ROW_REDUCTIONS.get(public_name)
    if kind is None:
        raise ValueError(f"td.{public_name} does not reduce the rows of a td.RaggedTensor (reduce_sum, reduce_mean "
                         "and reduce_max do)")
    return kind(rt)


def _rows_sum(rt):
    # Rows are contiguous runs of values: summed by their splits, with no row
    # ids to make, and a gradient with no mask of dropped ids.
    return _run1("RaggedRowSum", [rt.values, rt.row_splits])


def _rows_max(rt):
    ids = rt.value_rowids()
    return _run1("UnsortedSegmentMax", [rt.values, ids, rt.nrows()])


def _rows_mean(rt):
    # As TensorFlow: the sum over the row count, so an empty row's mean is nan.
    total = _rows_sum(rt)
    count = _run1("Cast", [rt.row_lengths()], {"DstT": total.dtype})
    rank = rt.values.shape.rank
    if rank is None:
        raise ValueError("td.reduce_mean of a td.RaggedTensor needs the values' rank to be known")
    count = _run1("Reshape", [count, convert_to_tensor([-1] + [1] * (rank - 1), dtype=dtypes.int32)])
    return _run1("RealDiv", [total, count])


def _reduce_rows_of_rows(public_name, rt):
    """Axis 1 of a [rows, (inner rows), (values), ...] tensor, as TensorFlow:
    the inner rows of each row reduced position by position (row i of the
    result is as long as its longest inner row)."""
    inner = rt.values
    if isinstance(inner.values, RaggedTensor):
        raise NotImplementedError(f"td.{public_name} of a td.RaggedTensor with ragged_rank {rt.ragged_rank}: axis 1 "
                                  "is reduced for ragged_rank 2; reduce the inner axes first, or axis=None")
    dt = rt.row_splits.dtype
    row_of_inner = rt.value_rowids()
    widths = _run1("UnsortedSegmentMax", [inner.row_lengths(), row_of_inner, rt.nrows()])
    widths = _run1("Maximum", [widths, _scalar(0, dt)])  # an empty row's max is the lowest int
    splits = _run1("ConcatV2", [convert_to_tensor([0], dtype=dt), math_ops_cumsum(widths), _scalar(0, dtypes.int32)])
    inner_of_value = inner.value_rowids()
    nvalues = _run1("Size", [inner_of_value], {"out_type": dt})
    position = _run1("Sub", [_run1("Range", [_scalar(0, dt), nvalues, _scalar(1, dt)]),
                             _gather(inner.row_splits, inner_of_value)])
    segment = _run1("AddV2", [_gather(splits, _gather(row_of_inner, inner_of_value)), position])
    total = _gather(splits, rt.nrows())
    values = inner.values
    if public_name == "reduce_max":
        return RaggedTensor(_run1("UnsortedSegmentMax", [values, segment, total]), splits, internal=True)
    summed = _run1("UnsortedSegmentSum", [values, segment, total])
    if public_name == "reduce_sum":
        return RaggedTensor(summed, splits, internal=True)
    count = _run1("Cast", [_run1("UnsortedSegmentSum", [_run1("OnesLike", [segment]), segment, total])],
                  {"DstT": summed.dtype})
    shape = convert_to_tensor([-1] + [1] * (values.shape.rank - 1), dtype=dtypes.int32)
    return RaggedTensor(_run1("RealDiv", [summed, _run1("Reshape", [count, shape])]), splits, internal=True)


_ROW_REDUCTIONS = {"reduce_sum": _rows_sum, "reduce_max": _rows_max, "reduce_mean": _rows_mean}
math_ops.REDUCTION_DISPATCH[RaggedTensor] = _reduce


# The TraceType lives with its class (as TensorFlow's RaggedTensorSpec does).
# The TraceType of a td.RaggedTensor argument of a td.function: its dtype, its
# ragged rank, the row-splits dtype and the shape of its flat values with the
# number of values left unknown; the number of rows is kept where known (as
# TensorFlow's RaggedTensorSpec keeps shape[0]), so another number of rows
# traces again unless reduce_retracing relaxes it. Every ragged tensor of that spec shares one trace; it reaches the
# traced function as its components (flat values, then row splits), from which
# the function's placeholder RaggedTensor is rebuilt.
class RaggedTensorType(TypeSpec, TraceType):
    """`RaggedTensorType(dtype, flat_values_shape, row_splits_dtype,
    ragged_rank)`. Dimension 0 of the flat values is always unknown; the
    inner dimensions are as given (None for any). As a TypeSpec (what
    td.RaggedTensorSpec makes) it may stand in an input_signature and be
    given to get_concrete_function."""

    __slots__ = ("dtype", "flat_values_shape", "row_splits_dtype", "ragged_rank", "nrows")

    def __init__(self, dtype, flat_values_shape, row_splits_dtype=dtypes.int64, ragged_rank=1, nrows=None):
        self.dtype = dtypes.as_dtype(dtype)
        self.nrows = nrows  # the number of rows (TensorFlow's shape[0]), None for any
        shape = TensorShape(flat_values_shape)
        if shape.rank is None or shape.rank < 1:
            raise ValueError(f"RaggedTensorType: flat values need a known rank >= 1, got {shape}")
        if ragged_rank < 1:
            raise ValueError(f"RaggedTensorType: ragged_rank must be at least 1, got {ragged_rank}")
        self.flat_values_shape = TensorShape([None] + shape.as_list()[1:])
        self.row_splits_dtype = dtypes.as_dtype(row_splits_dtype)
        self.ragged_rank = ragged_rank

    @classmethod
    def of(cls, rt):
        n = rt.row_splits.shape[0]
        return cls(rt.flat_values.dtype, rt.flat_values.shape, rt.row_splits.dtype, rt.ragged_rank,
                   None if n is None else n - 1)

    def _same_kind(self, other):
        return (type(other) is RaggedTensorType and other.dtype == self.dtype
                and other.row_splits_dtype == self.row_splits_dtype and other.ragged_rank == self.ragged_rank
                and other.flat_values_shape.rank == self.flat_values_shape.rank)

    def is_subtype_of(self, other):
        return (self._same_kind(other) and self.flat_values_shape.is_subtype_of(other.flat_values_shape)
                and other.nrows in (None, self.nrows))

    def most_specific_common_supertype(self, others):
        shape, nrows = self.flat_values_shape, self.nrows
        for o in others:
            if not self._same_kind(o):
                return None
            shape = shape.most_specific_compatible_shape(o.flat_values_shape)
            nrows = nrows if o.nrows == nrows else None
        return RaggedTensorType(self.dtype, shape, self.row_splits_dtype, self.ragged_rank, nrows)

    def placeholder_value(self, placeholder_context=None):
        graph, name = placeholder_context.graph, placeholder_context.name
        values = graph.add_placeholder(self.dtype, self.flat_values_shape, f"{name}_flat_values")
        suffixes = ["" if self.ragged_rank == 1 else f"_{k}" for k in range(self.ragged_rank)]
        splits = [graph.add_placeholder(self.row_splits_dtype, TensorShape([self._outer_splits() if i == 0 else None]),
                                        f"{name}_row_splits{k}") for i, k in enumerate(suffixes)]
        return _from_nested(values, splits)

    @property
    def value_type(self):
        return RaggedTensor

    def _component_specs(self):
        splits = [TensorSpec([self._outer_splits() if i == 0 else None], self.row_splits_dtype)
                  for i in range(self.ragged_rank)]
        return [TensorSpec(self.flat_values_shape, self.dtype), *splits]

    def to_tensors(self, value):
        if isinstance(value, RaggedTensorType):  # get_concrete_function(spec): the components' specs
            return value._component_specs()
        return [value.flat_values, *value.nested_row_splits]

    def cast(self, value, casting_context=None):
        if isinstance(value, RaggedTensorType):  # get_concrete_function(spec)
            if not value.is_subtype_of(self):
                raise ValueError(f"Can not cast {value!r} to {self!r}")
            return value
        if not isinstance(value, RaggedTensor) or not RaggedTensorType.of(value).is_subtype_of(self):
            raise ValueError(f"Can not cast {value!r} to {self!r}{self._misfit(value)}")
        return value

    def _misfit(self, value):
        """Which component of a ragged `value` does not fit, as TensorFlow's
        message names it: the flat values' or row splits' spec."""
        if not isinstance(value, RaggedTensor) or value.ragged_rank != self.ragged_rank:
            return ""
        for component, spec in zip(self.to_tensors(value), self._component_specs()):
            given = TensorSpec(component.shape, component.dtype)
            if not given.is_subtype_of(spec):
                return f": Can not cast {given!r} to {spec!r}"
        return ""

    def _outer_splits(self):
        return None if self.nrows is None else self.nrows + 1

    def __eq__(self, other):
        return (self._same_kind(other) and other.flat_values_shape == self.flat_values_shape
                and other.nrows == self.nrows)

    def __hash__(self):
        return hash((RaggedTensorType, self.dtype, self.flat_values_shape, self.row_splits_dtype, self.ragged_rank,
                     self.nrows))

    def __repr__(self):
        rows = "" if self.nrows is None else f"nrows={self.nrows}, "
        return (f"RaggedTensor[{self.dtype.name}, {rows}ragged_rank={self.ragged_rank}, flat_values_shape="
                f"{self.flat_values_shape}, row_splits_dtype={self.row_splits_dtype.name}]")
