"""td.GradientTape: records the ops run on watched tensors, then computes
gradients by running the gradient rules backwards over the recording.

A tape records the ops of the context it was opened in: eager ops when
opened eagerly, the ops added to a graph when opened while a td.function is
traced (there `gradient` adds the gradient ops to the same graph, so a whole
training step is one graph). A call of a td.function is one recorded op;
its gradient is that of the function's graph (function_gradients.py)."""

import threading

from treadle import _core
from treadle.autodiff import backprop, function_gradients, helpers
from treadle.autodiff.registry import DIFFERENTIABLE_DTYPES
from treadle.framework import context, dtypes, op_execution, variables
from treadle.framework.indexed_slices import IndexedSlices
from treadle.framework.tensor import EagerTensor, Tensor, convert_to_tensor
from treadle.function import concrete_function
from treadle.util import nest


class UnconnectedGradients:
    """What `gradient` gives for a source the target does not depend on."""
    NONE = "none"
    ZERO = "zero"


class _Tapes(threading.local):
    def __init__(self):
        super().__init__()
        self.recording = []  # tapes recording in this thread, innermost last


_tapes = _Tapes()
_active = [0]  # recording tapes in all threads (the hooks are installed while > 0)
_hooks_lock = threading.Lock()


def _install_hooks():
    with _hooks_lock:
        _active[0] += 1
        if _active[0] == 1:
            _core._set_operator_execute(op_execution.execute)  # eager operators go through execute, to be seen
            _core._set_gradient_wanted(_gradient_wanted)
            op_execution.op_recorders.append(_record_op)
            variables._read_hooks.append(_watch_read_variable)
            concrete_function.call_recorders.append(_record_call)


def _remove_hooks():
    with _hooks_lock:
        _active[0] -= 1
        if _active[0] == 0:
            _core._set_operator_execute(None)
            _core._set_gradient_wanted(None)
            op_execution.op_recorders.remove(_record_op)
            variables._read_hooks.remove(_watch_read_variable)
            concrete_function.call_recorders.remove(_record_call)


def _record_op(op_name, inputs, attrs, outputs, graph):
    if not outputs:
        return
    for tape in _tapes.recording:
        if tape._graph is graph:
            tape._record(op_name, inputs, attrs, outputs)


def _gradient_wanted(inputs):
    """Will an eager op on `inputs` be recorded by a tape of this thread?
    Asked by the core before it runs an op with gradient-only outputs
    (LoomRun's record), which it skips making when not."""
    if _record_op not in op_execution.op_recorders:  # recording paused (a loom's back_prop=False)
        return False
    for tape in _tapes.recording:
        if tape._graph is None and tape._watches_any(inputs):
            return True
    return False


def _watch_read_variable(variable):
    """A read of a trainable variable while recording watches it
    (watch_accessed_variables), also when the read is in a branch or loop
    body traced inside the tape's graph."""
    if not variable.trainable:
        return
    graph = context.current_graph()
    for tape in _tapes.recording:
        if tape._watch_accessed and (tape._graph is graph or
                                     (tape._graph is not None and tape._graph.is_ancestor_of(graph))):
            tape._watch_variable(variable)


def _record_call(fn, args):
    """A ConcreteFunction call while recording: the function's variables count
    as accessed, and an eager call that a tape watches runs the forward
    function with intermediates and is recorded as one op."""
    graph = context.current_graph()
    captured = [ext for ext, _ in fn.graph.captures.values()]
    for ext in list(args) + captured:  # variables passed as arguments pass their handles
        var = variables.variable_for_handle(ext)
        if var is not None:
            _watch_read_variable(var)
    if graph is not None or any(type(t) is not EagerTensor for t in args):
        return None  # added to the graph by execute(), which records it
    full_args = list(args) + [c if type(c) is EagerTensor else c._captured_value() for c in captured]
    tapes = [t for t in _tapes.recording if t._graph is None and t._watches_any(full_args)]
    if not tapes:
        return None
    op_type = "StatefulPartitionedCall" if fn.graph.stateful_ops else "PartitionedCall"
    try:
        forward, outputs = function_gradients.run_forward(fn, full_args)
    except function_gradients.GRADIENT_ERRORS:
        # The function cannot be differentiated (an op without a gradient
        # rule): run it as it is; asking for the gradient raises the error.
        forward, outputs = fn, fn._get_executable().run(full_args)
    record = backprop.EagerOp(op_type, full_args, {"f": forward.name}, outputs, function=forward)
    for tape in tapes:
        tape._add(record)
    return outputs[:len(fn._flat_outputs)]


