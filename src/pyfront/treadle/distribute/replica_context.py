"""td.distribute.ReplicaContext: what a replica function sees while
`strategy.run` runs it, and how its collectives run in each mode.

A collective inside a replica runs in one of three ways:
- eagerly: the values go to the group (other threads, or other processes)
  as NumPy arrays, and the result comes back as tensors;
- while `strategy.run` is itself being traced into a td.function with
  several replicas in this process: every replica traces into that one
  graph, in turn, and the collective becomes graph ops (an add of the
  replicas' tensors) built once, by the last replica to arrive;
- inside a td.function that a replica calls: the traced function holds a
  py_function that runs the collective when the function runs, with the
  replica context of the thread that runs it (so one trace serves every
  replica)."""

import traceback

import numpy as np

from treadle import _core, errors
from treadle.framework import context, distribution_context, dtypes
from treadle.framework.indexed_slices import IndexedSlices
from treadle.framework.tensor import convert_to_tensor
from treadle.ops import array_ops, math_ops
from treadle.ops.script_ops import py_function
from treadle.distribute.reduce_op import ReduceOp, as_reduce_op
from treadle.util import nest


class ReplicaContext:
    """A replica's view of its strategy (TensorFlow's tf.distribute.ReplicaContext)."""

    def __init__(self, strategy, replica_id, member, trace_graph=None):
        self._strategy = strategy
        self._replica_id = replica_id
        self._member = member
        self._trace_graph = trace_graph   # the graph all replicas trace into, in lockstep

    @property
    def strategy(self):
        return self._strategy

    @property
    def replica_id_in_sync_group(self):
        """This replica's index among all replicas (0 .. num_replicas_in_sync - 1)."""
        return self._replica_id

    @property
    def num_replicas_in_sync(self):
        return self._strategy.num_replicas_in_sync

    @property
    def devices(self):
        """The device this replica runs on (a process-level strategy's one local device)."""
        local = self._strategy.extended.worker_devices
        return (local[0] if self._strategy._replicas_are_processes else local[self._replica_id],)

    def __enter__(self):
        self._previous = distribution_context.set_replica_context(self)
        return self

    def __exit__(self, *exc):
        distribution_context.set_replica_context(self._previous)
        return False

    # ---------------------------------------------------------- modes
    def _mode(self):
        graph = context.current_graph()
        if graph is None:
            return "eager"
        if self._trace_graph is not None and graph is self._trace_graph:
            return "trace"
        return "runtime"

    def _member_at_run_time(self):
        """How a traced collective finds its group when the function runs: a
        process-level strategy's group is this process's, known now; replica
        threads share traces, so theirs is the running thread's."""
        if self._strategy._replicas_are_processes:
            member = self._member
            return lambda _what: member
        return _thread_member

    # ---------------------------------------------------------- collectives
    def all_reduce(self, reduce_op, value, options=None):
        """`value` (a tensor, IndexedSlices or a nest of them) summed or averaged
        over all replicas; every replica gets the result."""
        op = as_reduce_op(reduce_op)
        flat = nest.flatten(value)
        mode = self._mode()
        if mode == "trace":
            out = self._member.group.rendezvous.exchange(
                self._replica_id, flat, lambda per_replica: [_graph_reduce(vs, op) for vs in zip(*per_replica)])
        elif mode == "eager":
            out = _eager_all_reduce(self._member, flat, op)
        else:
            out = _runtime_all_reduce(flat, op, self._member_at_run_time())
        return nest.pack_sequence_as(value, out)

    def all_gather(self, value, axis, options=None):
        """Each replica's tensors of `value`, concatenated along `axis`."""
        flat = [convert_to_tensor(v) for v in nest.flatten(value)]
        mode = self._mode()
        if mode == "trace":
            out = self._member.group.rendezvous.exchange(
                self._replica_id, flat, lambda per_replica: [array_ops.concat(list(vs), axis) for vs in zip(*per_replica)])
        elif mode == "eager":
            gathered = self._member.all_gather([np.moveaxis(t.numpy(), axis, 0) for t in flat])
            out = [convert_to_tensor(np.moveaxis(np.concatenate(parts), 0, axis)) for parts in gathered]
        else:
            raise NotImplementedError("ReplicaContext.all_gather inside a td.function called by a replica: "
                                      "call it in the replica function itself, or all_reduce instead")
        return nest.pack_sequence_as(value, out)

    def merge_call(self, merge_fn, args=(), kwargs=None):
        """Runs merge_fn(strategy, *args, **kwargs) in cross-replica context:
        once for the replicas of this process (all of them wait for it), and
        returns its result to every replica."""
        kwargs = kwargs or {}
        if self._mode() == "trace":
            return self._member.group.rendezvous.exchange(
                self._replica_id, None, lambda _: self._strategy._cross_replica(merge_fn, args, kwargs))
        if self._mode() == "runtime":
            raise NotImplementedError("merge_call inside a td.function that a replica calls: call it from the "
                                      "replica function, or use optimizer.apply_gradients (which supports it)")
        return self._member.merge(lambda: self._strategy._cross_replica(merge_fn, args, kwargs))

    # ---------------------------------------------------------- gradients
    def all_reduce_gradients(self, pairs):
        """(grad, variable) pairs with each gradient summed over the replicas:
        dense gradients all-reduced in buckets, IndexedSlices gathered (their
        rows concatenated, never densified)."""
        grads = [g for g, _ in pairs]
        mode = self._mode()
        if mode == "trace":
            reduced = self._member.group.rendezvous.exchange(
                self._replica_id, grads, lambda per_replica: [_graph_reduce(gs, ReduceOp.SUM) for gs in zip(*per_replica)])
        elif mode == "eager":
            reduced = _eager_all_reduce(self._member, grads, ReduceOp.SUM)
        else:
            raise AssertionError("runtime gradients go through apply_gradients")
        return [(g, v) for g, (_, v) in zip(reduced, pairs)]

    def apply_gradients(self, pairs, apply_fn):
        """What an optimizer's apply_gradients does under a strategy: the
        gradients summed over the replicas, then `apply_fn(pairs)` once per
        copy of the variables. Returns apply_fn's result (the step counter)."""
        mode = self._mode()
        if mode == "runtime":
            if self._strategy._replicas_are_processes:
                return apply_fn(_runtime_reduced_gradients(pairs, self._member_at_run_time()))
            return _runtime_apply(pairs, apply_fn, self._member_at_run_time())
        reduced = self.all_reduce_gradients(pairs)
        return self.merge_call(lambda _strategy: apply_fn(reduced))


