"""Running a round: the nodes recorded since the last round, woven in one
bulk call (Weaver.weave) and run by one LoomRun over the loom of every op
so far; its batch inputs hold, per type shape, the rows the nodes read
(computed by earlier rounds, constants, rows of variables: one gather per
variable), and the values still in use are added to the store.

Outside a tape and a graph being traced, the store is NumPy arrays
(store.ArrayColumn): a type shape's batch input is then its whole column,
the round's constants and rows of variables copied onto its end, and the
schedule reads stored rows by their own numbers."""

import time

import numpy as np

from treadle import _core
from treadle.framework import context, op_execution
from treadle.framework.op_execution import execute
from treadle.framework.tensor import convert_to_tensor
from treadle.framework.variables import Variable
from treadle.loom.autobatch._plan import decode_arguments, output_groups, store_read_positions
from treadle.loom.autobatch._record import live_values, store_rows
from treadle.loom.autobatch.agenda import agenda_arrays
from treadle.loom.autobatch.schedule_stats import launch_counts
from treadle.loom.autobatch.store import ArrayColumn, StoreColumn
from treadle.loom.autobatch.values import CONSTANT
from treadle.loom.fold_options import not_recorded
from treadle.loom.library import add_to_graph
from treadle.ops import array_ops

STORE, CONSTANTS, VARIABLE_ROWS, WHOLE_VARIABLE = "store", "constants", "variable rows", "variable"
STORE_ARRAY = "store array"  # (STORE_ARRAY, column): an ArrayColumn's rows, the round's own appended


class PlannedRound:
    """A round woven but not run: the loom, the weaver, the live values
    (outputs, in order) and, per type shape, the pieces of its batch input:
    (STORE, rows), (CONSTANTS, rows), (VARIABLE_ROWS, variable, rows) or
    (WHOLE_VARIABLE, variable) (the variable alone, read whole); with
    `arrays` (the store is ArrayColumns), (STORE_ARRAY, column) first, then
    the constants' and variables' rows to append to the column."""

    def __init__(self, loom, weaver, live, layout, by_type_shape, made=(), arrays=False, codes=None):
        self.loom, self.weaver, self.live, self.layout = loom, weaver, live, layout
        self.arrays = arrays
        self.codes = codes  # the live values' argument codes (node << 8 | output), an int64 array
        self.made = made  # every value the round made (most freed with this object)
        # [(type shape, the positions in `live` of its values, in order: a
        # list or a range)]: the loom's outputs of that type shape, in the same order.
        self.by_type_shape = by_type_shape

    @property
    def output_rows(self):
        """Per live value: (type shape, its row in the loom's outputs of it)."""
        rows = [None] * len(self.live)
        for ts, positions in self.by_type_shape:
            for k, i in enumerate(positions):
                rows[i] = (ts, k)
        return rows


