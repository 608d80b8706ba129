// MatMul (rank 2, TensorFlow's transpose_a/transpose_b) and BatchMatMulV2
// (rank >= 2 with broadcast batch dimensions). Floating point goes to BLAS
// (scipy-openblas32); integers use a plain triple loop.
#include <cblas.h>

#include <algorithm>
#include <type_traits>

#include "ops/narrow_types.h"
#include "ops/dispatch.h"
#include "ops/op_helpers.h"
#include "util/parallel.h"

namespace treadle {
namespace {

// C[m,n] = op(A) op(B) for row-major A, B with leading dimensions lda, ldb, ldc.
void Gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
          float* c, int64_t ldc) {
  scipy_cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                    static_cast<blasint>(m), static_cast<blasint>(n), static_cast<blasint>(k), 1.0f, a,
                    static_cast<blasint>(lda), b, static_cast<blasint>(ldb), 0.0f, c, static_cast<blasint>(ldc));
}
void Gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda, const double* b,
          int64_t ldb, double* c, int64_t ldc) {
  scipy_cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                    static_cast<blasint>(m), static_cast<blasint>(n), static_cast<blasint>(k), 1.0, a,
                    static_cast<blasint>(lda), b, static_cast<blasint>(ldb), 0.0, c, static_cast<blasint>(ldc));
}

// BLAS runs single-threaded (util/parallel.h): a large product is split
// into blocks of C's rows, or of its columns when it has few rows, one
// single-threaded BLAS call per thread of treadle's pool. (OpenBLAS's own
// threads would spin between calls on the cores the pool works on.)
template <typename T>
void ParallelGemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, const T* b, T* c) {
  const int64_t lda = ta ? m : k, ldb = tb ? k : n;
  constexpr int64_t kMinParallelMacs = int64_t{1} << 18, kMinBlock = 16;
  const int threads = parallel::NumThreads();
  const bool by_rows = m >= n || m >= threads * kMinBlock;
  const int64_t extent = by_rows ? m : n;
  const int parts = static_cast<int>(std::min<int64_t>(threads, extent / kMinBlock));
  if (parts < 2 || m * n * k < kMinParallelMacs) {
    Gemm(ta, tb, m, n, k, a, lda, b, ldb, c, n);
    return;
  }
  parallel::ParallelFor(parts, [&](int p) {
    const parallel::Range r = parallel::Part(extent, p, parts);
    const int64_t first = r.begin, count = r.end - r.begin;
    if (by_rows) {
      Gemm(ta, tb, count, n, k, a + (ta ? first : first * lda), lda, b, ldb, c + first * n, n);
    } else {
      Gemm(ta, tb, m, count, k, a, lda, b + (tb ? first * ldb : first), ldb, c + first, n);
    }
  });
}

// Integers: i-p-j order, so the inner loop walks a row of C (and of B when it
// is not transposed) contiguously. Unsigned arithmetic wraps like TensorFlow's.
template <typename T>
void Gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, const T* b, T* c) {
  using U = std::make_unsigned_t<T>;
  for (int64_t i = 0; i < m; ++i) {
    U* crow = reinterpret_cast<U*>(c + i * n);
    std::fill(crow, crow + n, U(0));
    for (int64_t p = 0; p < k; ++p) {
      const U aip = static_cast<U>(ta ? a[p * m + i] : a[i * k + p]);
      if (tb) {
        for (int64_t j = 0; j < n; ++j) crow[j] += aip * static_cast<U>(b[j * k + p]);
      } else {
        const T* brow = b + p * n;
        for (int64_t j = 0; j < n; ++j) crow[j] += aip * static_cast<U>(brow[j]);
      }
    }
  }
}

template <typename T>
void GemmChecked(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, const T* b, T* c) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (int64_t i = 0; i < m * n; ++i) c[i] = 0;
    return;
  }
  constexpr int64_t kBlasLimit = int64_t{1} << 31;
  if (m >= kBlasLimit || n >= kBlasLimit || k >= kBlasLimit) {
    ThrowInvalidArgument("MatMul: dimensions must be below 2^31 for BLAS, got m=", m, " n=", n, " k=", k);
  }
  if constexpr (std::is_floating_point_v<T>) {
    ParallelGemm(ta, tb, m, n, k, a, b, c);
  } else {
    Gemm(ta, tb, m, n, k, a, b, c);
  }
}

