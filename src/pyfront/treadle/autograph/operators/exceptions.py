"""`assert` in converted code (Feature.ASSERT_STATEMENTS): on a tensor being
traced it is an Assert op (InvalidArgumentError when the graph runs and the
test is false); on anything else it is Python's assert."""

from treadle.autograph.operators import tensors
from treadle.ops import debugging_ops


def assert_stmt(test, message):
    """`message` is a callable giving the assertion's message (evaluated only
    when needed, as Python's assert does)."""
    if tensors.is_symbolic(test):
        data = message()
        data = list(data) if isinstance(data, (list, tuple)) else [data]
        return debugging_ops.Assert(test, data)
    if not test:
        raise AssertionError(message())
    return None