# ---------------------------------------------------------------- helpers

def _graph_reduce(values, op):
    """The SUM or MEAN of one value of every replica, as graph ops."""
    if isinstance(values[0], IndexedSlices):
        slices = IndexedSlices(array_ops.concat([v.values for v in values], 0),
                               array_ops.concat([v.indices for v in values], 0), values[0].dense_shape)
        if op is ReduceOp.MEAN:
            slices = IndexedSlices(slices.values / len(values), slices.indices, slices.dense_shape)
        return slices
    total = values[0] if len(values) == 1 else math_ops.add_n([convert_to_tensor(v) for v in values])
    return total / len(values) if op is ReduceOp.MEAN else total


def _as_array(value):
    """A NumPy view of a tensor's buffer (read-only, no copy), or the array of a value."""
    return np.asarray(value)


def _shared_tensor(array):
    """A tensor on a collective's result buffer, without a copy: the buffer is
    fresh for each collective and nothing writes to it afterwards."""
    return _core.tensor_from_numpy(np.require(array, requirements="C"), False)


def _eager_all_reduce(member, flat, op):
    """Dense values all-reduced and IndexedSlices' rows gathered (values and
    indices concatenated over the replicas, never densified), in one round."""
    out = list(flat)
    dense = [i for i, v in enumerate(flat) if not isinstance(v, IndexedSlices)]
    sparse = [i for i, v in enumerate(flat) if isinstance(v, IndexedSlices)]
    gather = []
    for i in sparse:
        gather += [_as_array(flat[i].values), _as_array(flat[i].indices)]
    reduced, gathered = member.all_reduce_and_gather([_as_array(flat[i]) for i in dense], op, gather)
    for i, r in zip(dense, reduced):
        out[i] = _shared_tensor(r)
    for k, i in enumerate(sparse):
        values = gathered[2 * k]
        if op is ReduceOp.MEAN:
            values = (values / member.num_replicas).astype(values.dtype, copy=False)
        out[i] = IndexedSlices(_shared_tensor(values), _shared_tensor(gathered[2 * k + 1]), flat[i].dense_shape)
    return out


