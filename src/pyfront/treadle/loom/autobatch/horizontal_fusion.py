"""Horizontal fusion of a cell's per-example trace, before it is batched.

A cell that loops in Python over a list argument (a child-sum TreeLSTM's
`for c_k, h_k in zip(child_c, child_h)`) is traced once per list length,
and the loop unrolls: k matrix products `h_k @ U_f` by one shared matrix.
Batched, each launch of the cell then runs k small GEMMs, and its gradient
k weight-gradient GEMMs whose results are summed. Here such products become
one product of their left operands stacked along axis 0, split back after:
batched, one GEMM of [k * batch, d] rows (and one weight gradient).

The rewrite is sound: row i of `A @ B` depends only on row i of A, so each
piece of the split is its own product (the same arithmetic, up to the
GEMM's blocking). It applies to MatMul ops without transpose_a that share
the right operand (the same tensor) and attributes, whose left operands
have static shapes, and none of which is computed from another (a chain
`h @ W @ W` stays apart). The copy of the trace computes each op after
what it reads (the stacked product after every left operand), stateful
ops in their order, and otherwise in the trace's order."""

import heapq

import numpy as np

from treadle.autodiff.vectorization import reemit
from treadle.framework import context
from treadle.framework.func_graph import FuncGraph, unique_function_name
from treadle.framework.graph_serialization import ops_needed
from treadle.framework.op_execution import execute
from treadle.framework.tensor import convert_to_tensor
from treadle.function.concrete_function import finish_function
from treadle.ops import array_ops
from treadle.util import nest


class FusedPerExample:
    """`per_example` (a function of one example's slices) for
    td.vectorized_map, whose per-example trace (get_concrete_function) has
    its shared-operand matrix products fused; called, it is `per_example`
    itself (vectorized_map's loop over examples calls it so)."""

    def __init__(self, per_example):
        self._fn = per_example
        self.__name__ = getattr(per_example, "__name__", "per_example")
        self.fused_groups = 0  # groups of products fused in the last trace

    def __call__(self, slices):
        return self._fn(slices)

    def get_concrete_function(self, specs):
        graph = FuncGraph(f"{self.__name__}_example", outer_graph=context.current_graph())
        with graph:
            args = [graph.add_placeholder(s.dtype, s.shape, f"elem{i}") for i, s in enumerate(nest.flatten(specs))]
            result = self._fn(nest.pack_sequence_as(specs, args))
            leaves = nest.flatten(result)
            flat_out = [execute("Identity", [graph._graph_input(convert_to_tensor(v))])[0] for v in leaves]
        groups = shared_operand_groups(graph, flat_out)
        rewritten = _rewritten(graph, flat_out, groups, len(args)) if groups else None
        self.fused_groups = len(groups) if rewritten is not None else 0
        if rewritten is not None:
            graph, flat_out = rewritten
        graph.structured_outputs = nest.pack_sequence_as(result, flat_out)
        return finish_function(graph, unique_function_name(f"{self.__name__}_example"), flat_out)


def _key(t):
    return (id(t.op), t.value_index)


def shared_operand_groups(graph, outputs):
    """{id of the first MatMul of a group: [the group's MatMul ops, in graph
    order]} for the products of `graph` (those `outputs` need) that can be
    stacked into one: see the module's docstring."""
    ops = _needed(graph, outputs)
    position = {id(op): i for i, op in enumerate(ops)}
    candidates = {}
    for op in ops:
        if op.type != "MatMul" or op.attrs.get("transpose_a"):
            continue
        left, right = op.inputs[0], op.inputs[1]
        dims = left.shape.dims if left.shape.rank == 2 else None
        if dims is None or any(d is None for d in dims):
            continue
        key = (_key(right), left.dtype, dims[1], tuple(sorted((k, repr(v)) for k, v in op.attrs.items())))
        candidates.setdefault(key, []).append(op)
    groups = {}
    for members in candidates.values():
        chosen = []
        for m in members:  # a product whose left operand needs an earlier one of the group stays apart
            if not _reads_any(m.inputs[0].op, chosen, position):
                chosen.append(m)
        if len(chosen) > 1:
            groups[id(chosen[0])] = chosen
    return groups


