// Dense linear algebra on batches of small square matrices (the last two
// dimensions): MatrixInverse, MatrixSolve and MatrixDeterminant by LU
// decomposition with partial pivoting, and Cholesky. Each matrix is computed
// in double precision whatever its dtype; a singular matrix (or one that is
// not positive definite, for Cholesky) is an InvalidArgumentError.
#include <cmath>
#include <utility>
#include <vector>

#include "ops/dispatch.h"
#include "ops/kernels/array_util.h"
#include "ops/op_helpers.h"
#include "ops/registry.h"
#include "util/errors.h"

namespace treadle {
namespace {

using Matrix = std::vector<double>;  // row-major n x n (or n x m for right-hand sides)

// The matrix dimension n of a [..., n, n] shape; throws for other shapes.
int64_t SquareDim(const char* op, const Dims& d) {
  if (d.size() < 2 || d[d.size() - 1] != d[d.size() - 2]) {
    ThrowInvalidArgument(op, ": input must be a batch of square matrices [..., n, n], got ", DimsToString(d));
  }
  return d.back();
}

PartialShape CheckSquare(const InferContext& c, int i) {
  const PartialShape& s = c.shapes[i];
  if (!s.known_rank) return s;
  if (s.rank() < 2) ThrowValueError(c.op.name, ": input must have rank >= 2, got ", s.ToString());
  const int64_t r = s.dims[s.rank() - 2], k = s.dims[s.rank() - 1];
  if (r != kUnknownDim && k != kUnknownDim && r != k) {
    ThrowValueError(c.op.name, ": input must be a batch of square matrices, got ", s.ToString());
  }
  return s;
}

// In-place LU factorization with partial pivoting. Returns false when singular;
// `perm` gets the row order and `sign` the permutation's sign.
bool Lu(Matrix& a, int64_t n, std::vector<int64_t>& perm, int& sign) {
  perm.resize(n);
  for (int64_t i = 0; i < n; ++i) perm[i] = i;
  sign = 1;
  for (int64_t k = 0; k < n; ++k) {
    int64_t p = k;
    for (int64_t i = k + 1; i < n; ++i) {
      if (std::abs(a[i * n + k]) > std::abs(a[p * n + k])) p = i;
    }
    if (a[p * n + k] == 0.0) return false;
    if (p != k) {
      for (int64_t j = 0; j < n; ++j) std::swap(a[k * n + j], a[p * n + j]);
      std::swap(perm[k], perm[p]);
      sign = -sign;
    }
    for (int64_t i = k + 1; i < n; ++i) {
      const double f = a[i * n + k] /= a[k * n + k];
      for (int64_t j = k + 1; j < n; ++j) a[i * n + j] -= f * a[k * n + j];
    }
  }
  return true;
}

// Solves LU x = P b for the m columns of b (row-major n x m), in place.
void LuSolve(const Matrix& lu, int64_t n, const std::vector<int64_t>& perm, Matrix& b, int64_t m) {
  Matrix x(n * m);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < m; ++j) x[i * m + j] = b[perm[i] * m + j];
  }
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t k = 0; k < i; ++k) {
      const double f = lu[i * n + k];
      for (int64_t j = 0; j < m; ++j) x[i * m + j] -= f * x[k * m + j];
    }
  }
  for (int64_t i = n - 1; i >= 0; --i) {
    for (int64_t k = i + 1; k < n; ++k) {
      const double f = lu[i * n + k];
      for (int64_t j = 0; j < m; ++j) x[i * m + j] -= f * x[k * m + j];
    }
    for (int64_t j = 0; j < m; ++j) x[i * m + j] /= lu[i * n + i];
  }
  b = std::move(x);
}

template <typename T>
Matrix Load(const T* p, int64_t count) {
  return Matrix(p, p + count);
}

template <typename T>
void Store(const Matrix& m, T* p) {
  for (size_t i = 0; i < m.size(); ++i) p[i] = static_cast<T>(m[i]);
}

// ---- MatrixInverse, MatrixDeterminant, Cholesky ------------------------------

enum class Unary { kInverse, kDeterminant, kCholesky };

