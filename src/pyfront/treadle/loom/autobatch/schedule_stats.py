"""Batched launches of a recorded round under three orders, against the
lower bound (the longest chain of dependent calls): depth order (each op
once per depth), an agenda (DyNet's: each step launches every ready call of
one op, the op whose ready calls are shallowest on average), and treadle's
default (depth order; autobatch(fn, schedule="agenda") runs the agenda)."""

import numpy as np

NODE_SOURCE = 0


def parents_of(arg_splits, arg_source, arg_value, n):
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
    parents = parents_of(arg_splits, arg_source, arg_value, n)
    depth = np.zeros(n, np.int64)
    for i in range(n):  # arguments come before the nodes that read them
        depth[i] = 1 + max((depth[p] for p in parents[i]), default=0)
    lower = int(depth.max()) if n else 0
    by_depth = len({(int(d), int(o)) for d, o in zip(depth, node_op)})
    agenda = int(max(agenda_launches(node_op, parents), default=-1)) + 1
    return {"nodes": n, "lower_bound": lower, "depth": by_depth, "agenda": agenda, "default": by_depth}


def agenda_launches(node_op, parents):
    """Each node's launch number under the agenda order."""
    n = len(node_op)
    children = [[] for _ in range(n)]
    missing = np.zeros(n, np.int64)
    depth = np.zeros(n, np.int64)
    for i, ps in enumerate(parents):
        missing[i] = len(ps)
        depth[i] = 1 + max((depth[p] for p in ps), default=0)
        for p in ps:
            children[p].append(i)
    ready = {}
    for i in range(n):
        if missing[i] == 0:
            ready.setdefault(int(node_op[i]), []).append(i)
    launch = np.zeros(n, np.int64)
    step = 0
    while ready:
        op = min(ready, key=lambda o: (sum(depth[i] for i in ready[o]) / len(ready[o]), o))
        batch = ready.pop(op)
        for i in batch:
            launch[i] = step
            for c in children[i]:
                missing[c] -= 1
                if missing[c] == 0:
                    ready.setdefault(int(node_op[c]), []).append(c)
        step += 1
    return launch
