"""Where the per-example tensors of td.loom.autobatch (_record.Value) come
from: inside the per-example function, a value a recorded op or cell call
will compute, a row of a variable or of the store, a constant. Ops on them
are recorded (execute() hands an op with such an input to its `graph`, the
recorder); reading one suspends its example until the batch computes it."""

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
