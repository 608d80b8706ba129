// Data parallelism: one pool of worker threads for all of treadle's parallel
// work, sized to the BLAS thread budget. BLAS itself runs single-threaded
// from then on (NumThreads sets it so): the matmul kernel splits large
// products over the pool, and the Loom runs chunks of a batch, each with its
// GEMMs and elementwise work, on it. A second set of threads, OpenBLAS's,
// would spin after each call on the very cores the pool works on.
#pragma once

#include <cstdint>
#include <functional>

namespace treadle::parallel {

// The threads treadle's parallel loops use: BLAS's thread count when first
// asked (OPENBLAS_NUM_THREADS, else the machine's cores), at least 1. The
// first call makes BLAS single-threaded.
int NumThreads();

// Runs fn(0) ... fn(n - 1), on the pool's workers and the calling thread,
// and returns when all have finished; rethrows the first exception any of
// them threw. Runs serially when n < 2, when there are no workers, or when
// another thread's ParallelFor holds the pool.
void ParallelFor(int n, const std::function<void(int)>& fn);

// How many parts to split `work` units into: one below `min_work` (too
// little to repay waking the pool), else one per thread.
int PartsFor(int64_t work, int64_t min_work);

// Part i of `parts` of [0, extent): contiguous, in order, together covering
// it, as even as possible. With `align`, every boundary but the last is a
// multiple of it (slices of rows that start on cache lines; the last parts
// may then be short or empty).
struct Range {
  int64_t begin, end;
};
Range Part(int64_t extent, int i, int parts, int64_t align = 1);

}  // namespace treadle::parallel
