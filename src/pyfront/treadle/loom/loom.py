"""td.loom.Loom: dynamic batching of tree- and graph-shaped computations.

A loom holds named tensors, named ops (LoomOps) and batch inputs. A Weaver
made by `loom.make_weaver()` builds a schedule; `loom(schedule)` runs it in
C++ one depth at a time, each op once per depth on the batch of all its calls
there, and returns the outputs per type shape."""

import typing

import numpy as np

from treadle import _core, loom_pb2
from treadle.framework import context, dtypes
from treadle.framework.graph_serialization import library_functions, library_graph_def
from treadle.framework.op_execution import execute, op_handle
from treadle.framework.tensor import EagerTensor, Tensor, constant, convert_to_tensor
from treadle.framework.variables import Variable
from treadle.loom.fold_options import back_prop_from_fold_kwargs, not_recorded
from treadle.loom import foreign_schedules, gradients
from treadle.loom.library import add_to_current_graph, add_to_graph
from treadle.loom.loom_op import LoomOp, PassThroughLoomOp
from treadle.loom.tracing import trace_op
from treadle.loom.schedule import Schedule
from treadle.loom.type_shape import TypeShape, type_shape_of
from treadle.loom.weaver import Weaver

_RESERVED = None


def _reserved_names():
    global _RESERVED
    if _RESERVED is None:
        _RESERVED = {n for n in dir(Weaver)} | {"_loom"}
    return _RESERVED


def _as_value(value, what):
    """A Variable stays a variable (read at run time); anything else becomes an eager tensor."""
    if isinstance(value, Variable):
        return value
    with context.init_scope():
        t = convert_to_tensor(value)
    if type(t) is not EagerTensor:
        raise TypeError(f"{what} must be a value known when the loom is built (an eager tensor, array or "
                        f"td.Variable), got {t!r}")
    return t


class LoomInputs(typing.NamedTuple):
    """The values a loom reads, by kind (Loom.input_values)."""
    named_tensors: list
    batch_inputs: list
    captures: list

    def all(self):
        return self.named_tensors + self.batch_inputs + self.captures


