// Data parallelism for the runtime's own loops: a pool of worker threads
// sized to the BLAS thread budget, and a way to make BLAS single-threaded
// while the caller parallelises at a coarser grain (two single-threaded
// GEMMs on halves of a batch, with their elementwise work, beat one
// two-threaded GEMM followed by serial elementwise work).
#pragma once

#include <functional>

namespace treadle::parallel {

// The threads treadle's parallel loops use: BLAS's thread count when first
// asked (OPENBLAS_NUM_THREADS, else the machine's cores), at least 1.
int NumThreads();

// Runs fn(0) ... fn(n - 1), on the pool's workers and the calling thread,
// and returns when all have finished; rethrows the first exception any of
// them threw. Runs serially when n < 2, when there are no workers, or when
// another thread's ParallelFor holds the pool.
void ParallelFor(int n, const std::function<void(int)>& fn);

// While one is alive (on any thread), BLAS runs single-threaded; the BLAS
// thread count is restored when the last one ends.
class SingleThreadedBlas {
 public:
  SingleThreadedBlas();
  ~SingleThreadedBlas();
  SingleThreadedBlas(const SingleThreadedBlas&) = delete;
  SingleThreadedBlas& operator=(const SingleThreadedBlas&) = delete;
};

}  // namespace treadle::parallel