def plan_round(recorder, arrays=False, live=None):
    """The round woven; with `arrays`, for a store of ArrayColumns. `live`
    (values, their codes), when given, are its outputs (replay.py's), not
    the values of the round still referenced."""
    r = recorder.round
    registry = recorder.registry
    loom = registry.loom()
    live, codes = live_values(r.fresh) if live is None else live  # codes: node << 8 | output
    # The round's other values are referenced by nothing else: they are freed
    # with the planned round (after it ran), not here; the round no longer
    # holds them, which breaks the cycle round -> value -> its src -> round.
    made, r.fresh = r.fresh, None
    node_op, arg_splits = np.asarray(r.node_op, np.int64), np.asarray(r.arg_splits, np.int64)
    _, table, type_shapes = registry.type_shape_tables()
    outputs, output_index, by_type_shape = output_groups(codes, node_op, table, type_shapes)
    agenda = recorder.schedule == "agenda"
    columns = decode_arguments(r.args, arg_splits, with_groups=bool(r.groups) or agenda)
    registry.into_ragged_inputs(node_op, arg_splits, columns[0])
    if recorder.count_launches:
        launches = launch_counts(node_op, arg_splits, columns[1], columns[2])
    if agenda:
        def delay_op_of(node, j):
            return registry.delay_op(registry.ops[node_op[node]].in_type_shapes[j]).index
        node_op, arg_splits, rows, new_index = agenda_arrays(node_op, arg_splits, list(zip(*columns)), delay_op_of)
        columns = _columns(rows)
        outputs = new_index[outputs]
        loom = registry.loom()  # with the pass-through ops
    arg_input, arg_source, arg_value, arg_output, arg_group = columns
    reads = _store_reads(registry, node_op, arg_splits, arg_input, arg_source, arg_value, arg_group, not arrays)
    column_of = (lambda ts: _array_column(recorder, ts)) if arrays else None
    layout, arg_value = _layout(r, reads, arg_value, arg_group, column_of)
    # The core's weaver, without Weaver's per-op callers and its checks that
    # user arrays hold integers of the right width: these arrays are made
    # here (int64 where the core takes int32: it converts them, more cheaply
    # than a NumPy call here; the core still checks every entry).
    weaver = _core.LoomWeaver(loom._spec)
    weaver._weave_graph(registry.loom_op_indices()[node_op], arg_splits, arg_input, arg_source, arg_value,
                        arg_output, outputs, output_index)
    recorder.stats.append({"nodes": len(r), "loom_depth": weaver.deepest})
    if recorder.count_launches:
        recorder.stats[-1].update(launches)
    return PlannedRound(loom, weaver, live, layout, by_type_shape, made, arrays, codes)


def run_round(recorder):
    """Computes every node recorded since the last round; each value still
    referenced (by an example, or as an output) becomes a row of the store.
    With a Replay (replay.py), the round runs unseen by the tapes, and its
    nodes are kept for the replay."""
    if not len(recorder.round):
        return
    replay = recorder.replay
    if replay is None:
        _run(recorder, lambda: plan_round(recorder, _store_as_arrays(recorder)))
        return
    first = replay.add_round(recorder.registry, recorder.round)
    with not_recorded():
        _run(recorder, lambda: plan_round(recorder, _store_as_arrays(recorder)), replay, first)


def run_replay(recorder, outputs):
    """The replay's whole graph (replayed_round) run once, where the tapes
    see it; `outputs` (values) become rows of a new store, which the call's
    outputs are read from."""
    live = replayed_round(recorder, outputs)
    if len(recorder.round):
        _run(recorder, lambda: plan_round(recorder, False, live))


def replayed_round(recorder, outputs):
    """Makes the replay's whole graph (every round's nodes, the final
    round's included: it is never run on its own) the recorder's round, with
    a new, empty store; returns (the values of `outputs` that nodes compute,
    their codes there): its outputs, for plan_round. When no round ran, the
    final round is the whole graph, as it is: None (plan_round's own live
    values)."""
    replay, recorder.replay = recorder.replay, None
    if not replay.nodes:
        return None
    final_first = replay.add_round(recorder.registry, recorder.round)
    live, codes = [], []
    for value in {id(v): v for v in outputs}.values():
        code = replay.code_of(value, final_first)
        if code is not None:
            live.append(value)
            codes.append(code)
    recorder.round = replay.as_round()
    recorder.store = {}
    return live, np.array(codes, np.int64)


def _run(recorder, plan, replay=None, first=0):
    t0 = time.perf_counter()
    planned = plan()
    t1 = time.perf_counter()
    batch = {ts: batch_input(pieces, ts, recorder.store) for ts, pieces in planned.layout.items()}
    results = loom_run(planned.loom, planned.weaver._schedule(), batch)
    _store(recorder, planned, results, replay, first)
    planned.made = None  # the values no longer referenced are freed (counted in the run)
    recorder.stats[-1].update(plan_seconds=t1 - t0, run_seconds=time.perf_counter() - t1)
    recorder.round = type(recorder.round)()


