"""td.linalg: products, transposes, diagonals, identity matrices and norms
from existing ops, and inv, solve, det and cholesky on their own kernels
(MatrixInverse, MatrixSolve, MatrixDeterminant, Cholesky)."""

from treadle.framework import dtypes
from treadle.framework.op_execution import execute
from treadle.framework.tensor import convert_to_tensor
from treadle.ops import array_ops, math_ops
from treadle.ops.array_ops import _tensor
from treadle.ops.math_extra_ops import norm  # noqa: F401 (td.linalg.norm)

_ops = math_ops.OPERATOR_FUNCTIONS


def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False, name=None):
    """a @ b (batched over leading dimensions); adjoint is transpose for real tensors."""
    return math_ops.matmul(a, b, transpose_a=transpose_a or adjoint_a, transpose_b=transpose_b or adjoint_b,
                           name=name)


def matrix_transpose(a, name="matrix_transpose", conjugate=False):
    """a with its last two dimensions swapped."""
    a = _tensor(a)
    rank = a.shape.rank
    if rank is None:
        raise ValueError("td.linalg.matrix_transpose: the rank of a must be known")
    if rank < 2:
        raise ValueError(f"td.linalg.matrix_transpose: a must have rank >= 2, got shape {a.shape}")
    perm = list(range(rank - 2)) + [rank - 1, rank - 2]
    return array_ops.transpose(a, perm)


def matvec(a, b, transpose_a=False, adjoint_a=False, name=None):
    """a @ b for matrices a [..., M, N] and vectors b [..., N]."""
    b = _tensor(b)
    product = matmul(a, array_ops.expand_dims(b, -1), transpose_a=transpose_a, adjoint_a=adjoint_a)
    return array_ops.squeeze(product, axis=[-1])


def _eye_mask(num_rows, num_columns):
    rows = array_ops._range(0, num_rows, 1)
    cols = array_ops._range(0, num_columns, 1)
    return _ops["equal"](array_ops.expand_dims(rows, -1), array_ops.expand_dims(cols, 0))


def eye(num_rows, num_columns=None, batch_shape=None, dtype=dtypes.float32, name=None):
    """The identity matrix [num_rows, num_columns] (square by default), repeated over batch_shape."""
    num_columns = num_rows if num_columns is None else num_columns
    out = math_ops.cast(_eye_mask(num_rows, num_columns), dtype)
    if batch_shape is not None:
        shape = list(batch_shape) + [1, 1]
        out = _ops["multiply"](out, array_ops.ones(shape, dtype=dtype))
    return out


def diag(diagonal, name="diag"):
    """The [..., N, N] matrices with `diagonal` [..., N] on their diagonals and zeros elsewhere."""
    d = _tensor(diagonal)
    n = array_ops.shape(d)[-1]
    mask = math_ops.cast(_eye_mask(n, n), d.dtype)
    return _ops["multiply"](array_ops.expand_dims(d, -1), mask)


def diag_part(input, name="diag_part", k=0):  # noqa: A002 (TensorFlow's argument name)
    """The main diagonals [..., min(M, N)] of matrices [..., M, N]."""
    if k != 0:
        raise NotImplementedError("td.linalg.diag_part: only the main diagonal (k=0) is supported")
    m = _tensor(input)
    shape = array_ops.shape(m)
    rows, cols = shape[-2], shape[-1]
    size = math_ops.reduce_min(array_ops.stack([rows, cols]))
    square = m[..., :size, :size]
    mask = math_ops.cast(_eye_mask(size, size), m.dtype)
    return math_ops.reduce_sum(_ops["multiply"](square, mask), axis=-1)


def trace(x, name=None):
    """The sum of the main diagonal of each matrix."""
    return math_ops.reduce_sum(diag_part(x), axis=-1, name=name)


def adjoint(matrix, name=None):
    """The conjugate transpose of each matrix: the transpose, for treadle's real dtypes."""
    return matrix_transpose(matrix)

def inv(input, adjoint=False, name=None):  # noqa: A002 (TensorFlow's argument name)
    """The inverse of each square matrix (InvalidArgumentError when one is singular)."""
    m = _tensor(input)
    if adjoint:
        m = matrix_transpose(m)
    return execute("MatrixInverse", [m], name=name)[0]


def solve(matrix, rhs, adjoint=False, name=None):
    """X with matrix @ X = rhs (matrix [..., n, n], rhs [..., n, m])."""
    m = _tensor(matrix)
    if adjoint:
        m = matrix_transpose(m)
    return execute("MatrixSolve", [m, convert_to_tensor(rhs, dtype_hint=m.dtype)], name=name)[0]


def det(input, name=None):  # noqa: A002
    """The determinant of each square matrix."""
    return execute("MatrixDeterminant", [_tensor(input)], name=name)[0]


def cholesky(input, name=None):  # noqa: A002
    """The lower-triangular Cholesky factor of each symmetric positive definite matrix."""
    return execute("Cholesky", [_tensor(input)], name=name)[0]


PUBLIC = {"linalg": ["matmul", "matrix_transpose", "matvec", "eye", "diag", "diag_part", "trace", "adjoint",
                     "norm", "inv", "solve", "det", "cholesky"],
          "": ["eye"]}
