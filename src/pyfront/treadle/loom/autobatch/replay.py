"""Training through values read mid-computation: the rounds once more, as
one graph, under the tape.

Under a td.GradientTape, a call whose examples read values runs a round per
wave of reads. Recorded by the tape, each round is a LoomRun whose batch
input gathers the rows it reads from the earlier rounds' outputs: a call
with a round per decision (a decoder reading a probability at every node)
has a hundred small runs forward, and as many backward, each with its
gathers and their gradients.

The decisions carry no gradient: they are Python control flow. So the rounds
run as inference (the tape does not see them) to compute what the examples
read, and every node they recorded, of every round, is kept in one graph
(a Replay): a node's argument computed by an earlier round becomes an edge
to the node that computed it. Once the examples have finished, that graph
runs as one LoomRun under the tape: one batched launch per depth of the
whole computation, and one backward run. Its results are the call's
outputs (the same values, up to the rounding of differently sized batches).
"""

import numpy as np

from treadle.loom.autobatch._plan import decode_arguments
from treadle.loom.autobatch._record import Round
from treadle.loom.autobatch.values import MAX_GROUPS, PENDING, STORED


class Replay:
    """Every node of a call's rounds, numbered together (a round's nodes
    follow the earlier rounds'), with arguments as argument codes (values.py)
    of that numbering: a node's output, or a row of a batch input group
    (the rounds' groups, one after another). `origin[ts]` maps the store's
    rows of type shape ts (as rounds numbered them) to the code of the node
    output each holds."""

    def __init__(self):
        self.node_op, self.arg_splits, self.args = [], [np.zeros(1, np.int64)], []
        self.groups = []        # (type shape, kind, variable, rows): the rounds' groups of one kind merged
        self.group_index = {}   # (id(type shape), kind, id(variable)) -> its place in `groups`
        self.nodes = 0
        self.arguments = 0
        self.origin = {}

    def add_round(self, registry, r):
        """Adds round `r`'s nodes (before it is planned); returns the number of
        its first node here (its nodes' codes are shifted by it)."""
        first = self.nodes
        node_op = np.asarray(r.node_op, np.int64)
        if not len(node_op):
            return first
        splits = np.asarray(r.arg_splits, np.int64)
        codes = np.array(r.args, np.int64)
        arg_input = decode_arguments(r.args, splits, with_groups=False)[0]
        registry.into_ragged_inputs(node_op, splits, arg_input)
        self.args.append(self._renumbered(registry, codes, node_op, splits, arg_input, first, self._merged(r.groups)))
        self.node_op.append(node_op)
        self.arg_splits.append(splits[1:] + self.arguments)
        self.nodes += len(node_op)
        self.arguments += len(codes)
        return first

    def _merged(self, groups):
        """The round's groups added to the merged ones of their kind (the rows
        of one type shape, kind and variable, round after round: one batch
        input piece, so that a recording's plan does not depend on how many
        rounds there were); per round group, (its merged group, the offset of
        its rows there), as two int64 arrays."""
        index, offset = np.zeros(len(groups), np.int64), np.zeros(len(groups), np.int64)
        for g, (ts, kind, var, rows) in enumerate(groups):
            key = (id(ts), kind, id(var))
            m = self.group_index.get(key)
            if m is None:
                m = self.group_index[key] = len(self.groups)
                self.groups.append((ts, kind, var, []))
            merged_rows = self.groups[m][3]
            index[g], offset[g] = m, len(merged_rows)
            merged_rows.extend(rows)
        return index, offset

    def _renumbered(self, registry, codes, node_op, splits, arg_input, first, merged):
        """The round's argument codes in this numbering: node outputs shifted
        by `first` nodes, group rows moved to their merged group (`merged`:
        _merged's arrays), store rows replaced by the code of the node output
        each holds."""
        out = codes.copy()
        is_node = codes >= 0
        out[is_node] += first << 8
        rows = ~codes
        group = (rows & 0xFFFF) - 1
        grouped = np.flatnonzero(~is_node & (group >= 0))
        if grouped.size:
            index, offset = merged
            g = group[grouped]
            out[grouped] = -1 - (((rows[grouped] >> 16) + offset[g]) << 16 | (index[g] + 1))
        stored = np.flatnonzero(~is_node & (group < 0))
        if stored.size:
            ids, type_shapes = registry.argument_type_shapes(node_op, splits, arg_input, stored)
            for t in np.unique(ids).tolist():
                at = stored[ids == t]
                out[at] = self.origin[type_shapes[t]][rows[at] >> 16]
        return out

    def stored(self, ts, first, codes):
        """Rows first, first + 1, ... of the store's type shape `ts` hold the
        node outputs of these codes (this numbering)."""
        origin = self.origin.get(ts)
        end = first + len(codes)
        if origin is None or len(origin) < end:
            grown = np.full(max(end, 2 * (0 if origin is None else len(origin))), -1, np.int64)
            if origin is not None:
                grown[:len(origin)] = origin
            origin = self.origin[ts] = grown
        origin[first:end] = codes

    def code_of(self, value, final_first):
        """The code of the node output `value` (a Value) is, in this
        numbering: a stored value's by its row, a value of the final round
        (never run, `final_first` its first node here) by its node."""
        src = value.src
        if src[0] == STORED:
            return int(self.origin[src[1]][src[2]])
        if src[0] == PENDING:
            return src[4] + (final_first << 8)
        return None

    def as_round(self):
        """The whole graph as one Round (its values given to plan_round apart)."""
        r = Round()
        for ops in self.node_op:
            r.node_op.extend(ops)
        for splits in self.arg_splits[1:]:
            r.arg_splits.extend(splits)
        for codes in self.args:
            r.args.extend(codes)
        if len(self.groups) >= MAX_GROUPS:
            raise ValueError(f"td.loom.autobatch: more than {MAX_GROUPS} kinds of batch input rows in one call")
        r.groups = list(self.groups)
        r.fresh = []
        return r