class Loom:
    """`Loom(max_depth=None, named_tensors=None, named_ops=None, batch_inputs=None,
    extra_type_shapes=None, dry_run=False)`.

    - named_tensors: {name: value or (value, tag)}; values are tensors, arrays
      or td.Variables (read each run).
    - named_ops: {name: LoomOp}.
    - batch_inputs: {TypeShape: tensor or td.Variable}, a batch of values of the
      type shape; `weaver.batch_input(ts, i)` is its row i.
    - max_depth: the deepest a schedule may be; None for no limit.
    - dry_run: build the loom's description only, to make schedules (it cannot run; its ops are
      traced only to fingerprint their bodies, so its schedules run on the loom it describes).
    - back_prop=False: no gradient flows through the loom (GradientTapes do not see its runs).
      TensorFlow Fold's parallel_iterations, swap_memory and direct_feed_dict are accepted with
      the values that describe what treadle does and refused otherwise, saying why
      (treadle.loom.fold_options).
    """

    def __init__(self, max_depth=None, named_tensors=None, named_ops=None, batch_inputs=None,
                 extra_type_shapes=None, dry_run=False, **fold_kwargs):
        # TensorFlow Fold's back_prop, parallel_iterations, swap_memory, ...: see fold_options.
        back_prop = back_prop_from_fold_kwargs(fold_kwargs)
        if max_depth is not None and (isinstance(max_depth, bool) or not isinstance(max_depth, (int, np.integer))
                                      or max_depth < 1):
            raise ValueError(f"max_depth must be None or a positive int, got {max_depth!r}")
        named = _named_tensor_entries(named_tensors or {})
        ops = _op_entries(named_ops or {})
        batch = _batch_input_entries(batch_inputs or {})
        type_shapes = _collect_type_shapes(named, ops, batch, extra_type_shapes or ())
        ts_index = {ts: i for i, ts in enumerate(type_shapes)}
        batch.sort(key=lambda entry: ts_index[entry[0]])  # the state's order
        self._setup(type_shapes, named, ops, batch, max_depth=None if max_depth is None else int(max_depth),
                    unrolled=max_depth is not None, dry_run=bool(dry_run), back_prop=back_prop)
        self._traced_ops = self._trace_ops()
        self._set_metadata(self._build_metadata())
        if not self._dry_run:
            self._build_runtime()

    # ------------------------------------------------------------ building
    def _setup(self, type_shapes, named, ops, batch, max_depth, unrolled, dry_run, back_prop):
        """What every loom holds, however it was made (built, loaded or only
        for weaving): `named` [(name, value, TypeShape)], `ops` [(name, LoomOp)],
        `batch` [(TypeShape, value)] in the state's order."""
        self._back_prop = back_prop
        self._max_depth = max_depth
        self._unrolled = unrolled
        self._dry_run = dry_run
        self._type_shapes = list(type_shapes)
        self._ts_index = {ts: i for i, ts in enumerate(self._type_shapes)}
        self._named = list(named)
        self._named_tensor_names = [name for name, _, _ in self._named]
        self._named_tensor_indices = {name: i for i, name in enumerate(self._named_tensor_names)}
        self._ops = list(ops)
        self._batch_input_order = [ts for ts, _ in batch]
        self._batch_inputs = dict(batch)
        self._check_names()
        self._constant_keys = {}
        self._traced = None
        self._captures = []
        self._functions = None
        self._prepared_step_attrs = {}  # (unrolled step, depth) -> _core.PreparedAttrs

    def _set_metadata(self, metadata):
        self._metadata = metadata
        self._spec = _core.LoomSpec(metadata.SerializeToString())

    def _check_names(self):
        reserved = _reserved_names()
        seen = set()
        for kind, name in [("named tensor", n) for n in self._named_tensor_names] + \
                          [("named op", n) for n, _ in self._ops]:
            if not isinstance(name, str) or not name:
                raise ValueError(f"{kind} names must be non-empty strings, got {name!r}")
            if name.startswith("_") or name in reserved:
                raise ValueError(f"{kind} name '{name}' is reserved (it starts with '_' or names a Weaver method)")
            if name in seen:
                raise ValueError(f"'{name}' names both a named tensor and a named op")
            seen.add(name)
        # An op's index in the metadata: after one pass-through op per type shape.
        self._op_indices = {name: len(self._type_shapes) + i for i, (name, _) in enumerate(self._ops)}
        self._weaver_op_names = [(len(self._type_shapes) + i, name) for i, (name, _) in enumerate(self._ops)
                                 if name.isidentifier()]

    def _build_metadata(self):
        md = loom_pb2.LoomMetadata()
        for ts in self._type_shapes:
            md.type_shapes.add(dtype=ts.dtype.as_datatype_enum, shape=list(ts.shape), tag=ts.tag)
        for i, ts in enumerate(self._type_shapes):
            md.ops.add(name=f"_pass_through_{i}", input_type_shapes=[i], output_type_shapes=[i], pass_through=True)
        for name, op in self._ops:
            traced = self._traced_ops.get(name)
            md.ops.add(name=name, input_type_shapes=[self._ts_index[t] for t in op._input_plain_type_shapes],
                       output_type_shapes=[self._ts_index[t] for t in op.output_type_shapes],
                       pass_through=traced is None,
                       body_fingerprint=0 if traced is None else traced.body_fingerprint,
                       ragged_inputs=op._ragged_inputs)
        for name, _, ts in self._named:
            md.named_tensors.add(name=name, type_shape=self._ts_index[ts])
        md.batch_input_type_shapes.extend(self._ts_index[ts] for ts in self._batch_input_order)
        md.max_depth = self._max_depth or 0
        return md

    def _trace_ops(self):
        """{name: TracedOp} of the ops that are not pass-throughs."""
        return {name: trace_op(name, op) for name, op in self._ops if type(op) is not PassThroughLoomOp}

    def _build_runtime(self):
        """Names each op's batched function (and its gradient functions) in the
        metadata; the functions form the loom's library."""
        functions, traced_defs = [], []
        for name, op_def in self._named_op_defs():
            if op_def.pass_through:
                continue
            traced = self._traced_ops[name]
            op_def.function_name = traced.name
            op_def.num_captures = len(traced.captures)
            self._captures.extend(traced.captures)
            functions.append(traced.function)
            traced_defs.append((op_def, traced.function))
        functions.extend(gradients.attach_backward_functions(traced_defs))
        self._set_library(functions, _core.LoomLibrary(library_functions(functions)))

    def _named_op_defs(self):
        """(name, LoomOpDef of the metadata) of each named op, in order."""
        first = len(self._type_shapes)
        return [(name, self._metadata.ops[first + k]) for k, (name, _) in enumerate(self._ops)]

    def _set_library(self, functions, library):
        """`functions`: the ops' functions as a graph's library takes them
        (FuncGraph.add_function: ConcreteFunctions, or a loaded loom's
        LoadedFunctions); `library`: the same as a _core.LoomLibrary, which
        eager runs use. The Loom ops name the functions in their attrs."""
        self._functions = list(functions)
        self._library = library
        metadata = self._metadata.SerializeToString()
        capture_specs = library.check(metadata)
        self._input_sources = list(self.input_values.all())
        self._input_dtypes = [v.dtype for v in self._input_sources]
        self._input_shapes = [v.shape.dims if hasattr(v.shape, "dims") else list(v.shape)
                              for v in self._input_sources]
        if len(capture_specs) != len(self._captures):
            raise ValueError(f"the loom's functions capture {len(capture_specs)} values but "
                             f"{len(self._captures)} were given")
        self._loom_attrs = _core.loom_node_attrs(metadata)
        # In LoomRun's order of attrs, which the core then takes as they are.
        self._run_attrs = dict(Tinputs=self._input_dtypes, output_types=[ts.dtype for ts in self._type_shapes],
                               output_shapes=[[None] + list(ts.shape) for ts in self._type_shapes],
                               **self._loom_attrs)
        # Converted once: an eager run would otherwise convert the loom's many attrs each time.
        self._eager_run_attrs = _core.PreparedAttrs(op_handle("LoomRun"), self._run_attrs)

    @classmethod
    def from_loom_def(cls, loom_def, named_ops, named_values, batch_values, captures, functions, library):
        """A loom from a LoomDef (td.load: loom.saving), its named ops (LoomOps of
        the metadata's ops after the pass-throughs), the values it reads and
        its library (`functions`, `library`: see _set_library): it runs and
        makes weavers. It runs in the loop mode (LoomRun) whatever its
        max_depth: that comes from the file, and an unrolled graph would have a
        node per depth up to it, however shallow the schedules (the loop stops at
        each schedule's depth; max_depth still bounds the schedules)."""
        md = loom_def.metadata
        type_shapes, named, batch = _description_of_metadata(md, named_values, batch_values, "the saved loom's")
        self = cls.__new__(cls)
        self._setup(type_shapes, named, named_ops, batch, max_depth=md.max_depth or None, unrolled=False,
                    dry_run=False, back_prop=True)
        self._set_metadata(md)
        self._captures = list(captures)
        self._set_library(functions, library)
        return self

    def weaving_loom(self):
        """A loom that only makes weavers (like dry_run=True), rebuilt from this
        loom's metadata: it holds no values or functions, pickles as that
        metadata, and its schedules carry this loom's fingerprint. Worker
        processes weave with it (td.data.experimental.parallel_weave)."""
        return Loom._weaving_only(self._metadata.SerializeToString())

    @classmethod
    def _weaving_only(cls, metadata_bytes):
        md = loom_pb2.LoomMetadata()
        md.ParseFromString(metadata_bytes)
        type_shapes, named, batch = _description_of_metadata(md, None, None, "the loom")
        ops = [(op.name, None) for op in md.ops[len(type_shapes):]]
        self = cls.__new__(cls)
        self._setup(type_shapes, named, ops, batch, max_depth=md.max_depth or None, unrolled=md.max_depth > 0,
                    dry_run=True, back_prop=True)
        self._set_metadata(md)
        return self

    def __reduce__(self):
        if not self._dry_run:
            raise TypeError("a td.loom.Loom holding its ops' functions and values cannot be pickled; pickle "
                            "loom.weaving_loom() (it makes the same schedules) or rebuild the loom in the other "
                            "process")
        return (Loom._weaving_only, (self._metadata.SerializeToString(),))

    # ------------------------------------------------------------ description
    @property
    def type_shapes(self):
        """The loom's type shapes, in the order of its state (sorted)."""
        return list(self._type_shapes)

    @property
    def max_depth(self):
        """The deepest schedule the loom runs with unrolled steps, or None for the loop-mode runtime (any
        depth), as given to `Loom(max_depth=...)`."""
        return self._max_depth

    @property
    def fingerprint(self):
        """A digest of what the loom computes (type shapes, ops and their functions, named tensors); every
        schedule carries its loom's fingerprint, and a loom refuses schedules of another."""
        return self._spec.fingerprint

    @property
    def named_tensors(self):
        """{name: value} of the tensors and variables given as `named_tensors`, which weavers read with
        `named_tensor(name)` or as attributes."""
        return {name: value for name, value, _ in self._named}

    @property
    def named_ops(self):
        """{name: LoomOp} of the loom's ops; a weaver calls each as `weaver.NAME(...)` or `weaver.op(NAME,
        args)`."""
        return dict(self._ops)

    @property
    def dry_run(self):
        """True for a loom that only makes schedules (it holds no functions and cannot run)."""
        return self._dry_run

    @property
    def loom_def(self):
        """The LoomDef message (metadata, and the library of its ops' functions)
        the loom runs; ValueError for a dry_run loom, which has none."""
        if self._functions is None:
            raise ValueError("a loom built with dry_run=True has no functions (no LoomDef)")
        return loom_pb2.LoomDef(metadata=self._metadata, library=library_graph_def(*self._functions))

    @property
    def functions(self):
        """The library functions of the loom's ops (forward, training and
        backward), which the graphs that run the loom hold in their library;
        empty for a dry_run loom."""
        return list(self._functions or ())

    @property
    def input_values(self):
        """The values the loom reads, in the order its run takes them: named
        tensors, batch inputs (in the state's order), its ops' captures (each a
        tensor or a td.Variable)."""
        return LoomInputs([v for _, v, _ in self._named], [self._batch_inputs[ts] for ts in self._batch_input_order],
                          list(self._captures))

    @property
    def variables(self):
        """Every td.Variable the loom reads (named tensors, batch inputs, its ops'
        captures), each once: what to train or save, also for a loaded loom."""
        values = self.input_values.all()
        unique = {id(v): v for v in values if isinstance(v, Variable)}
        return list(unique.values())

    @property
    def trainable_variables(self):
        """The trainable variables among `variables`: what an optimizer updates."""
        return [v for v in self.variables if v.trainable]

    def _type_shape_index(self, type_shape):
        try:
            return self._ts_index[type_shape]
        except (KeyError, TypeError):
            raise ValueError(f"{type_shape!r} is not a type shape of this loom; its type shapes are "
                             f"{self._type_shapes}") from None

    def _op_index(self, name):
        try:
            return self._op_indices[name]
        except (KeyError, TypeError):
            raise ValueError(f"the loom has no op named {name!r}; its ops are {sorted(self._op_indices)}") from None

    def _op_output_type_shapes(self, index):
        return list(self._metadata.ops[index].output_type_shapes)

    def _named_tensor_index(self, name):
        try:
            return self._named_tensor_indices[name]
        except (KeyError, TypeError):
            raise ValueError(f"the loom has no named tensor {name!r}; its named tensors are "
                             f"{self._named_tensor_names}") from None

    def _constant_type_shape(self, value, tag):
        """(type shape index, C-contiguous array) for a constant's value."""
        exact = isinstance(value, (np.ndarray, np.generic))
        if isinstance(value, EagerTensor):
            value, exact = value.numpy(), True
        arr = np.asarray(value)
        key = (arr.dtype.str, arr.shape, tag)
        index = self._constant_keys.get(key)
        if index is None:
            index = self._find_constant_type_shape(arr, tag, exact)
            self._constant_keys[key] = index
        ts = self._type_shapes[index]
        if arr.dtype != ts.dtype.as_numpy_dtype or not arr.flags.c_contiguous:
            arr = np.ascontiguousarray(arr, dtype=ts.dtype.as_numpy_dtype)
        if ts.dtype == dtypes.bfloat16:  # no buffer-protocol format; the weaver copies bytes
            arr = arr.view(np.uint16)
        return index, arr

    def _find_constant_type_shape(self, arr, tag, exact):
        try:
            return self._ts_index[TypeShape(arr.dtype, arr.shape, tag)]
        except (KeyError, TypeError):
            pass
        if not exact:  # a Python value: any type shape of the same kind of number fits
            kind = "f" if arr.dtype.kind == "f" else ("b" if arr.dtype.kind == "b" else "i")
            fits = [i for i, ts in enumerate(self._type_shapes)
                    if ts.shape == arr.shape and ts.tag == tag and np.dtype(ts.dtype.as_numpy_dtype).kind == kind]
            if kind == "i":  # an int literal may also be a float constant
                fits = fits or [i for i, ts in enumerate(self._type_shapes)
                                if ts.shape == arr.shape and ts.tag == tag and ts.dtype.is_floating]
            if len(fits) == 1:
                return fits[0]
        raise TypeError(f"a constant of dtype {arr.dtype.name}, shape {arr.shape} and tag {tag!r} matches no type "
                        f"shape of this loom; its type shapes are {self._type_shapes} (add one with "
                        "extra_type_shapes)")

    # ------------------------------------------------------------ weaving
    def make_weaver(self):
        """A new, empty Weaver of this loom: call the loom's ops on it, add outputs, then run it with
        `output_tensor` (or `serialize()` it into a schedule)."""
        return Weaver(self)

    def deserialize_weaver(self, serialized):
        """A Weaver holding the schedule of a serialized WeaverMessage (validated)."""
        w = Weaver(self)
        w._append_message(bytes(serialized))
        return w

    def merge_schedules(self, schedules):
        """One serialized WeaverMessage holding all of `schedules` (Weavers or messages)."""
        return self._spec.merge_to_message([_message_bytes(s, f"element {i} of the list")
                                            for i, s in enumerate(schedules)])

    # ------------------------------------------------------------ running
    def __call__(self, schedule):
        """Runs `schedule`; returns {TypeShape: batch of that type shape's outputs}."""
        return dict(zip(self._type_shapes, self._run(schedule)))

    def output_tensor(self, type_shape, schedule):
        """The batch of `schedule`'s outputs of `type_shape`, in the order they were added."""
        return self._run(schedule)[self._type_shape_index(type_shape)]

    def _run(self, schedule):
        if not self._back_prop:
            with not_recorded():
                return self._run_recorded(schedule)
        return self._run_recorded(schedule)

    def _run_recorded(self, schedule):
        if self._dry_run:
            raise ValueError("this loom was built with dry_run=True: it makes schedules but cannot run them")
        inputs = [v.read_value() if isinstance(v, Variable) else v for v in self._input_sources]
        if self._unrolled:
            return self._run_unrolled(self._schedule_tensor(schedule), inputs)
        graph = context.current_graph()
        add_to_graph(graph, self._functions)  # the functions LoomRun names join the graph's library
        outs = execute("LoomRun", [self._schedule_tensor(schedule)] + inputs,
                       self._eager_run_attrs if graph is None else self._run_attrs)
        return outs[:-1]

    def _run_unrolled(self, schedule, inputs):
        """max_depth given: one LoomLayer per depth (graph nodes when traced), each
        a pure function of the state below, with its own gradient."""
        types = [ts.dtype for ts in self._type_shapes]
        shapes = self._run_attrs["output_shapes"]
        captures = inputs[len(inputs) - len(self._captures):]
        capture_types = [c.dtype for c in captures]
        add_to_current_graph(self._functions)
        base = self._loom_attrs  # each dict below lists the attrs in the op's order, as the core takes them best
        outs = execute("LoomInitialState", [schedule] + inputs, self._step_attrs(
            "LoomInitialState", None, lambda: dict(Tinputs=self._input_dtypes, Tout=[dtypes.variant] + types,
                                                   output_shapes=[[]] + shapes, **base)))
        handle, state = outs[0], outs[1:]
        states = list(state)
        # Run eagerly, the layers stop at the schedule's own depth: max_depth
        # may come from a file, and the layers beyond the schedule are empty.
        # A graph has a node for each depth up to max_depth.
        num_depths = self._max_depth
        if isinstance(handle, EagerTensor):
            num_depths = min(num_depths, _core.loom_schedule_depth(handle))
        for depth in range(1, num_depths + 1):
            state = execute("LoomLayer", [handle] + state + captures, self._step_attrs(
                "LoomLayer", depth, lambda: dict(Tinputs=types + capture_types, Tout=types, output_shapes=shapes,
                                                 **base, depth=depth)))
            states.extend(state)
        return execute("LoomGatherOutputs", [handle] + states, self._step_attrs(
            "LoomGatherOutputs", num_depths, lambda: dict(Tinputs=types * (num_depths + 1), Tout=types,
                                                          output_shapes=shapes, **base, num_depths=num_depths)))

    def _step_attrs(self, op, depth, attrs):
        """The attrs (made by `attrs()`) of unrolled step `op` at `depth`; for
        an eager run, converted once per step and depth (as LoomRun's are),
        since each run repeats them."""
        if context.current_graph() is not None:
            return attrs()
        prepared = self._prepared_step_attrs.get((op, depth))
        if prepared is None:
            prepared = self._prepared_step_attrs[op, depth] = _core.PreparedAttrs(op_handle(op), attrs())
        return prepared

    def _schedule_tensor(self, schedule):
        eager = context.executing_eagerly()
        if isinstance(schedule, Schedule):
            schedule = schedule.data
        if isinstance(schedule, Weaver):
            if eager:
                return schedule._schedule()
            return constant(schedule.serialize())
        if isinstance(schedule, (bytes, bytearray, memoryview)):
            if eager:
                return self._spec.merge([bytes(schedule)])
            return constant(bytes(schedule))
        if isinstance(schedule, Tensor):
            return schedule
        if isinstance(schedule, (list, tuple)):
            messages = [_message_bytes(s, f"element {i} of the list") for i, s in enumerate(schedule)]
            if eager:
                return self._spec.merge(messages)
            return constant(np.array(messages, dtype=object)) if messages else constant([], dtype="string")
        converted = foreign_schedules.as_messages(schedule)
        if converted is not None:
            return self._schedule_tensor(converted)
        raise TypeError(f"a loom schedule must be a Weaver, serialized WeaverMessage bytes, a list of those, a "
                        f"string tensor or an object with the buffer protocol or DLPack, got "
                        f"{type(schedule).__name__}")

    def __repr__(self):
        return (f"<td.loom.Loom: {len(self._type_shapes)} type shapes, {len(self._ops)} ops, "
                f"{len(self._named)} named tensors, max_depth={self._max_depth}>")


