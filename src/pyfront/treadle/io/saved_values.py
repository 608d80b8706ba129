"""Values a saved file carries (SavedCapture / SavedVariable messages): the
constants and variables captured by saved functions and looms. Writing
shares one SavedVariable per variable; reading validates every reference."""

from treadle import _core, errors
from treadle.framework import graph_serialization
from treadle.framework.tensor import EagerTensor
from treadle.framework.variables import Variable


class SavedValueWriter:
    """Fills SavedCapture messages, adding each variable to `variables_field` once."""

    def __init__(self, variables_field):
        self._variables = variables_field
        self._index = {}  # id(Variable) -> position in variables_field

    def write(self, value, cap, what):
        """Records `value` (a td.Variable or an eager tensor) in SavedCapture `cap`."""
        if isinstance(value, Variable):
            if id(value) not in self._index:
                self._index[id(value)] = len(self._variables)
                sv = self._variables.add(name=value._name, trainable=value.trainable)
                graph_serialization.tensor_to_proto(value.read_value(), sv.value)
                graph_serialization.shape_to_proto(value.shape.dims, sv.shape)
            cap.variable = self._index[id(value)]
        elif type(value) is EagerTensor:
            graph_serialization.tensor_to_proto(value, cap.constant)
        else:
            raise TypeError(f"td.save: cannot save {what} {value!r}")


def decode_tensor(proto, where):
    """The tensor of a TensorProto a file holds; DataLossError naming `where`
    (the file and the entry) when it cannot be decoded."""
    try:
        return _core.tensor_from_proto_bytes(proto.SerializeToString())
    except (errors.OpError, ValueError, TypeError) as e:
        raise errors.DataLossError(None, None, f"{where} cannot be decoded: {e}") from None


def restore_variables(saved_variables, path):
    """New td.Variables with the saved values (each decoded first)."""
    values = [decode_tensor(sv.value, f"{path}: the value of variable {i} ('{sv.name}')")
              for i, sv in enumerate(saved_variables)]
    return [Variable(value, trainable=sv.trainable, name=sv.name or None)
            for value, sv in zip(values, saved_variables)]


def read_value(cap, variables, where):
    """The value a SavedCapture stands for; DataLossError naming `where` when it is malformed."""
    kind = cap.WhichOneof("kind")
    if kind == "variable":
        if not 0 <= cap.variable < len(variables):
            raise errors.DataLossError(None, None, f"{where} refers to variable {cap.variable} of {len(variables)}")
        return variables[cap.variable]
    if kind == "constant":
        return decode_tensor(cap.constant, f"{where}: its constant")
    raise errors.DataLossError(None, None, f"{where} has no value")
