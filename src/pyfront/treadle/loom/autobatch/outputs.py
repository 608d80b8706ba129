"""The call's result: each example's output structure, checked to agree
across examples, with every leaf stacked along a new axis 0."""

import numpy as np

from treadle.framework.tensor import Tensor
from treadle.loom.autobatch._record import Value
from treadle.loom.autobatch.values import STORED
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
    """One tensor of the column's values (rows of the store gathered at once)."""
    if all(type(t) is Value and t.src[0] == STORED for t in column):
        ts = column[0].src[1]
        if all(t.src[1] is ts or t.src[1] == ts for t in column):
            rows = np.fromiter((t.src[2] for t in column), np.int64, len(column))
            return recorder.store[ts].gather(rows)
    values = [recorder.eager_of(t) if type(t) is Value else t for t in column]
    return array_ops.stack(values, 0)