def _store_as_arrays(recorder):
    """Whether this round keeps the store as ArrayColumns: no tape records
    ops, no graph is being traced, every dtype is NumPy's and the store is
    not StoreColumns already. Otherwise any ArrayColumn becomes a
    StoreColumn, for good (a tape opened inside an example sees the rounds
    from then on, as it would with StoreColumns from the start)."""
    store = recorder.store
    if not op_execution.op_recorders and context.current_graph() is None and recorder.registry.array_dtypes_only():
        if all(type(column) is ArrayColumn for column in store.values()):
            return True
    for ts, column in store.items():
        if type(column) is ArrayColumn:
            store[ts] = column.as_store_column()
    return False


def loom_run(loom, schedule, batch):
    """LoomRun of `schedule` (a string tensor) with `batch` ({type shape: a
    batch input}; the loom's empty ones elsewhere), eagerly or in the graph
    being traced; returns the outputs per type shape, in the loom's order."""
    inputs = [batch.get(ts, loom._batch_inputs[ts]) for ts in loom._batch_input_order]
    inputs = [v.read_value() if isinstance(v, Variable) else v for v in inputs]
    captures = [c.read_value() if isinstance(c, Variable) else c for c in loom._captures]
    graph = context.current_graph()
    if graph is not None:
        add_to_graph(graph, loom._functions)
    attrs = loom._eager_run_attrs if graph is None else loom._run_attrs
    return execute("LoomRun", [schedule] + inputs + captures, attrs)[:-1]


def batch_input(pieces, ts, store=None, parts=None):
    """The batch input of type shape `ts` from its pieces (a layout entry);
    `parts` (an iterator) gives the tensors of the pieces, when not made here."""
    if pieces[0][0] == STORE_ARRAY:
        return _array_batch_input(pieces)
    tensors = []
    for piece in pieces:
        kind = piece[0]
        if kind == STORE:
            tensors.append(store[ts].gather_sorted(piece[1]))
        elif kind == CONSTANTS:
            tensors.append(next(parts) if parts is not None else stacked_constants(piece[1], ts))
        elif kind == VARIABLE_ROWS:
            tensors.append(array_ops.gather(piece[1], next(parts)) if parts is not None else _rows_of(piece))
        else:
            tensors.append(piece[1])
    return tensors[0] if len(tensors) == 1 else array_ops.concat(tensors, 0)


def _array_batch_input(pieces):
    """The column of the first piece, with the rows of the others appended."""
    column = pieces[0][1]
    for piece in pieces[1:]:
        if piece[0] == CONSTANTS:
            column.append_array(_stacked_arrays(piece[1]))
        else:
            column.append(_rows_of(piece))
    return column.batch()


def _rows_of(piece):
    """The rows of a (VARIABLE_ROWS, variable, rows) piece, gathered."""
    return array_ops.gather(piece[1], convert_to_tensor(np.asarray(piece[2], np.int64)))


def _stacked_arrays(rows):
    """The constant rows (NumPy values or eager tensors) stacked as one NumPy array."""
    return np.stack([np.asarray(r) for r in rows])


def _columns(args):
    """(input, source, value, output, group) argument rows as arrays, as
    decode_arguments makes them (int64, source int8)."""
    columns = [np.zeros(0, np.int64) for _ in range(5)] if not args else list(np.array(args, np.int64).T)
    columns[1] = columns[1].astype(np.int8)
    return columns


def _store_reads(registry, node_op, arg_splits, arg_input, arg_source, arg_value, arg_group, renumber=True):
    """{type shape: the store rows the round reads (sorted, distinct)}; the
    arguments reading the store are renumbered in place to their place in
    that list (the first rows of the type shape's batch input). Without
    `renumber` (the store is arrays, read whole): {type shape: None}, the
    arguments left as they are."""
    reads = {}
    at = store_read_positions(arg_source, arg_group)
    if not at.size:
        return reads
    only = registry.only_input_type_shape()
    if only is not None:  # every op reads one type shape (a decoder's state): no need to look each one up
        if not renumber:
            return {only: None}
        reads[only], arg_value[at] = _distinct(arg_value[at])
        return reads
    ids, type_shapes = registry.argument_type_shapes(node_op, arg_splits, arg_input, at)
    present = np.flatnonzero(np.bincount(ids)).tolist()
    if not renumber:
        return {type_shapes[t]: None for t in present}
    for t in present:
        mine = at if len(present) == 1 else at[ids == t]
        reads[type_shapes[t]], arg_value[mine] = _distinct(arg_value[mine])
    return reads


