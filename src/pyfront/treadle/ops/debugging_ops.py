"""td.debugging and td.Assert: run-time checks (the Assert and CheckNumerics
ops), which raise InvalidArgumentError when they fail, eagerly at once and in
a traced function when it runs (they are stateful, so they always run)."""

import numpy as np

from treadle import errors
from treadle.framework import dtypes, op_execution
from treadle.framework.op_execution import execute
from treadle.framework.tensor import EagerTensor, Tensor, convert_to_tensor
from treadle.ops import array_ops, math_ops


def Assert(condition, data, summarize=None, name=None):  # noqa: N802 (TensorFlow's name)
    """Raises InvalidArgumentError, printing the tensors (or strings) of
    `data`, when the scalar bool `condition` is false."""
    condition = convert_to_tensor(condition, dtype=dtypes.bool)
    values = [d if isinstance(d, Tensor) else convert_to_tensor(str(d) if not isinstance(d, (bytes, str)) else d)
              for d in data]
    execute("Assert", [condition] + values, {"summarize": 3 if summarize is None else int(summarize)}, name=name)
    return None


def _check(condition, message, parts, summarize, name):
    data = ([message] if message else []) + parts
    return Assert(condition, data, summarize=summarize, name=name)


def _binary_assert(op_name, relation):
    def check(x, y, message=None, summarize=None, name=None):
        x = convert_to_tensor(x)
        y = convert_to_tensor(y, dtype_hint=x.dtype)
        holds = math_ops.reduce_all(execute(op_name, [x, y])[0])
        return _check(holds, message, [f"Condition x {relation} y did not hold element-wise: x =", x, "y =", y],
                      summarize, name)
    check.__name__ = f"assert_{op_name.lower()}"
    check.__doc__ = f"InvalidArgumentError unless x {relation} y holds for every element (with broadcasting)."
    return check


assert_equal = _binary_assert("Equal", "==")
assert_less = _binary_assert("Less", "<")
assert_less_equal = _binary_assert("LessEqual", "<=")
assert_greater = _binary_assert("Greater", ">")
assert_greater_equal = _binary_assert("GreaterEqual", ">=")


def assert_rank(x, rank, message=None, name=None):
    """ValueError now when x's static rank is known and is not `rank`; when it
    is not known, InvalidArgumentError when the op runs."""
    x = convert_to_tensor(x)
    static = x.shape.rank
    if static is not None and isinstance(rank, int):
        if static != rank:
            raise ValueError(f"{message + ' ' if message else ''}Tensor {getattr(x, 'name', 'x')} must have rank "
                             f"{rank}. Received rank {static}, shape {x.shape}")
        return None
    actual = array_ops.rank(x)
    holds = execute("Equal", [actual, convert_to_tensor(rank, dtype=actual.dtype)])[0]
    return _check(holds, message, ["Tensor must have rank", rank, "Received rank", actual], None, name)


def check_numerics(tensor, message, name=None):
    """`tensor`, after checking it holds no NaN or infinity (InvalidArgumentError with `message`)."""
    return execute("CheckNumerics", [convert_to_tensor(tensor)], {"message": str(message)}, name=name)[0]


# ---------------------------------------------------------------- enable_check_numerics

_SKIPPED = frozenset(["CheckNumerics", "Assert", "Print"])
_enabled = [False]


def _check_outputs(op_name, inputs, attrs, outputs, graph):
    if op_name in _SKIPPED:
        return
    for i, t in enumerate(outputs):
        if t.dtype not in (dtypes.float32, dtypes.float64):
            continue
        if type(t) is EagerTensor:
            values = t._numpy_view()
            if not np.isfinite(values).all():
                kind = "NaN" if np.isnan(values).any() else "Inf"
                raise errors.InvalidArgumentError(None, None, f"!!! Detected Infinity or NaN in output {i} of "
                                                              f"eagerly-executing op \"{op_name}\": {kind} values")
        else:
            execute("CheckNumerics", [t], {"message": f"output {i} of graph op \"{op_name}\""})


def enable_check_numerics(stack_height_limit=30, path_length_limit=50):
    """Every op after this checks its float outputs: eagerly at once, and in
    functions traced from now on when they run (InvalidArgumentError naming the op)."""
    if not _enabled[0]:
        _enabled[0] = True
        op_execution.op_recorders.append(_check_outputs)


def disable_check_numerics():
    if _enabled[0]:
        _enabled[0] = False
        op_execution.op_recorders.remove(_check_outputs)


PUBLIC = {"": ["Assert"],
          "debugging": ["Assert", "assert_equal", "assert_less", "assert_less_equal", "assert_greater",
                        "assert_greater_equal", "assert_rank", "check_numerics", "enable_check_numerics",
                        "disable_check_numerics"]}
