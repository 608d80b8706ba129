"""td.loom.Weaver: builds a schedule for a Loom. A thin layer over the C++
Weaver: results are plain ints, and `weaver.<op_name>` is a C++ builtin."""

import numpy as np

from treadle import _core
from treadle.loom.schedule_type import ScheduleType
from treadle.loom.type_shape import TypeShape


class Weaver(_core.LoomWeaver):
    """Made by `loom.make_weaver()`. Results are ints naming values:

    - `weaver.<tensor_name>` / `weaver.named_tensor(name)`: a named tensor;
    - `weaver(value, tag='')` / `weaver.constant(value, tag='')`: a constant;
    - `weaver.batch_input(type_shape, batch_idx)`: row `batch_idx` of the batch input
      (a C++ builtin set per weaver);
    - `weaver.<op_name>(*args)` / `weaver.op(op_name, args)`: an op call
      (the former returns the single result of a one-output op);
    - `weaver.add_output(result)` marks a result as an output of the loom.
    """

    def __init__(self, loom):
        super().__init__(loom._spec)
        self._loom = loom
        ragged = {op.name: list(op.ragged_inputs) for op in loom._metadata.ops}  # also for weaving-only looms
        for index, name in loom._weaver_op_names:
            caller = self._op_caller(index)
            setattr(self, name, _accepting_arrays(caller, ragged[name]) if ragged.get(name) else caller)
        # batch_input(type_shape, batch_idx), a C++ builtin: a call costs about what an op call does. It
        # refuses a row beyond a batch input's rows when woven, so the weaver never holds it.
        self.batch_input = self._batch_input_caller(
            {ts: loom._ts_index[ts] for ts in loom._batch_input_order},
            {loom._ts_index[ts]: n for ts, n in _row_counts(loom).items()})

    num_results = property(_core.LoomWeaver.num_results.fget,
                           doc="The number of results made so far (constants, batch-input rows, op outputs).")

    def __getattr__(self, name):
        # Only reached when normal lookup fails: named tensors, made on first use.
        loom = self.__dict__.get("_loom")
        index = loom._named_tensor_indices.get(name) if loom is not None else None
        if index is None:
            raise AttributeError(f"'Weaver' object has no attribute '{name}'")
        return self._named_tensor(index)

    @property
    def loom(self):
        """The Loom this weaver belongs to."""
        return self._loom

    def __tf_tracing_type__(self, context):
        # As a td.function argument: any schedule of this loom, fed as a string tensor.
        return ScheduleType(self._loom.fingerprint)

    def _loom_schedule(self):
        """(loom fingerprint, a function giving the serialized message), for ScheduleType."""
        return self._loom.fingerprint, self.serialize

    def op(self, op_name, args):
        """Calls op `op_name` on `args` (results); returns the list of its results."""
        return self._call(self._loom._op_index(op_name), [_as_results(a) for a in args])

    def named_tensor(self, name):
        """A result holding the loom's named tensor `name` (also `weaver.NAME`)."""
        return self._named_tensor(self._loom._named_tensor_index(name))

    def constant(self, value, tag=""):
        """A result holding `value` (an array or Python value of one of the loom's type shapes)."""
        index, array = self._loom._constant_type_shape(value, tag)
        return self._constant(index, array)

    __call__ = constant

    def constants(self, values, type_shape):
        """Many constants of `type_shape` at once (`values` stacked on a leading
        dimension); returns the list of their results."""
        index = self._loom._type_shape_index(type_shape)
        values = np.ascontiguousarray(values, dtype=type_shape.dtype.as_numpy_dtype)
        if values.shape[1:] != type_shape.shape:
            raise ValueError(f"Weaver.constants: values of shape {values.shape} are not a batch of {type_shape}")
        n = values.shape[0]
        if n == 0:
            return []
        if values.dtype.kind == "V":  # ml_dtypes' bfloat16 has no buffer-protocol format; bytes are what count
            values = values.view(np.uint16)
        first = self._constants(index, values, n)
        return list(range(first, first + n))

    def calls(self, op_name, args):
        """Calls op `op_name` once per row of `args` (an int array of shape
        [calls, num_inputs]); returns an int32 array [calls, num_outputs]."""
        return self._calls(self._loom._op_index(op_name), np.asarray(args, dtype=np.int32))

    def get_type_shape(self, result):
        """The TypeShape of `result`."""
        return self._loom.type_shapes[self._type_shape_index(result)]

    # Where a bulk-woven argument comes from (Weaver.weave's arg_source).
    NODE, BATCH_INPUT, CONSTANT, NAMED_TENSOR = 0, 1, 2, 3

    def weave(self, ops, node_op, arg_splits, arg_input, arg_source, arg_value, arg_output=None, outputs=(),
              output_index=None):
        """Weaves a whole forest of n-ary trees, or any DAG, in one call, with no
        Python call per node.

        Nodes are numbered 0..N-1, arguments before the nodes using them; node i
        calls op `ops[node_op[i]]` (`ops`: op names). Its arguments are the
        entries arg_splits[i] .. arg_splits[i+1]-1 (compressed sparse rows), in
        the order of its op's inputs: entry e feeds input `arg_input[e]` (one
        entry per input, or any number, zero included, for a td.loom.Ragged
        input) with, by `arg_source[e]`:

        - `Weaver.NODE`: output `arg_output[e]` (default 0) of node `arg_value[e]`
          (a node read by several others is computed once);
        - `Weaver.BATCH_INPUT`: row `arg_value[e]` of the batch input of the input's type shape;
        - `Weaver.CONSTANT`: the integer `arg_value[e]`, a constant of the input's
          (int32 or int64 scalar) type shape;
        - `Weaver.NAMED_TENSOR`: named tensor `arg_value[e]` (an index into the sorted names).

        Output `output_index[k]` (default 0) of node `outputs[k]` is added as an
        output, in order. Everything is checked before anything is woven.
        Returns an int32 array with each node's first result."""
        indices = np.array([self._loom._op_index(op) for op in ops], dtype=np.int32)
        node_op = _int_array(node_op, "node_op", np.int64)
        if node_op.size and (node_op.min() < 0 or node_op.max() >= len(indices)):
            raise ValueError(f"Weaver.weave: node_op must index `ops` (of {len(indices)} ops)")
        arg_input = _int_array(arg_input, "arg_input", np.int32)
        outputs = _int_array(outputs, "outputs", np.int64).reshape(-1)
        arg_output = np.zeros(len(arg_input), np.int32) if arg_output is None else arg_output
        output_index = np.zeros(len(outputs), np.int32) if output_index is None else output_index
        return self._weave_graph(
            indices[node_op], _int_array(arg_splits, "arg_splits", np.int64), arg_input,
            _int_array(arg_source, "arg_source", np.int32), _int_array(arg_value, "arg_value", np.int64),
            _int_array(arg_output, "arg_output", np.int32), outputs,
            _int_array(output_index, "output_index", np.int32))

    def weave_trees(self, left, right, leaf_values, roots, leaf_op, node_op, leaf_input, root_outputs=None,
                    leaf_input_kind="batch_input"):
        """Weaves many binary trees in one call, with no Python call per node.

        Nodes of all trees are numbered 0..N-1, children before parents:
        `left[i]`/`right[i]` are the children of node i, -1 for a leaf;
        `leaf_values[i]` is leaf i's value (e.g. a token id). A leaf becomes
        `leaf_op(x)` where x is row leaf_values[i] of the batch input of type
        shape `leaf_input` (leaf_input_kind='batch_input') or an integer
        constant of it (leaf_input_kind='constant'); an inner node becomes
        `node_op(*left_results, *right_results)`. The results `root_outputs`
        (indices into the op's outputs; default all) of each node in `roots`
        are added as outputs, tree by tree. Returns an int32 array with each
        node's first result. (A special case of `weave`.)"""
        if leaf_input_kind not in ("batch_input", "constant"):
            raise ValueError(f"leaf_input_kind must be 'batch_input' or 'constant', got {leaf_input_kind!r}")
        ts_index = self._loom._type_shape_index(leaf_input)
        leaf_index = self._loom._op_index(leaf_op)
        if root_outputs is None:
            root_outputs = range(len(self._loom._op_output_type_shapes(leaf_index)))
        def ids(values, name):
            return _int_array(values, name, np.int64, "Weaver.weave_trees")
        return self._weave_trees(ids(left, "left"), ids(right, "right"), ids(leaf_values, "leaf_values"),
                                 np.atleast_1d(ids(roots, "roots")), leaf_index, self._loom._op_index(node_op),
                                 ts_index,
                                 leaf_input_kind == "batch_input", [int(j) for j in root_outputs])

    def __reduce__(self):
        """Pickles as its schedule and the loom's weaving-only description;
        unpickled, it is a weaver of that description holding the same results."""
        loom = self._loom if self._loom._dry_run else self._loom.weaving_loom()
        return (_weaver_from_message, (loom, self.serialize()))

    def __repr__(self):
        return f"<td.loom.Weaver: {self.num_results} results, depth {self.deepest}>"