template <typename T>
void RunUnary(KernelContext& ctx, Unary kind) {
  const Tensor& x = ctx.input(0);
  const int64_t n = SquareDim(ctx.op.name.c_str(), x.shape());
  const int64_t size = n * n, batch = size == 0 ? 0 : x.num_elements() / size;
  Dims out_shape = x.shape();
  if (kind == Unary::kDeterminant) out_shape.resize(out_shape.size() - 2);
  Tensor& out = ctx.allocate_output(0, out_shape);
  if (kind == Unary::kDeterminant && size == 0) {
    for (int64_t b = 0; b < out.num_elements(); ++b) out.data<T>()[b] = T(1);  // det of a 0 x 0 matrix
    return;
  }
  std::vector<int64_t> perm;
  for (int64_t b = 0; b < batch; ++b) {
    Matrix a = Load(x.data<T>() + b * size, size);
    if (kind == Unary::kCholesky) {
      Matrix l(size, 0.0);
      for (int64_t j = 0; j < n; ++j) {
        double d = a[j * n + j];
        for (int64_t k = 0; k < j; ++k) d -= l[j * n + k] * l[j * n + k];
        if (!(d > 0.0)) ThrowInvalidArgument("Cholesky decomposition was not successful. The input might not be valid.");
        l[j * n + j] = std::sqrt(d);
        for (int64_t i = j + 1; i < n; ++i) {
          double s = a[i * n + j];
          for (int64_t k = 0; k < j; ++k) s -= l[i * n + k] * l[j * n + k];
          l[i * n + j] = s / l[j * n + j];
        }
      }
      Store(l, out.data<T>() + b * size);
      continue;
    }
    int sign = 1;
    const bool regular = Lu(a, n, perm, sign);
    if (kind == Unary::kDeterminant) {
      double det = regular ? sign : 0.0;
      for (int64_t i = 0; regular && i < n; ++i) det *= a[i * n + i];
      out.data<T>()[b] = static_cast<T>(det);
      continue;
    }
    if (!regular) ThrowInvalidArgument("Input is not invertible.");
    Matrix eye(size, 0.0);
    for (int64_t i = 0; i < n; ++i) eye[i * n + i] = 1.0;
    LuSolve(a, n, perm, eye, n);
    Store(eye, out.data<T>() + b * size);
  }
}

OpDef MakeUnary(const char* name, Unary kind, const char* doc) {
  OpDef op;
  op.name = name;
  op.inputs = {{"input", false, "T", kFloatTypes}};
  op.outputs = {"output"};
  if (kind == Unary::kInverse) op.attrs = {{"adjoint", AttrType::kBool, AttrValue(false)}};
  op.dtype_fn = SameDTypeAsInput(0);
  op.shape_fn = [kind](const InferContext& c) {
    PartialShape s = CheckSquare(c, 0);
    if (kind == Unary::kDeterminant && s.known_rank) s.dims.resize(s.dims.size() - 2);
    return std::vector<PartialShape>{s};
  };
  op.kernel = [name, kind](KernelContext& ctx) {
    if (kind == Unary::kInverse && ctx.attrs.GetBool("adjoint")) {
      ThrowInvalidArgument("MatrixInverse: adjoint=True is not supported");
    }
    VisitFloat(ctx.input(0).dtype(), name, [&](auto tag) { RunUnary<typename decltype(tag)::type>(ctx, kind); });
  };
  op.doc = doc;
  return op;
}

// ---- MatrixSolve ------------------------------------------------------------

template <typename T>
void RunSolve(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& rhs = ctx.input(1);
  const int64_t n = SquareDim("MatrixSolve", a.shape());
  if (rhs.rank() != a.rank() || rhs.dim(rhs.rank() - 2) != n ||
      !std::equal(a.shape().begin(), a.shape().end() - 2, rhs.shape().begin())) {
    ThrowInvalidArgument("MatrixSolve: rhs must have shape [..., ", n, ", m] with the batch dimensions of matrix ",
                         DimsToString(a.shape()), ", got ", DimsToString(rhs.shape()));
  }
  const int64_t m = rhs.dim(rhs.rank() - 1), size = n * n;
  const int64_t batch = DimProduct(a.shape(), 0, a.rank() - 2);
  Tensor& out = ctx.allocate_output(0, rhs.shape());
  std::vector<int64_t> perm;
  for (int64_t b = 0; b < batch; ++b) {
    Matrix lu = Load(a.data<T>() + b * size, size);
    int sign = 1;
    if (!Lu(lu, n, perm, sign)) ThrowInvalidArgument("Input matrix is not invertible.");
    Matrix x = Load(rhs.data<T>() + b * n * m, n * m);
    LuSolve(lu, n, perm, x, m);
    Store(x, out.data<T>() + b * n * m);
  }
}

OpDef MakeSolve() {
  OpDef op;
  op.name = "MatrixSolve";
  op.inputs = {{"matrix", false, "T", kFloatTypes}, {"rhs", false, "T", kFloatTypes}};
  op.outputs = {"output"};
  op.attrs = {{"adjoint", AttrType::kBool, AttrValue(false)}};
  op.dtype_fn = SameDTypeAsInput(0);
  op.shape_fn = [](const InferContext& c) {
    CheckSquare(c, 0);
    return std::vector<PartialShape>{c.shapes[1]};
  };
  op.kernel = [](KernelContext& ctx) {
    if (ctx.attrs.GetBool("adjoint")) ThrowInvalidArgument("MatrixSolve: adjoint=True is not supported");
    VisitFloat(ctx.input(0).dtype(), "MatrixSolve", [&](auto tag) { RunSolve<typename decltype(tag)::type>(ctx); });
  };
  op.doc = "X with matrix @ X = rhs, for each matrix of the batch.";
  return op;
}

OpRegistrar inverse_op(MakeUnary("MatrixInverse", Unary::kInverse, "The inverse of each square matrix."));
OpRegistrar determinant_op(MakeUnary("MatrixDeterminant", Unary::kDeterminant,
                                     "The determinant of each square matrix."));
OpRegistrar cholesky_op(MakeUnary("Cholesky", Unary::kCholesky,
                                  "The lower-triangular L with L @ L^T = input, for each symmetric positive definite "
                                  "matrix (only its lower triangle is read)."));
OpRegistrar solve_op(MakeSolve());

}  // namespace
}  // namespace treadle