def _thread_member(what):
    replica = distribution_context.replica_context()
    if replica is None:
        raise errors.FailedPreconditionError(
            None, None, f"this td.function runs a cross-replica {what}: call it inside strategy.run")
    return replica._member


def _runtime_all_reduce(flat, op, member_of):
    if any(isinstance(v, IndexedSlices) for v in flat):
        raise NotImplementedError("all_reduce of IndexedSlices inside a td.function called by a replica; "
                                  "densify them first (td.convert_to_tensor)")
    tensors = [convert_to_tensor(v) for v in flat]

    def run(*values):
        return _eager_all_reduce(member_of("all_reduce"), list(values), op)

    out = py_function(run, inp=tensors, Tout=[t.dtype for t in tensors])
    for o, t in zip(out, tensors):
        o.set_shape(t.shape)
    return out


def _flatten_gradients(grads):
    """The tensors a py_function takes for `grads`: a dense gradient is one,
    an IndexedSlices three (values, indices, dense shape); and the layout
    (True for IndexedSlices) that `_unflatten_gradients` reads back."""
    layout, inputs = [], []
    for grad in grads:
        if isinstance(grad, IndexedSlices):
            layout.append(True)
            inputs += [grad.values, grad.indices, convert_to_tensor(grad.dense_shape)]
        else:
            layout.append(False)
            inputs.append(grad)
    return layout, inputs


def _unflatten_gradients(layout, values):
    grads, k = [], 0
    for sparse in layout:
        if sparse:
            grads.append(IndexedSlices(values[k], values[k + 1], values[k + 2]))
            k += 3
        else:
            grads.append(values[k])
            k += 1
    return grads


def _runtime_apply(pairs, apply_fn, member_of):
    """Replicas that are threads share one copy of the variables, which must be
    updated once: the gradients go into one py_function, which all-reduces
    them and applies the update (in a merge) when the traced function runs."""
    layout, inputs = _flatten_gradients([g for g, _ in pairs])
    variables = [v for _, v in pairs]

    def run(*values):
        member = member_of("gradient all-reduce")
        reduced = _eager_all_reduce(member, _unflatten_gradients(layout, values), ReduceOp.SUM)
        step = member.merge(lambda: apply_fn(list(zip(reduced, variables))))
        return convert_to_tensor(step.read_value() if hasattr(step, "read_value") else step)

    return py_function(run, inp=inputs, Tout=dtypes.int64)


def _runtime_reduced_gradients(pairs, member_of):
    """(summed gradient, variable) pairs as graph tensors, for a process's own
    copy of the variables: one py_function all-reduces the dense gradients and
    gathers the IndexedSlices' rows when the traced function runs, and the
    optimizer's update that follows stays in the graph (no eager ops a step)."""
    layout, inputs = _flatten_gradients([g for g, _ in pairs])

    def run(*values):
        reduced = _eager_all_reduce(member_of("gradient all-reduce"), _unflatten_gradients(layout, values),
                                    ReduceOp.SUM)
        flat = []
        for g in reduced:
            flat += [g.values, g.indices] if isinstance(g, IndexedSlices) else [g]
        return flat

    out = py_function(run, inp=inputs, Tout=_reduced_dtypes(layout, inputs))
    reduced, k, i = [], 0, 0
    for sparse in layout:
        if sparse:
            values, indices = out[k], out[k + 1]
            if inputs[i].shape.rank is not None:
                values.set_shape([None] + inputs[i].shape.as_list()[1:])
            indices.set_shape([None])
            reduced.append(IndexedSlices(values, indices, inputs[i + 2]))
            k, i = k + 2, i + 3
        else:
            out[k].set_shape(inputs[i].shape)
            reduced.append(out[k])
            k, i = k + 1, i + 1
    return [(g, v) for g, (_, v) in zip(reduced, pairs)]


def _reduced_dtypes(layout, inputs):
    """The dtypes of the reduced gradients' tensors: a dense gradient's, and an
    IndexedSlices' values and indices (its shape stays the input's)."""
    dtypes_out, i = [], 0
    for sparse in layout:
        if sparse:
            dtypes_out += [inputs[i].dtype, inputs[i + 1].dtype]
            i += 3
        else:
            dtypes_out.append(inputs[i].dtype)
            i += 1
    return dtypes_out


def failure_text(error):
    """A replica's error with its traceback, for the other replicas' messages."""
    return "".join(traceback.format_exception(type(error), error, error.__traceback__)).rstrip()