def _named_tensor_entries(named_tensors):
    """[(name, value, TypeShape)] of Loom's named_tensors, by name."""
    if not isinstance(named_tensors, dict):
        raise TypeError(f"named_tensors must be a dict, got {type(named_tensors).__name__}")
    named = []
    for name in sorted(named_tensors):
        value, tag = named_tensors[name], ""
        if isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], str):
            value, tag = value
        value = _as_value(value, f"named tensor '{name}'")
        named.append((name, value, type_shape_of(value, tag)))
    return named


def _op_entries(named_ops):
    """[(name, LoomOp)] of Loom's named_ops, by name."""
    if not isinstance(named_ops, dict):
        raise TypeError(f"named_ops must be a dict, got {type(named_ops).__name__}")
    ops = []
    for name in sorted(named_ops):
        op = named_ops[name]
        if not isinstance(op, LoomOp):
            raise TypeError(f"named op '{name}' must be a td.loom.LoomOp, got {type(op).__name__}")
        if "_output_type_shapes" not in vars(op):
            raise TypeError(f"named op '{name}' ({type(op).__name__}) was not initialized as a LoomOp: its __init__ "
                            "must call super().__init__(input_type_shapes, output_type_shapes)")
        if not op.input_type_shapes:
            # As in Fold: an op's batch size is that of its arguments, so
            # one without inputs could not know how many calls it serves.
            raise ValueError(f"named op '{name}' has no input type shapes; a LoomOp needs at least one input "
                             "(make a value with no arguments a named tensor or a constant instead)")
        ops.append((name, op))
    return ops