_FEW = 48  # up to this many, Python sorts faster than np.unique's fixed cost


def _distinct(values):
    """(the distinct values, sorted; each value's place among them), as np.unique's return_inverse."""
    if len(values) > _FEW:
        return np.unique(values, return_inverse=True)
    items = values.tolist()
    distinct = sorted(set(items))
    place = {v: k for k, v in enumerate(distinct)}
    return np.array(distinct, np.int64), [place[v] for v in items]


def _layout(r, reads, arg_value, arg_group, column_of=None):
    """({type shape: pieces of its batch input}, the arguments' final rows):
    per type shape, the store's rows the round reads, then the constants'
    rows, then each variable's rows (a variable alone is its own batch
    input, read whole). With `column_of` (the store is ArrayColumns;
    column_of(ts) gives a type shape's, made if new), the store's piece is
    (STORE_ARRAY, the whole column), read by the rows' own numbers, and the
    round's rows follow the column's."""
    def stored(ts):  # (the pieces of the store, their number of rows)
        if column_of is not None:
            column = column_of(ts)
            return [(STORE_ARRAY, column)], column.size
        rows = reads.get(ts)
        return ([], 0) if rows is None else ([(STORE, rows)], len(rows))
    layout = {ts: stored(ts)[0] for ts in reads}
    if not r.groups:
        return layout, arg_value
    by_ts = {}
    for g, (ts, kind, var, rows) in enumerate(r.groups):
        by_ts.setdefault(ts, []).append((g, kind, var, rows))
    for ts, groups in by_ts.items():
        if ts not in reads and len(groups) == 1 and groups[0][1] != CONSTANT:
            g, _, var, rows = groups[0]
            at = np.flatnonzero(arg_group == g)  # positions: much cheaper than a boolean mask's indexing
            arg_value[at] = np.fromiter(rows, np.int64, len(rows))[arg_value[at]]
            layout[ts] = [(WHOLE_VARIABLE, var)]
            continue
        pieces, offset = stored(ts)
        for g, kind, var, rows in groups:
            if offset:
                arg_value[np.flatnonzero(arg_group == g)] += offset
            pieces.append((CONSTANTS, rows) if kind == CONSTANT else (VARIABLE_ROWS, var, rows))
            offset += len(rows)
        layout[ts] = pieces
    return layout, arg_value


def _array_column(recorder, ts):
    """The store's ArrayColumn of type shape `ts`, made if new."""
    column = recorder.store.get(ts)
    if column is None:
        column = recorder.store[ts] = ArrayColumn(ts, recorder.registry.store_capacities)
    return column


def stacked_constants(rows, ts):
    """The constant rows (eager tensors) as one batch. While a tape records,
    a row may be computed from a variable: stacked by an op the tape sees."""
    if op_execution.op_recorders:
        return array_ops.stack([convert_to_tensor(r, dtype=ts.dtype) for r in rows], 0)
    return convert_to_tensor(_stacked_arrays(rows).astype(ts.dtype.as_numpy_dtype, copy=False))


def _store(recorder, planned, results, replay=None, first_node=0):
    """The live values become rows of the store (a chunk per type shape);
    a Replay learns which node output each row holds (`first_node`: the
    round's first node there)."""
    live, store = planned.live, recorder.store
    for ts, positions in planned.by_type_shape:
        if planned.arrays:
            column = _array_column(recorder, ts)
        else:
            column = store.get(ts)
            if column is None:
                column = store[ts] = StoreColumn()
        first = column.size
        column.append(results[planned.loom._type_shape_index(ts)])
        if replay is not None:
            replay.stored(ts, first, np.asarray(planned.codes)[np.asarray(positions, np.int64)] + (first_node << 8))
        store_rows(live, positions, ts, first)
