"""Running a round in agenda order. The Loom runs each op once per depth,
a node at 1 + the deepest of its arguments (depth order). DyNet's agenda
instead launches, step by step, every ready call of one op (the op whose
ready calls are shallowest on average), which batches together calls that
depth order runs at different depths (mixed cells, DAGs). Here each node
gets the depth of its agenda launch, and a node launched later than its
arguments allow reads one argument through a chain of pass-throughs (the
loom's native gathers), which lifts it to that depth."""

import numpy as np

from treadle.loom.autobatch.schedule_stats import agenda_launches, parents_of

NODE_SOURCE = 0


def agenda_arrays(node_op, arg_splits, args, delay_op_of):
    """The round's nodes and argument rows ((input, source, value, output,
    group) tuples) with pass-through nodes inserted, so that the loom runs
    them in agenda order; `delay_op_of(node, input)` is the index of the
    pass-through op for that input's type shape. Returns (node_op,
    arg_splits, args, the new index of each old node)."""
    n = len(node_op)
    parents = parents_of(arg_splits, [a[1] for a in args], [a[2] for a in args], n)
    launch = agenda_launches(node_op, parents)
    depth = _launch_depths(launch, parents)
    new_op, new_splits, new_args = [], [0], []
    new_index = np.zeros(n, np.int64)
    for i in range(n):
        rows, starts = [], []
        for e in range(arg_splits[i], arg_splits[i + 1]):
            j, source, value, output, group = args[e]
            starts.append(depth[value] if source == NODE_SOURCE else 0)
            rows.append((j, source, new_index[value] if source == NODE_SOURCE else value, output, group))
        if rows and depth[i] > 1 + max(starts):  # launched later than its arguments allow: lift one
            k = int(np.argmax(starts))
            j, source, value, output, group = rows[k]
            delay = delay_op_of(i, j)
            for _ in range(int(depth[i] - 1 - starts[k])):
                new_args.append((0, source, value, output, group))
                new_op.append(delay)
                new_splits.append(len(new_args))
                source, value, output, group = NODE_SOURCE, len(new_op) - 1, 0, -1
            rows[k] = (j, source, value, output, group)
        new_index[i] = len(new_op)
        new_args.extend(rows)
        new_op.append(node_op[i])
        new_splits.append(len(new_args))
    return new_op, new_splits, new_args, new_index


def _launch_depths(launch, parents):
    """Each node's depth: that of its launch, one more than the deepest
    argument of any call in the launch (launches come in order)."""
    n = len(launch)
    by_launch = {}
    for i in range(n):
        by_launch.setdefault(launch[i], []).append(i)
    depth = np.zeros(n, np.int64)
    for k in sorted(by_launch):
        members = by_launch[k]
        d = max(1 + max((depth[p] for p in parents[i]), default=0) for i in members)
        depth[members] = d
    return depth