def _batch_input_entries(batch_inputs):
    """[(TypeShape, value)] of Loom's batch_inputs, each checked to be a batch of its type shape."""
    if not isinstance(batch_inputs, dict):
        raise TypeError(f"batch_inputs must be a dict, got {type(batch_inputs).__name__}")
    batch = []
    for ts, value in batch_inputs.items():
        if not isinstance(ts, TypeShape):
            raise TypeError(f"batch_inputs keys must be TypeShapes, got {ts!r}")
        value = _as_value(value, f"the batch input of {ts}")
        shape = value.shape.as_list() if hasattr(value.shape, "as_list") else list(value.shape)
        if value.dtype != ts.dtype or len(shape) != len(ts.shape) + 1 or tuple(shape[1:]) != ts.shape:
            raise ValueError(f"the batch input of {ts} must be a batch of its values (dtype {ts.dtype.name}, "
                             f"shape (n,) + {ts.shape}), got dtype {value.dtype.name} shape {tuple(shape)}")
        batch.append((ts, value))
    return batch


def _collect_type_shapes(named, ops, batch, extra_type_shapes):
    """The loom's type shapes, sorted: those of its named tensors, ops and batch inputs, and the extra ones."""
    type_shapes = set(ts for _, _, ts in named)
    for _, op in ops:
        type_shapes.update(op._input_plain_type_shapes)
        type_shapes.update(op.output_type_shapes)
    type_shapes.update(ts for ts, _ in batch)
    for ts in extra_type_shapes:
        if not isinstance(ts, TypeShape):
            raise TypeError(f"extra_type_shapes must be TypeShapes, got {ts!r}")
        type_shapes.add(ts)
    _check_tags(type_shapes)
    return sorted(type_shapes)