// Shape of MatMul/BatchMatMul output; `adj_*` transpose the last two dims.
PartialShape MatMulShape(const OpDef& op, const PartialShape& a, const PartialShape& b, bool ta, bool tb,
                         bool batched) {
  if (!a.known_rank || !b.known_rank) return PartialShape::Unknown();
  int ra = a.rank(), rb = b.rank();
  if (!batched && (ra != 2 || rb != 2)) {
    ThrowValueError(op.name, ": inputs must be 2-D, got shapes ", a.ToString(), " and ", b.ToString());
  }
  if (ra < 2 || rb < 2) {
    ThrowValueError(op.name, ": inputs must have rank >= 2, got shapes ", a.ToString(), " and ", b.ToString());
  }
  int64_t m = ta ? a.dims[ra - 1] : a.dims[ra - 2];
  int64_t ka = ta ? a.dims[ra - 2] : a.dims[ra - 1];
  int64_t kb = tb ? b.dims[rb - 1] : b.dims[rb - 2];
  int64_t n = tb ? b.dims[rb - 2] : b.dims[rb - 1];
  if (ka >= 0 && kb >= 0 && ka != kb) {
    ThrowValueError("Matrix size-incompatible: In[0]: ", DimsToString(a.dims), ", In[1]: ", DimsToString(b.dims),
                    " (", op.name, ")");
  }
  PartialShape batch_a(Dims(a.dims.begin(), a.dims.end() - 2));
  PartialShape batch_b(Dims(b.dims.begin(), b.dims.end() - 2));
  PartialShape out = BroadcastPartial(batch_a, batch_b);
  out.dims.push_back(m);
  out.dims.push_back(n);
  return out;
}

OpDef MakeMatMul(const char* name, bool batched) {
  OpDef op;
  op.name = name;
  op.inputs = {{batched ? "x" : "a", false, "T", kNumericTypes}, {batched ? "y" : "b", false, "T", kNumericTypes}};
  op.outputs = {"product"};
  const char* ta_name = batched ? "adj_x" : "transpose_a";
  const char* tb_name = batched ? "adj_y" : "transpose_b";
  op.attrs = {{ta_name, AttrType::kBool, AttrValue(false)}, {tb_name, AttrType::kBool, AttrValue(false)}};
  op.dtype_fn = SameDTypeAsInput(0);
  op.shape_fn = [batched, ta_name, tb_name](const InferContext& c) {
    return std::vector<PartialShape>{MatMulShape(c.op, c.shapes[0], c.shapes[1], c.attrs.GetBool(ta_name),
                                                 c.attrs.GetBool(tb_name), batched)};
  };
  op.kernel = [ta_name, tb_name](KernelContext& ctx) {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    bool ta = ctx.attrs.GetBool(ta_name), tb = ctx.attrs.GetBool(tb_name);
    Tensor& out = ctx.allocate_output(0);
    int ra = a.rank(), rb = b.rank(), ro = out.rank();
    int64_t m = out.dim(ro - 2), n = out.dim(ro - 1);
    int64_t k = ta ? a.dim(ra - 2) : a.dim(ra - 1);
    int64_t a_mat = a.dim(ra - 2) * a.dim(ra - 1), b_mat = b.dim(rb - 2) * b.dim(rb - 1);
    int64_t batches = m * n == 0 ? 0 : out.num_elements() / (m * n);
    // Batch index -> offset in a and b, honouring broadcast batch dims.
    Dims out_batch(out.shape().begin(), out.shape().end() - 2);
    Dims a_batch(a.shape().begin(), a.shape().end() - 2), b_batch(b.shape().begin(), b.shape().end() - 2);
    VisitNumeric(a.dtype(), "MatMul", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* pa = a.data<T>();
      const T* pb = b.data<T>();
      T* pc = out.data<T>();
      for (int64_t bi = 0; bi < batches; ++bi) {
        int64_t ia = 0, ib = 0, rem = bi, sa = 1, sb = 1;
        for (int d = static_cast<int>(out_batch.size()) - 1; d >= 0; --d) {
          int64_t idx = rem % out_batch[d];
          rem /= out_batch[d];
          int da = d - (static_cast<int>(out_batch.size()) - static_cast<int>(a_batch.size()));
          int db = d - (static_cast<int>(out_batch.size()) - static_cast<int>(b_batch.size()));
          if (da >= 0) {
            if (a_batch[da] != 1) ia += idx * sa;
            sa *= a_batch[da];
          }
          if (db >= 0) {
            if (b_batch[db] != 1) ib += idx * sb;
            sb *= b_batch[db];
          }
        }
        GemmChecked(ta, tb, m, n, k, pa + ia * a_mat, pb + ib * b_mat, pc + bi * m * n);
      }
    });
  };
  return WithNarrowTypes(std::move(op), kHalfTypes);
}

OpRegistrar matmul_op(MakeMatMul("MatMul", false));
OpRegistrar batch_matmul_op(MakeMatMul("BatchMatMulV2", true));

}  // namespace
}  // namespace treadle
