"""Batched launches of a recorded round under three orders, against the
lower bound (the longest chain of dependent calls): depth order (what the
Loom runs: each op once per depth), an agenda (DyNet's: each step launches
every ready call of one op, the op whose ready calls are shallowest on
average), and treadle's default (depth order, which is what it runs)."""

import numpy as np

NODE_SOURCE = 0


def _parents(node_op, arg_splits, arg_source, arg_value):
    n = len(node_op)
    parents = [[] for _ in range(n)]
    for i in range(n):
        for e in range(arg_splits[i], arg_splits[i + 1]):
            if arg_source[e] == NODE_SOURCE:
                parents[i].append(int(arg_value[e]))
    return parents


def launch_counts(node_op, arg_splits, arg_source, arg_value):
    """{'nodes', 'lower_bound', 'depth', 'agenda', 'default'}: batched
    launches (one per op and step) of the round's nodes under each order."""
    n = len(node_op)
    parents = _parents(node_op, arg_splits, arg_source, arg_value)
    depth = np.zeros(n, np.int64)
    for i in range(n):  # arguments come before the nodes that read them
        depth[i] = 1 + max((depth[p] for p in parents[i]), default=0)
    lower = int(depth.max()) if n else 0
    by_depth = len({(int(d), int(o)) for d, o in zip(depth, node_op)})
    return {"nodes": n, "lower_bound": lower, "depth": by_depth, "agenda": _agenda(node_op, parents, depth),
            "default": by_depth}


def _agenda(node_op, parents, depth):
    n = len(node_op)
    children = [[] for _ in range(n)]
    missing = np.zeros(n, np.int64)
    for i, ps in enumerate(parents):
        missing[i] = len(ps)
        for p in ps:
            children[p].append(i)
    ready = {}
    for i in range(n):
        if missing[i] == 0:
            ready.setdefault(int(node_op[i]), []).append(i)
    launches = 0
    while ready:
        op = min(ready, key=lambda o: (sum(depth[i] for i in ready[o]) / len(ready[o]), o))
        batch = ready.pop(op)
        launches += 1
        for i in batch:
            for c in children[i]:
                missing[c] -= 1
                if missing[c] == 0:
                    ready.setdefault(int(node_op[c]), []).append(c)
    return launches
