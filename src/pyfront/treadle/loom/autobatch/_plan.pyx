# cython: language_level=3, boundscheck=False, wraparound=False
"""The per-round loops of td.loom.autobatch's planning (rounds.py), in
Cython: each is one pass over a round's arguments or values, where NumPy
would take a dozen calls (a few microseconds each, at every round of a call
with a round per decision):

- decode_arguments: a round's argument codes as the weaver's arrays.
- output_groups: the live values' nodes and outputs, grouped by type shape.
- store_read_positions: the arguments that read the store.

(The live values become rows of the store in _record.store_rows, beside
the Value fields it sets.)"""

from libc.stdint cimport int8_t, int64_t

import numpy as np


def decode_arguments(codes, arg_splits, bint with_groups=True):
    """(input, source, value, output, group) arrays of the round's argument
    codes (values.py): source 0 reads output `output` of node `value`,
    source 1 row `value` of a batch input, numbered in `group` (-1: final).
    Without groups (a round that read no constants or rows of variables:
    every row is the store's), `group` is None."""
    cdef const int64_t[:] c = codes
    cdef const int64_t[:] splits = arg_splits
    cdef Py_ssize_t n = c.shape[0], last = splits.shape[0] - 1, node = 0, e
    arg_input, source, value = np.empty(n, np.int64), np.empty(n, np.int8), np.empty(n, np.int64)
    output = np.empty(n, np.int64)
    group = np.empty(n if with_groups else 0, np.int64)
    cdef int64_t[:] a_in = arg_input, a_value = value, a_out = output, a_group = group
    cdef int8_t[:] a_source = source
    cdef int64_t code, rows
    for e in range(n):
        while node < last and splits[node + 1] <= e:  # the node whose arguments hold e (some have none)
            node += 1
        if node >= last or splits[node] > e:
            raise ValueError(f"argument {e} of the round lies outside its nodes' argument splits")
        a_in[e] = e - splits[node]
        code = c[e]
        if code < 0:  # a row: -1 - (row << 16 | group + 1)
            rows = -1 - code
            a_source[e], a_value[e], a_out[e] = 1, rows >> 16, 0
            if with_groups:
                a_group[e] = (rows & 0xFFFF) - 1
        else:  # output k of node m: m << 8 | k
            a_source[e], a_value[e], a_out[e] = 0, code >> 8, code & 0xFF
            if with_groups:
                a_group[e] = -1
    return [arg_input, source, value, output, group if with_groups else None]


def output_groups(codes, node_op, table, list type_shapes):
    """(nodes, outputs, groups) of the live values whose argument codes are
    `codes` (node << 8 | output): each one's node and output index (int64
    arrays), and [(type shape, the positions of its values, in order: a
    range when every value has it, else a list)], type shapes numbered by
    `table` (table[op, output], of node_op[node]'s op) in `type_shapes`."""
    cdef const int64_t[:] c = codes
    cdef const int64_t[:] ops = node_op
    cdef const int64_t[:, :] t = table
    cdef Py_ssize_t n = c.shape[0], num_nodes = ops.shape[0], i, k
    cdef int64_t node, output, count = len(type_shapes)
    nodes, outputs = np.empty(n, np.int64), np.empty(n, np.int64)
    cdef int64_t[:] a_nodes = nodes, a_outputs = outputs
    ids = np.empty(n, np.int64)
    cdef int64_t[:] a_ids = ids
    cdef int64_t first = -1
    cdef bint one = True
    for i in range(n):
        node, output = c[i] >> 8, c[i] & 0xFF
        if not (0 <= node < num_nodes and 0 <= ops[node] < t.shape[0] and output < t.shape[1]):
            raise ValueError(f"live value {i} is output {output} of node {node}, which the round's "
                             f"{num_nodes} nodes and the type-shape table do not have")
        a_nodes[i], a_outputs[i] = node, output
        a_ids[i] = t[ops[node], output]
        if not 0 <= a_ids[i] < count:
            raise ValueError(f"live value {i} has type shape number {a_ids[i]}, of {count}")
        if i == 0:
            first = a_ids[0]
        elif a_ids[i] != first:
            one = False
    if n == 0:
        return nodes, outputs, []
    if one:
        return nodes, outputs, [(type_shapes[first], range(n))]
    positions = [[] for _ in range(len(type_shapes))]
    for i in range(n):
        positions[a_ids[i]].append(i)
    return nodes, outputs, [(type_shapes[k], positions[k]) for k in range(len(type_shapes)) if positions[k]]


def store_read_positions(source, group):
    """The positions of the arguments that read a row of the store (source
    1 and group -1; every row argument when `group` is None), as int64."""
    cdef const int8_t[:] s = source
    cdef const int64_t[:] g
    cdef bint grouped = group is not None
    cdef Py_ssize_t n = s.shape[0], e, k = 0
    if grouped:
        g = group
        if g.shape[0] != n:
            raise ValueError(f"{g.shape[0]} groups for {n} arguments")
    at = np.empty(n, np.int64)
    cdef int64_t[:] a_at = at
    for e in range(n):
        if s[e] == 1 and (not grouped or g[e] == -1):
            a_at[k] = e
            k += 1
    return at[:k]