def type_shapes_of_metadata(md, what="the loom"):
    """The TypeShapes a LoomMetadata lists; ValueError "<what> metadata is invalid" for a bad entry."""
    try:
        return [TypeShape(dtypes._ALL[ts.dtype], tuple(ts.shape), ts.tag) for ts in md.type_shapes]
    except (IndexError, KeyError, TypeError, ValueError) as e:
        raise ValueError(f"{what} metadata is invalid: {e}") from None


def _description_of_metadata(md, named_values, batch_values, what):
    """(type shapes, named [(name, value, TypeShape)], batch [(TypeShape, value)])
    of a LoomMetadata; the values are None where not given."""
    if named_values is None:
        named_values = [None] * len(md.named_tensors)
    if batch_values is None:
        batch_values = [None] * len(md.batch_input_type_shapes)
    type_shapes = type_shapes_of_metadata(md, what)
    try:
        named = [(nt.name, v, type_shapes[nt.type_shape]) for nt, v in zip(md.named_tensors, named_values)]
        batch = [(type_shapes[i], v) for i, v in zip(md.batch_input_type_shapes, batch_values)]
    except (IndexError, KeyError, TypeError) as e:
        raise ValueError(f"{what} metadata is invalid: {e}") from None
    return type_shapes, named, batch


def _check_tags(type_shapes):
    """A tag names one type shape, as in TensorFlow Fold: two type shapes of
    different dtype or shape under one (non-empty) tag are a TypeError."""
    by_tag = {}
    for ts in sorted(type_shapes):
        if ts.tag and by_tag.setdefault(ts.tag, ts) != ts:
            raise TypeError(f"the type shapes {by_tag[ts.tag]} and {ts} share the tag {ts.tag!r}; a tag must name "
                            "one dtype and shape")


def _message_bytes(schedule, where=None):
    """The serialized message of one schedule; `where` (such as "element 2 of
    the list") says where it was in the caller's argument, for the error."""
    if isinstance(schedule, Schedule):
        return schedule.data
    if isinstance(schedule, Weaver):
        return schedule.serialize()
    if isinstance(schedule, (bytes, bytearray, memoryview)):
        return bytes(schedule)
    converted = foreign_schedules.as_messages(schedule)
    if isinstance(converted, bytes):
        return converted
    raise TypeError(f"a loom schedule must be a Weaver, a td.loom.Schedule, serialized WeaverMessage bytes, or a list "
                    f"of those; {where or 'the schedule'} is a {type(schedule).__name__}")
