#include "tensor/buffer.h"

#include <cstdlib>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "tensor/handle.h"

namespace treadle {

namespace {
constexpr size_t kAlignment = 64;
constexpr size_t kSmallBuffer = 256;

// Large blocks are kept for reuse instead of going back to the system: a
// fresh large allocation is an mmap whose every page faults on first touch,
// which costs more than the arithmetic of a big elementwise op. Blocks come in
// size classes of 1/8 powers of two; at most kCacheLimit bytes are held.
constexpr size_t kCachedFrom = size_t{64} << 10;
constexpr size_t kCacheLimit = size_t{512} << 20;

size_t SizeClass(size_t nbytes) {
  size_t top = size_t{1} << (63 - __builtin_clzll(nbytes));
  size_t step = top >> 3;
  return (nbytes + step - 1) / step * step;
}

class LargeBlockCache {
 public:
  void* Take(size_t cls) {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = blocks_.size(); i-- > 0;) {
      if (blocks_[i].second == cls) {
        void* p = blocks_[i].first;
        blocks_[i] = blocks_.back();
        blocks_.pop_back();
        held_ -= cls;
        return p;
      }
    }
    return nullptr;
  }
  // Keeps the block if there is room; returns false when the caller must free it.
  bool Give(void* p, size_t cls) {
    std::lock_guard<std::mutex> lock(mu_);
    if (held_ + cls > kCacheLimit || blocks_.size() >= 256) return false;
    blocks_.emplace_back(p, cls);
    held_ += cls;
    return true;
  }

 private:
  std::mutex mu_;
  std::vector<std::pair<void*, size_t>> blocks_;
  size_t held_ = 0;
};

LargeBlockCache& Cache() {
  static auto* cache = new LargeBlockCache();  // never destroyed: buffers may die at exit
  return *cache;
}

// Small blocks (up to kSmallBuffer bytes, in classes of kAlignment bytes) are
// kept per thread for reuse: they are the per-op overhead of eager code and
// graphs, and aligned_alloc costs several times malloc. They are 64-byte
// aligned too, like every buffer treadle owns: DLPack consumers such as JAX
// copy anything less aligned instead of sharing it.
constexpr size_t kSmallClasses = kSmallBuffer / kAlignment;
constexpr int kSmallCacheDepth = 32;

struct SmallBlockCache {
  void* blocks[kSmallClasses][kSmallCacheDepth];
  int count[kSmallClasses] = {};
  ~SmallBlockCache();
};

// Set when this thread's cache is gone (thread exit): later frees go to the system.
thread_local bool small_cache_dead = false;
thread_local SmallBlockCache small_cache;

SmallBlockCache::~SmallBlockCache() {
  small_cache_dead = true;
  for (size_t c = 0; c < kSmallClasses; ++c) {
    for (int i = 0; i < count[c]; ++i) std::free(blocks[c][i]);
    count[c] = 0;
  }
}

size_t SmallClass(size_t nbytes) { return nbytes ? (nbytes - 1) / kAlignment : 0; }

// The one place memory comes from the system: never returns null, so no null
// block can reach a caller, or through FreeBytes, a cache.
void* SystemAlloc(size_t nbytes) {
  void* p = std::aligned_alloc(kAlignment, nbytes);
  if (!p) throw std::bad_alloc();
  return p;
}

void* AllocateBytes(size_t nbytes) {
  if (nbytes <= kSmallBuffer) {
    size_t c = SmallClass(nbytes);
    if (!small_cache_dead) {
      SmallBlockCache& cache = small_cache;
      if (cache.count[c] > 0) return cache.blocks[c][--cache.count[c]];
    }
    return SystemAlloc((c + 1) * kAlignment);
  }
  if (nbytes >= kCachedFrom) {
    size_t cls = SizeClass(nbytes);
    if (void* p = Cache().Take(cls)) return p;
    return SystemAlloc(cls);
  }
  // aligned_alloc wants a multiple of the alignment.
  return SystemAlloc((nbytes + kAlignment - 1) / kAlignment * kAlignment);
}

// Null (a buffer whose allocation failed, or that never had one) is not a
// block: it is neither cached nor freed.
void FreeBytes(void* p, size_t nbytes) {
  if (!p) return;
  if (nbytes <= kSmallBuffer) {
    if (!small_cache_dead) {
      SmallBlockCache& cache = small_cache;
      size_t c = SmallClass(nbytes);
      if (cache.count[c] < kSmallCacheDepth) {
        cache.blocks[c][cache.count[c]++] = p;
        return;
      }
    }
    std::free(p);
    return;
  }
  if (nbytes >= kCachedFrom && Cache().Give(p, SizeClass(nbytes))) return;
  std::free(p);
}
}  // namespace

std::shared_ptr<Buffer> Buffer::Allocate(DType dtype, int64_t count) {
  size_t nbytes = static_cast<size_t>(count) * DTypeSize(dtype);
  std::unique_ptr<Buffer> b(new Buffer());
  b->data_ = AllocateBytes(nbytes);  // throws before b owns anything
  b->nbytes_ = nbytes;
  b->dtype_ = dtype;
  b->count_ = count;
  if (dtype == DType::kString) {
    auto* s = static_cast<std::string*>(b->data_);
    for (int64_t i = 0; i < count; ++i) new (s + i) std::string();
  } else if (IsHandle(dtype)) {
    auto* h = static_cast<Handle*>(b->data_);
    for (int64_t i = 0; i < count; ++i) new (h + i) Handle();
  }
  return std::shared_ptr<Buffer>(std::move(b));
}

std::shared_ptr<Buffer> Buffer::Wrap(void* data, size_t nbytes, std::function<void()> release) {
  std::shared_ptr<Buffer> b(new Buffer());
  b->data_ = data;
  b->nbytes_ = nbytes;
  b->release_ = release ? std::move(release) : [] {};
  return b;
}

Buffer::~Buffer() {
  if (release_) {
    release_();
    return;
  }
  if (dtype_ == DType::kString) {
    auto* s = static_cast<std::string*>(data_);
    for (int64_t i = 0; i < count_; ++i) s[i].~basic_string();
  } else if (IsHandle(dtype_)) {
    auto* h = static_cast<Handle*>(data_);
    for (int64_t i = 0; i < count_; ++i) h[i].~Handle();
  }
  FreeBytes(data_, nbytes_);
}

}  // namespace treadle