def _needed(graph, outputs):
    return ops_needed(graph, [t.op for t in outputs] + list(graph.stateful_ops))


def _reads_any(op, chosen, position):
    """Whether `op` is one of the ops `chosen` or computed from one of them."""
    if not chosen:
        return False
    targets = {id(c) for c in chosen}
    earliest = min(position[id(c)] for c in chosen)
    seen, stack = set(), [op]
    while stack:
        o = stack.pop()
        if id(o) in targets:
            return True
        if id(o) in seen or position.get(id(o), -1) < earliest:  # ops before the group need none of it
            continue
        seen.add(id(o))
        stack.extend(t.op for t in o.inputs)
    return False


def _emission_order(ops, groups, stateful):
    """The units to emit (an op, or a group's list of MatMuls as one), each
    after every unit it reads and stateful ops in their order, otherwise in
    graph order; None when the groups depend on one another both ways."""
    unit_of = {id(op): id(op) for op in ops}
    for first, members in groups.items():
        for m in members:
            unit_of[id(m)] = first
    units, deps, users = {}, {}, {}
    last_stateful = None
    for i, op in enumerate(ops):
        u = unit_of[id(op)]
        if u not in units:
            units[u] = (i, groups.get(u, op))
            deps[u], users[u] = set(), set()
        for p in [unit_of.get(id(t.op)) for t in op.inputs] + ([last_stateful] if id(op) in stateful else []):
            if p is not None and p != u:
                deps[u].add(p)
                users[p].add(u)
        if id(op) in stateful:
            last_stateful = u
    waiting = {u: len(d) for u, d in deps.items()}
    ready = [(units[u][0], u) for u, n in waiting.items() if n == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        _, u = heapq.heappop(ready)
        order.append(units[u][1])
        for v in users[u]:
            waiting[v] -= 1
            if waiting[v] == 0:
                heapq.heappush(ready, (units[v][0], v))
    return order if len(order) == len(units) else None


def _rewritten(graph, outputs, groups, num_args):
    """(a copy of `graph` with each group's products stacked, its outputs),
    or None when the groups cannot be ordered; its inputs are `graph`'s:
    the arguments, then the same captures."""
    order = _emission_order(_needed(graph, outputs), groups, {id(op) for op in graph.stateful_ops})
    if order is None:
        return None
    fused = FuncGraph(graph.name + "_fused", outer_graph=graph.outer_graph)
    env = {}
    captured = {id(p): ext for ext, p in graph.captures.values()}
    with fused:
        for i, ph in enumerate(graph.inputs):
            env[_key(ph)] = (fused.add_placeholder(ph.dtype, ph.shape, f"elem{i}") if i < num_args
                             else fused.capture(captured[id(ph)]))
        for unit in order:
            if type(unit) is list:
                for m, piece in zip(unit, _stacked_product(unit, env)):
                    env[_key(m.outputs[0])] = piece
            elif unit.type != "Placeholder":
                for t, v in zip(unit.outputs, reemit(unit, [env[_key(t)] for t in unit.inputs])):
                    env[_key(t)] = v
    return fused, [env[_key(t)] for t in outputs]


def _stacked_product(members, env):
    """The products of `members` (MatMuls of one right operand) as pieces
    of one product of their left operands stacked along axis 0."""
    lefts = [env[_key(m.inputs[0])] for m in members]
    rows = [m.inputs[0].shape.dims[0] for m in members]
    product = execute("MatMul", [array_ops.concat(lefts, 0), env[_key(members[0].inputs[1])]], members[0].attrs)[0]
    if len(set(rows)) == 1:
        return array_ops.split(product, len(members), axis=0)
    return array_ops.split(product, np.array(rows, np.int64), axis=0)