class GradientTape:
    """Records operations for automatic differentiation (TensorFlow's tf.GradientTape)."""

    def __init__(self, persistent=False, watch_accessed_variables=True):
        self._persistent = bool(persistent)
        self._watch_accessed = bool(watch_accessed_variables)
        self._graph = None
        self._ops = []
        self._watched = {}  # id(tensor) -> tensor (kept alive so ids stay unique)
        self._variables = []
        self._variable_ids = set()
        self._used = False
        self._depth = 0

    # ---------------------------------------------------------- context
    def __enter__(self):
        self._push()
        return self

    def __exit__(self, *exc):
        if self._depth:
            self._pop()
        return False

    def _push(self):
        if self._depth:
            raise ValueError("GradientTape is already recording; nested use of the same tape is not allowed")
        if self._ops is None:
            raise RuntimeError("GradientTape.gradient can only be called once on non-persistent tapes.")
        graph = context.current_graph()
        if self._ops and graph is not self._graph:
            raise ValueError("a GradientTape cannot record in a different graph than it recorded before")
        self._graph = graph
        self._depth = 1
        _tapes.recording.append(self)
        _install_hooks()

    def _pop(self):
        _tapes.recording.remove(self)
        self._depth = 0
        _remove_hooks()

    class _StopRecording:
        def __init__(self, tape):
            self.tape = tape

        def __enter__(self):
            self.was_recording = bool(self.tape._depth)
            if self.was_recording:
                self.tape._pop()

        def __exit__(self, *exc):
            if self.was_recording:
                self.tape._push()
            return False

    def stop_recording(self):
        """Context manager: ops inside are not recorded."""
        if not self._depth:
            raise RuntimeError("Trying to stop recording a tape which is not recording.")
        return GradientTape._StopRecording(self)

    def reset(self):
        """Forgets everything recorded and watched."""
        self._ops = []
        self._watched = {}
        self._variables = []
        self._variable_ids = set()

    # ---------------------------------------------------------- recording
    def _tape_tensor(self, t):
        """t as a tensor of the graph this tape records (a captured outer value
        stands for itself inside the graph)."""
        graph = self._graph
        if graph is None or getattr(t, "graph", None) is graph:
            return t
        if graph.finalized:
            return t
        return graph._graph_input(t)

    def _watch_tensor(self, t):
        t = self._tape_tensor(t)
        self._watched[id(t)] = t
        return t

    def _watch_variable(self, var):
        if var._unique_id in self._variable_ids:
            return
        self._variable_ids.add(var._unique_id)
        self._variables.append(var)
        self._watch_tensor(var.handle)

    def watch(self, tensor):
        """Ensures `tensor` (a tensor, a variable, or a nested structure of them) is traced."""
        if self._ops is None:
            raise RuntimeError("GradientTape.gradient can only be called once on non-persistent tapes.")
        for leaf in nest.flatten(tensor):
            if isinstance(leaf, variables.Variable):
                self._watch_variable(leaf)
            elif isinstance(leaf, Tensor):
                self._watch_tensor(leaf)
            else:
                raise ValueError(f"Passed in object {leaf!r} of type {type(leaf).__name__!r}, not tf.Tensor or "
                                 "tf.Variable or ExtensionType.")

    def watched_variables(self):
        return tuple(self._variables)

    def _watches_any(self, tensors):
        watched = self._watched
        for t in tensors:
            if id(t) in watched:
                return True
        return False

    def _add(self, record):
        self._ops.append(record)
        watched = self._watched
        for o in record.outputs:
            if o.dtype in DIFFERENTIABLE_DTYPES:
                watched[id(o)] = o

    def _record(self, op_name, inputs, attrs, outputs):
        watched = self._watched
        if self._graph is None:
            for t in inputs:
                if id(t) in watched:
                    break
            else:
                return
            if type(outputs[0]) is not EagerTensor:
                return
            self._add(backprop.EagerOp(op_name, list(inputs), attrs, outputs))
        else:
            op = outputs[0].op
            for t in op.inputs:
                if id(t) in watched:
                    break
            else:
                return
            self._add(op)

    # ---------------------------------------------------------- gradients
    def _source_tensor(self, source):
        if isinstance(source, variables.Variable):
            return self._tape_tensor(source.handle)
        if not isinstance(source, Tensor):
            raise ValueError(f"Passed in object {source!r} of type {type(source).__name__!r}, not tf.Tensor or "
                             "tf.Variable or ExtensionType.")
        graph = self._graph
        if graph is not None and getattr(source, "graph", None) is not graph:
            entry = graph.captures.get(id(source))
            return entry[1] if entry is not None and entry[0] is source else source
        return source

    def gradient(self, target, sources, output_gradients=None, unconnected_gradients=UnconnectedGradients.NONE):
        """The gradient of `target` (a tensor or nested structure; several
        targets add up) with respect to each of `sources` (a nested
        structure of tensors and variables), in the structure of `sources`."""
        if self._ops is None:
            raise RuntimeError("A non-persistent GradientTape can only be used to compute one set of gradients "
                               "(or jacobians)")
        if unconnected_gradients not in (UnconnectedGradients.NONE, UnconnectedGradients.ZERO):
            raise ValueError(f"Unknown value for unconnected_gradients: {unconnected_gradients!r}")
        if self._depth and not self._persistent:
            self._pop()  # as TensorFlow: a non-persistent tape stops recording here
        flat_sources = nest.flatten(sources)
        flat_targets = nest.flatten(target)
        if output_gradients is None:
            target_grads = [None] * len(flat_targets)
        else:
            target_grads = nest.flatten(output_gradients)
            if len(target_grads) != len(flat_targets):
                raise ValueError("output_gradients must have the structure of target")
        for i, t in enumerate(flat_targets):
            if isinstance(t, IndexedSlices):
                # The dense tensor's rows are the values': differentiate those,
                # weighted by the rows of the output gradient they land on.
                g = target_grads[i]
                if g is not None:
                    target_grads[i] = helpers.run("GatherV2", [convert_to_tensor(g, dtype=t.dtype), t.indices,
                                                               helpers.scalar(0, dtypes.int32)])
                flat_targets[i] = t.values
            elif not isinstance(t, Tensor):
                flat_targets[i] = convert_to_tensor(t)
        recording = bool(self._depth)
        if recording:
            self._pop()  # the gradient computation is not recorded on this tape
        try:
            source_tensors = [self._source_tensor(s) for s in flat_sources]
            target_tensors = [self._tape_tensor(t) for t in flat_targets]
            seeds = []
            for t, g in zip(target_tensors, target_grads):
                if g is not None:
                    seeds.append(convert_to_tensor(g, dtype=t.dtype))
                elif t.dtype in DIFFERENTIABLE_DTYPES and t.dtype.is_floating:
                    seeds.append(helpers.run("OnesLike", [t]))
                else:
                    seeds.append(None)
            grads = backprop.backward(self._ops, target_tensors, seeds, source_tensors)
            if unconnected_gradients == UnconnectedGradients.ZERO:
                grads = [g if g is not None else _zeros_for_source(s) for g, s in zip(grads, flat_sources)]
        finally:
            if recording:
                self._push()
        if not self._persistent:
            self._ops = None
            self._watched = None
        return nest.pack_sequence_as(sources, grads)


def _zeros_for_source(source):
    if isinstance(source, variables.Variable):
        return helpers.zeros_like(source.read_value())
    return helpers.zeros_like(source)
