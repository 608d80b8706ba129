"""The recorded work of one autobatched call, to run inside a td.function.

`autobatched.record(examples)` runs the per-example Python (it decides the
schedule, as weaving does) and returns a Recording instead of running it.
As a td.function argument, a Recording traces as its plan (the loom, which
type shapes its batch inputs draw from constants and which variables, and
the output structure) and reaches the function as tensors: the serialized
schedule (a string), the constants' rows, the variables' row ids and each
output's rows. Inside, `recording.outputs()` runs the loom there, so the
function is traced once for every batch of the same plan, and the rest of a
training step (loss, gradients, optimizer) runs in the same graph."""

import numpy as np

from treadle.framework import dtypes
from treadle.framework.tensor import convert_to_tensor
from treadle.function.trace_type import TraceType
from treadle.loom.autobatch.rounds import CONSTANTS, VARIABLE_ROWS, batch_input, loom_run, stacked_constants
from treadle.loom.autobatch._record import Value
from treadle.loom.autobatch.outputs import places
from treadle.ops import array_ops
from treadle.util import nest


class Plan:
    """What a recording's tensors mean: `layout` {type shape: pieces},
    `columns` per output leaf ('rows', type shape), ('stacked', dtype,
    shape) or ('mixed', type shape) (some examples' leaves are the loom's
    outputs, the others' are stacked), the output `structure`, and
    `part_specs` (dtype, shape) of each tensor."""

    def __init__(self, loom, layout, columns, structure):
        self.loom, self.layout, self.columns, self.structure = loom, layout, columns, structure
        specs = [(dtypes.string, [])]
        for ts in sorted(layout):
            for piece in layout[ts]:
                if piece[0] == CONSTANTS:
                    specs.append((ts.dtype, [None] + list(ts.shape)))
                elif piece[0] == VARIABLE_ROWS:
                    specs.append((dtypes.int64, [None]))
        for column in columns:
            if column[0] == "rows":
                specs.append((dtypes.int64, [None]))
            elif column[0] == "stacked":
                specs.append((column[1], [None] + list(column[2])))
            else:  # the loom's rows, the others stacked, and each example's place among them
                ts = column[1]
                specs += [(dtypes.int64, [None]), (ts.dtype, [None] + list(ts.shape)), (dtypes.int64, [None])]
        self.part_specs = specs
        pieces = tuple((ts, tuple((p[0], id(p[1]) if p[0] != CONSTANTS else None) for p in layout[ts]))
                       for ts in sorted(layout))
        self.key = (id(loom), pieces, tuple(columns), repr(nest.map_structure(lambda _: None, structure)))

    def run(self, parts):
        """fn's outputs stacked, from the recording's tensors (eager or symbolic)."""
        it = iter(parts)
        schedule = next(it)
        batch = {ts: batch_input(self.layout[ts], ts, parts=it) for ts in sorted(self.layout)}
        results = loom_run(self.loom, schedule, batch)
        leaves = []
        for column in self.columns:
            part = next(it)
            if column[0] == "stacked":
                leaves.append(part)
                continue
            rows = array_ops.gather(results[self.loom._type_shape_index(column[1])], part)
            if column[0] == "mixed":
                others, place = next(it), next(it)
                rows = array_ops.gather(array_ops.concat([rows, others], 0), place)
            leaves.append(rows)
        return nest.pack_sequence_as(self.structure, leaves)


class Recording:
    """The recorded work of one call (see the module's docstring): pass it to
    a td.function and call `outputs()` there, or call `outputs()` eagerly."""

    def __init__(self, plan, parts):
        self._plan = plan
        self._parts = parts

    def outputs(self):
        return self._plan.run(self._parts)

    @property
    def schedule(self):
        """The serialized WeaverMessage (a scalar string tensor)."""
        return self._parts[0]

    def __tf_tracing_type__(self, context):
        return RecordingType(self._plan)

    def __repr__(self):
        return f"<td.loom.autobatch Recording: {len(self._parts)} tensors>"


class _TracedRecording:
    """A Recording inside a td.function: the plan and its placeholders."""

    def __init__(self, plan, parts):
        self._plan = plan
        self._parts = parts

    def outputs(self):
        return self._plan.run(self._parts)

    @property
    def schedule(self):
        return self._parts[0]


class RecordingType(TraceType):
    __slots__ = ("plan",)

    def __init__(self, plan):
        self.plan = plan

    def is_subtype_of(self, other):
        return self == other

    def most_specific_common_supertype(self, others):
        return self if all(self == o for o in others) else None

    def placeholder_value(self, placeholder_context=None):
        graph = placeholder_context.graph
        parts = [graph.add_placeholder(dtype, shape, f"{placeholder_context.name}_{k}")
                 for k, (dtype, shape) in enumerate(self.plan.part_specs)]
        return _TracedRecording(self.plan, parts)

    def to_tensors(self, value):
        return list(value._parts)

    def cast(self, value, casting_context=None):
        if not isinstance(value, Recording) or value._plan.key != self.plan.key:
            raise ValueError(f"expected a td.loom.autobatch Recording of the same plan, got {value!r}")
        return value

    def __eq__(self, other):
        return type(other) is RecordingType and other.plan.key == self.plan.key

    def __hash__(self):
        return hash((RecordingType, self.plan.key))

    def __repr__(self):
        return f"AutobatchRecording[{len(self.plan.part_specs)} tensors]"


def make_recording(recorder, planned, results, plans):
    """The Recording of a planned (not run) final round and the examples'
    results; `plans` caches Plans by key, so equal plans are one object."""
    columns, column_parts = [], []
    rows_of = {id(v): row for v, row in zip(planned.live, planned.output_rows)}
    structure = results[0]
    flat = [nest.flatten(r) for r in results]
    for j in range(len(flat[0])):
        column = [f[j] for f in flat]
        computed, others = [], []
        for i, t in enumerate(column):
            (computed if type(t) is Value and id(t) in rows_of else others).append(i)
        if computed:
            ts = rows_of[id(column[computed[0]])][0]
            rows = convert_to_tensor(np.array([rows_of[id(column[i])][1] for i in computed], np.int64))
            columns.append(("mixed", ts) if others else ("rows", ts))
            column_parts.append(rows)
        if others:
            stacked = array_ops.stack([recorder.eager_of(column[i]) if type(column[i]) is Value else column[i]
                                       for i in others], 0)
            if computed:  # the loom's rows first, then the others: each example's place among them
                column_parts += [stacked, convert_to_tensor(places(computed + others))]
            else:
                columns.append(("stacked", column[0].dtype, tuple(column[0].shape.as_list())))
                column_parts.append(stacked)
    parts = [convert_to_tensor(planned.weaver.serialize(), dtype=dtypes.string)]
    for ts in sorted(planned.layout):
        for piece in planned.layout[ts]:
            if piece[0] == CONSTANTS:
                parts.append(stacked_constants(piece[1], ts))
            elif piece[0] == VARIABLE_ROWS:
                parts.append(convert_to_tensor(np.asarray(piece[2], np.int64)))
    kinds = {ts: [(p[0], None) if p[0] == CONSTANTS else (p[0], p[1]) for p in pieces]
             for ts, pieces in planned.layout.items()}
    plan = Plan(planned.loom, kinds, columns, nest.map_structure(lambda _: None, structure))
    plan = plans.setdefault(plan.key, plan)
    return Recording(plan, parts + column_parts)
