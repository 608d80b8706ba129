"""The per-example tensors of td.loom.autobatch: inside the per-example
function, a value a recorded op or cell call will compute. Ops on them are
recorded (execute() hands an op with such an input to its `graph`, the
recorder); reading one suspends its example until the batch computes it."""

import numpy as np

from treadle.framework.tensor import Tensor, _TensorRef
from treadle.framework.tensor_shape import TensorShape

# Where a value comes from (its `src`, a tuple whose first entry is one of these):
PENDING = 0   # (PENDING, node of the current round, output index, the round, argument code): not computed yet
STORED = 1    # (STORED, type shape, row, argument code): computed by an earlier round, a row of the store
CONSTANT = 2  # not a value's source: the rows of eager tensors (constants) an op reads, by type shape
VAR_ROW = 3   # (VAR_ROW, type shape, variable, row): a row of a variable (td.gather(variable, id))
VARIABLE = 4  # (VARIABLE, variable): a variable read inside the function (shared by every example)
CONST_ROW = 5  # (CONST_ROW, type shape, NumPy value): a td.constant made inside an example, a row of a batch input

# A node's argument is recorded as one int (decoded once per round, by
# rounds.decode_arguments): output `k` of node `n` is n << 8 | k (>= 0);
# row `r` of a batch input is -1 - (r << 16 | g + 1), `g` the group its
# rows are numbered in (-1: the store, whose rows are final).
MAX_OUTPUTS = 256
MAX_GROUPS = 0xFFFF - 1


def row_code(row, group=-1):
    return -1 - ((row << 16) | (group + 1))


class ValueMethods(Tensor):
    """What a Value (_record.Value: these methods over its C fields) does
    as a tensor of one example inside td.loom.autobatch: it has a dtype and
    a static shape; its value is known once the batch has computed it."""

    __slots__ = ()

    @property
    def dtype(self):
        return self._dtype

    @property
    def shape(self):
        return TensorShape(self._shape_tuple_)

    def get_shape(self):
        return self.shape

    @property
    def ndim(self):
        return len(self._shape_tuple_)

    @property
    def name(self):
        return f"autobatch_value_{id(self):x}"

    def __repr__(self):
        owner = "shared" if self._example is None else f"example {self._example}"
        return f"<td.loom.autobatch value ({owner}) shape={self.shape} dtype={self._dtype.name}>"

    __str__ = __repr__

    def __hash__(self):
        raise TypeError("Tensor is unhashable. Instead, use tensor.ref() as the key.")

    def ref(self):
        return _TensorRef(self)

    __array_priority__ = 100  # NumPy operators defer to the tensor's

    # -------------------------------------------------- reading the value
    def numpy(self):
        value = self.graph.read(self)
        return value.copy() if value.ndim else value[()]

    def __array__(self, dtype=None, copy=None):
        value = self.graph.read(self)
        return value.astype(dtype) if dtype is not None else value

    def __bool__(self):
        value = self.graph.read(self)
        if value.size != 1:
            raise ValueError("The truth value of a tensor with more than one element is ambiguous. "
                             "Use a.any() or a.all()" if value.size > 1 else
                             "The truth value of an empty tensor is ambiguous.")
        return bool(value.reshape(()))

    def __float__(self):
        value = self.graph.read(self)  # a NumPy scalar when the value is a scalar (a decoder's probability)
        return float(value if isinstance(value, np.generic) else value.reshape(()))

    def __int__(self):
        return int(self.graph.read(self).reshape(()))

    def __index__(self):
        if not self._dtype.is_integer or self._shape_tuple_:
            raise TypeError(f"Only scalar integer tensors can be used as an index, got {self._dtype.name} "
                            f"of shape {self.shape}")
        return int(self.graph.read(self).reshape(()))

    def __len__(self):
        if not self._shape_tuple_:
            raise TypeError("len() of unsized object: scalar tensor")
        return self._shape_tuple_[0]