def _weaver_from_message(loom, message):
    return loom.deserialize_weaver(message)


def _int_array(values, name, dtype, where="Weaver.weave"):
    """`values` as an array of `dtype` for a bulk weave, refused (ValueError,
    naming the array and the entry) when an entry is not an integer or does
    not fit: NumPy's casts, and the core's, would truncate floats and wrap
    wide integers around into another, valid-looking schedule."""
    array = np.asarray(values)
    if array.size == 0:
        return array.astype(dtype)
    if array.dtype.kind == "f" and np.all(np.isfinite(array)) and np.all(array == np.round(array)):
        array = array.astype(np.float64)  # whole numbers as floats (np.ones) are fine; range checked below
    elif array.dtype.kind not in "iu":
        raise ValueError(f"{where}: {name} must hold integers, got {array.dtype}"
                         + (" with a fraction, an inf or a NaN" if array.dtype.kind == "f" else ""))
    info = np.iinfo(dtype)
    if array.dtype.kind == "f":  # float(info.max) + 1 is exact (a power of two); info.max may not be
        out_of_range = (array >= float(info.max) + 1) | (array < info.min)
    else:
        out_of_range = array > info.max
        if array.dtype.kind == "i":
            out_of_range |= array < info.min
    bad = np.flatnonzero(out_of_range)
    if bad.size:
        raise ValueError(f"{where}: {name}[{bad[0]}] = {array.reshape(-1)[bad[0]]} does not fit in {info.dtype}")
    return array.astype(dtype)


def _as_results(arg):
    """A ragged argument given as a NumPy array of results (as weaver.calls
    returns them) becomes the list of ints the C++ weaver takes."""
    return arg.tolist() if isinstance(arg, np.ndarray) else arg


def _accepting_arrays(caller, ragged_positions):
    """`weaver.<op>` for an op with ragged inputs: NumPy arrays of results are
    accepted there. (Ops without ragged inputs keep the C++ builtin itself.)"""
    def call(*args):
        args = list(args)
        for i in ragged_positions:
            if i < len(args) and isinstance(args[i], np.ndarray):
                args[i] = args[i].tolist()
        return caller(*args)
    return call


def _row_counts(loom):
    """{TypeShape: rows} of the loom's batch inputs whose row count is known."""
    counts = {}
    for ts in loom._batch_input_order:
        shape = getattr(loom._batch_inputs.get(ts), "shape", None)
        if shape is not None and len(shape) > 0 and shape[0] is not None:
            counts[ts] = int(shape[0])
    return counts
