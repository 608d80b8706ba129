"""Exceptions with TensorFlow's names. The C++ core raises these by status code."""


class OpError(Exception):
    """An error while running an op; `message` says what went wrong and where."""

    error_code = 2

    def __init__(self, node_def, op, message, *args):
        super().__init__(message, *args)
        self._node_def = node_def
        self._op = op
        self._message = message

    @property
    def message(self):
        return self._message

    @property
    def node_def(self):
        return self._node_def

    @property
    def op(self):
        return self._op

    def __str__(self):
        return self._message


def _subclass(name, code, doc):
    cls = type(name, (OpError,), {"__doc__": doc, "error_code": code})
    cls.__module__ = __name__
    return cls


CancelledError = _subclass("CancelledError", 1, "The run was cancelled (interrupted by SIGINT).")
UnknownError = _subclass("UnknownError", 2, "An error of no other kind.")
DeadlineExceededError = _subclass("DeadlineExceededError", 4,
                                  "The run passed its deadline (td.experimental.deadline, or a --timeout).")
InvalidArgumentError = _subclass("InvalidArgumentError", 3, "An op got an invalid argument (a bad value, shape or dtype).")
NotFoundError = _subclass("NotFoundError", 5, "Something named (an op, a file, a function) does not exist.")
AlreadyExistsError = _subclass("AlreadyExistsError", 6, "Something to be created (a file, a cache) already exists.")
FailedPreconditionError = _subclass("FailedPreconditionError", 9, "The system is not in a state to run the op.")
AbortedError = _subclass("AbortedError", 10, "The operation was aborted (a collective whose peer replica failed).")
OutOfRangeError = _subclass("OutOfRangeError", 11, "An iteration or read went past the end.")
UnimplementedError = _subclass("UnimplementedError", 12, "The operation is not implemented for these arguments.")
InternalError = _subclass("InternalError", 13, "An invariant of treadle itself was broken.")
UnavailableError = _subclass("UnavailableError", 14, "A peer is unavailable (a replica process that died).")
DataLossError = _subclass("DataLossError", 15, "Data is corrupt or truncated (a record file, a serialized message).")

_BY_CODE = {cls.error_code: cls for cls in (
    CancelledError, UnknownError, DeadlineExceededError, InvalidArgumentError, NotFoundError, AlreadyExistsError, FailedPreconditionError, AbortedError,
    OutOfRangeError, UnimplementedError, InternalError, UnavailableError, DataLossError)}


class OperatorNotAllowedInGraphError(TypeError):
    """A Python operation that needs a concrete value (bool(), iteration) was
    applied to a symbolic tensor while a graph is traced."""


class InaccessibleTensorError(ValueError):
    """A tensor made inside an inner graph (a loop body, a branch) was used
    outside it."""
