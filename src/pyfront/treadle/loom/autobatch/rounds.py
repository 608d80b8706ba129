"""Running a round: the nodes recorded since the last round, woven in one
bulk call (Weaver.weave) and run by one LoomRun over the loom of every op
so far; its batch inputs hold, per type shape, the rows the nodes read
(computed by earlier rounds, constants, rows of variables: one gather per
variable), and the values still in use are added to the store."""

import numpy as np

from treadle.framework import op_execution
from treadle.framework.op_execution import execute
from treadle.framework.tensor import convert_to_tensor
from treadle.framework.variables import Variable
from treadle.loom.autobatch.schedule_stats import launch_counts
from treadle.loom.autobatch.values import CONSTANT, PENDING, STORED
from treadle.ops import array_ops


def run_round(recorder):
    """Computes every node recorded since the last round; each value still
    referenced (by an example, or as an output) becomes a row of the store."""
    r = recorder.round
    if not len(r):
        return
    registry = recorder.registry
    loom = registry.loom()
    live = [v for v in (ref() for ref in r.fresh) if v is not None and v.src[0] == PENDING]
    outputs = np.fromiter((v.src[1] for v in live), np.int64, len(live))
    output_index = np.fromiter((v.src[2] for v in live), np.int32, len(live))
    batch, arg_value = _batch_inputs(recorder, r, loom)
    weaver = loom.make_weaver()
    weaver.weave(registry.op_names(), r.node_op, r.arg_splits, r.arg_input, r.arg_source, arg_value, r.arg_output,
                 outputs, output_index)
    recorder.stats.append({"nodes": len(r), "loom_depth": weaver.deepest})
    if recorder.count_launches:
        recorder.stats[-1].update(launch_counts(r.node_op, r.arg_splits, r.arg_source, r.arg_value))
    inputs = [batch.get(ts) if ts in batch else loom._batch_inputs[ts] for ts in loom._batch_input_order]
    captures = [c.read_value() if isinstance(c, Variable) else c for c in loom._captures]
    results = execute("LoomRun", [weaver._schedule()] + inputs + captures, loom._eager_run_attrs)[:-1]
    _store(recorder, live, registry, loom, results)
    recorder.round = type(r)()
    recorder.rounds_run += 1


def _batch_inputs(recorder, r, loom):
    """({type shape: batch input}, the arguments' final rows): per type
    shape, the store's rows, then the constants' rows, then each variable's
    rows (a variable alone is its own batch input, read whole)."""
    arg_value = np.asarray(r.arg_value, np.int64)
    if not r.groups:
        return {ts: recorder.store[ts] for ts in recorder.store}, arg_value
    arg_group = np.asarray(r.arg_group, np.int64)
    by_ts = {}
    for g, (ts, kind, var, rows) in enumerate(r.groups):
        by_ts.setdefault(ts, []).append((g, kind, var, rows))
    batch = dict(recorder.store)
    for ts, groups in by_ts.items():
        stored = recorder.store.get(ts)
        if stored is None and len(groups) == 1 and groups[0][1] != CONSTANT:
            g, _, var, rows = groups[0]
            mask = arg_group == g
            arg_value[mask] = np.asarray(rows, np.int64)[arg_value[mask]]
            batch[ts] = var
            continue
        pieces = [] if stored is None else [stored]
        offset = 0 if stored is None else int(stored.shape[0])
        for g, kind, var, rows in groups:
            arg_value[arg_group == g] += offset
            if kind == CONSTANT:
                pieces.append(_stacked_constants(rows, ts))
            else:
                pieces.append(array_ops.gather(var, convert_to_tensor(np.asarray(rows, np.int64))))
            offset += len(rows)
        batch[ts] = pieces[0] if len(pieces) == 1 else array_ops.concat(pieces, 0)
    return {ts: (v.read_value() if isinstance(v, Variable) else v) for ts, v in batch.items()}, arg_value


def _store(recorder, live, registry, loom, results):
    """The live values become rows of the store (appended per type shape)."""
    counts = {}
    new_rows = []
    for v in live:
        ts = registry.ops[recorder.round.node_op[v.src[1]]].out_type_shapes[v.src[2]]
        k = counts.get(ts, 0)
        counts[ts] = k + 1
        new_rows.append((v, ts, k))
    base = {}
    for ts in counts:
        out = results[loom._type_shape_index(ts)]
        old = recorder.store.get(ts)
        base[ts] = 0 if old is None else int(old.shape[0])
        recorder.store[ts] = out if old is None else array_ops.concat([old, out], 0)
    for v, ts, k in new_rows:
        v.src = (STORED, ts, base[ts] + k)


def _stacked_constants(rows, ts):
    """The constant rows (eager tensors) as one batch. While a tape records,
    a row may be computed from a variable: stacked by an op the tape sees."""
    if op_execution.op_recorders:
        return array_ops.stack([convert_to_tensor(r, dtype=ts.dtype) for r in rows], 0)
    return convert_to_tensor(np.stack([np.asarray(r) for r in rows]).astype(ts.dtype.as_numpy_dtype, copy=False))
