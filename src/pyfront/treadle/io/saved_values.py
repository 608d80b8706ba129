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


def restore_variables(saved_variables):
    """New td.Variables with the saved values."""
    return [Variable(_core.tensor_from_proto_bytes(sv.value.SerializeToString()), trainable=sv.trainable,
                     name=sv.name or None) for sv in saved_variables]


def read_value(cap, variables, where):
    """The value a SavedCapture stands for; DataLossError naming `where` when it is malformed."""
    kind = cap.WhichOneof("kind")
    if kind == "variable":
        if not 0 <= cap.variable < len(variables):
            raise errors.DataLossError(None, None, f"{where} refers to variable {cap.variable} of {len(variables)}")
        return variables[cap.variable]
    if kind == "constant":
        return _core.tensor_from_proto_bytes(cap.constant.SerializeToString())
    raise errors.DataLossError(None, None, f"{where} has no value")
