"""The call's result: each example's output structure, checked to agree
across examples, with every leaf stacked along a new axis 0."""

import numpy as np

from treadle.framework.tensor import Tensor, convert_to_tensor
from treadle.loom.autobatch._record import Value
from treadle.loom.autobatch.rounds import stacked_constants
from treadle.loom.autobatch.values import CONST_ROW, STORED
from treadle.ops import array_ops
from treadle.util import nest


def check_results(results):
    """The examples' flat outputs, checked to agree in structure, dtypes and shapes."""
    if not results:
        raise ValueError("td.loom.autobatch: no examples were given")
    structure = results[0]
    flat = [_flat(r, i, structure) for i, r in enumerate(results)]
    for j in range(len(flat[0])):
        _check_column([f[j] for f in flat], j)
    return flat


def stacked_outputs(recorder, results):
    flat = check_results(results)
    columns = [_stack(recorder, [f[j] for f in flat]) for j in range(len(flat[0]))]
    return nest.pack_sequence_as(results[0], columns)


def _flat(result, i, structure):
    if type(result) is Value and type(structure) is Value:  # one tensor each (most often): no nest calls
        return [result]
    try:
        nest.assert_same_structure(structure, result, check_types=True)
    except (TypeError, ValueError) as e:
        raise TypeError(f"td.loom.autobatch: example {i} returned a structure other than example 0's: {e}") from None
    leaves = nest.flatten(result)
    for leaf in leaves:
        if not isinstance(leaf, Tensor):
            raise TypeError(f"td.loom.autobatch: example {i} returned {leaf!r}; the function must return tensors "
                            "(or a nest of them)")
    return leaves


def _signature(t):
    return t.dtype, (t._shape_tuple_ if type(t) is Value else tuple(t.shape.as_list()))


def _check_column(column, j):
    first = _signature(column[0])
    for i, t in enumerate(column):
        sig = _signature(t)
        if sig != first:
            raise ValueError(f"td.loom.autobatch: output {j} of example {i} has dtype {sig[0].name} and shape "
                             f"{sig[1]}, but example 0's has dtype {first[0].name} and shape {first[1]}")


def _stack(recorder, column):
    """One tensor of the column's values: the rows of the store gathered at
    once per type shape, the constants made inside examples stacked in
    NumPy, anything else (rows of variables, outside tensors) stacked by an
    op; the parts put back in the examples' order by one gather. Slicing
    each stored row on its own would cost an op per example, and under a
    tape a gradient the size of the whole chunk per example."""
    stored, constants, others = {}, [], []
    for i, t in enumerate(column):
        if type(t) is Value:
            src = t.src
            if src[0] == STORED:
                stored.setdefault(src[1], []).append(i)
                continue
            if src[0] == CONST_ROW:
                constants.append(i)
                continue
        others.append(i)
    parts, order = [], []
    for ts, positions in stored.items():
        rows = np.fromiter((column[i].src[2] for i in positions), np.int64, len(positions))
        parts.append(recorder.store[ts].gather(rows))
        order += positions
    if constants:
        parts.append(stacked_constants([column[i].src[2] for i in constants], column[constants[0]].src[1]))
        order += constants
    if others:
        parts.append(array_ops.stack([recorder.eager_of(column[i]) if type(column[i]) is Value else column[i]
                                      for i in others], 0))
        order += others
    if len(parts) == 1:
        return parts[0]
    return array_ops.gather(array_ops.concat(parts, 0), convert_to_tensor(places(order)))


def places(order):
    """Where each example's row is among parts stacked one after another,
    `order` listing the examples' indices part after part: the gather that
    puts the parts' rows back in the examples' order."""
    place = np.empty(len(order), np.int64)
    place[order] = np.arange(len(order))
    return place
