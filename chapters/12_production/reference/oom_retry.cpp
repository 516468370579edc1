// Exercise 12.2 — allocating a batch that degrades instead of dying (ch12.hpp).
//
// A server that meets cudaErrorMemoryAllocation has three moves before it must refuse work: give
// back what this attempt already took (or the next attempt fails for memory it holds itself), hand
// the allocator's cached blocks back to the device (a stream-ordered pool keeps freed memory
// reserved: cudaMemPoolTrimTo), then ask for less (halve the batch). The drill (apps/oom_drill.cpp)
// runs this against the real GPU and checks that free memory after equals free memory before.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ch12/ch12.hpp"
#include "cudalab/check.hpp"

namespace cudalab::ch12 {

BatchAllocation::BatchAllocation(Allocator& a, std::vector<void*> blocks, std::uint64_t batch,
                                 int attempts, bool trimmed)
    : alloc_(&a),
      blocks_(std::move(blocks)),
      batch_(batch),
      attempts_(attempts),
      trimmed_(trimmed) {}

BatchAllocation::BatchAllocation(BatchAllocation&& o) noexcept
    : alloc_(std::exchange(o.alloc_, nullptr)),
      blocks_(std::exchange(o.blocks_, {})),
      batch_(std::exchange(o.batch_, 0)),
      attempts_(o.attempts_),
      trimmed_(o.trimmed_) {}

BatchAllocation& BatchAllocation::operator=(BatchAllocation&& o) noexcept {
  if (this != &o) {
    release();
    alloc_ = std::exchange(o.alloc_, nullptr);
    blocks_ = std::exchange(o.blocks_, {});
    batch_ = std::exchange(o.batch_, 0);
    attempts_ = o.attempts_;
    trimmed_ = o.trimmed_;
  }
  return *this;
}

BatchAllocation::~BatchAllocation() {
  release();
}

void BatchAllocation::release() noexcept {
  if (alloc_ != nullptr)
    for (void* p : blocks_) alloc_->deallocate(p);
  blocks_.clear();
  batch_ = 0;
}

namespace {

// One attempt: the fixed block, then one block per sequence. Returns the blocks when all fit;
// otherwise frees what it took and returns an empty vector.
std::vector<void*> try_batch(Allocator& alloc, const BatchRequest& r, std::uint64_t batch) {
  std::vector<void*> blocks;
  blocks.reserve(static_cast<std::size_t>(batch) + 1);
  // BEGIN EXERCISE 12.2
  // TODO(12.2): allocate r.fixed_bytes (when > 0), then batch blocks of r.bytes_per_item. The
  // moment one returns nullptr, deallocate every block of this attempt and return {}.
  // STARTER: (void)alloc; (void)r; (void)batch;
  const auto take = [&](std::size_t bytes) {
    void* p = alloc.allocate(bytes);
    if (p != nullptr) blocks.push_back(p);
    return p != nullptr;
  };
  bool ok = r.fixed_bytes == 0 || take(r.fixed_bytes);
  for (std::uint64_t i = 0; ok && i < batch; ++i) ok = take(r.bytes_per_item);
  if (!ok) {
    // BEGIN PITFALL retry_keeps_partial_blocks EXERCISES 12.2
    // A failed attempt that keeps its blocks: the retry then competes with memory it holds itself
    // (the smaller batch fails too) and the drill's free-after differs from free-before: a leak
    // per OOM. Symptom: Retry.FailedAttemptGivesEverythingBack fails (bytes still in use).
    for (void* p : blocks) alloc.deallocate(p);
    // BUG: (void)0;
    // END PITFALL
    blocks.clear();
  }
  // END EXERCISE
  return blocks;
}

}  // namespace

BatchAllocation allocate_batch(Allocator& alloc, const BatchRequest& r) {
  require(r.min_batch > 0 && r.batch >= r.min_batch, "request",
          "needs 0 < min_batch <= batch (got batch " + std::to_string(r.batch) + ", min_batch " +
              std::to_string(r.min_batch) + ")");
  int attempts = 0;
  bool trimmed = false;
  std::uint64_t batch = r.batch;
  for (;;) {
    ++attempts;
    std::vector<void*> blocks = try_batch(alloc, r, batch);
    if (!blocks.empty()) return {alloc, std::move(blocks), batch, attempts, trimmed};
    if (!trimmed) {  // first failure: cached memory may be what is missing; same batch again
      alloc.trim();
      trimmed = true;
      continue;
    }
    if (batch == r.min_batch)
      throw OutOfMemory("allocate_batch: not even min_batch = " + std::to_string(r.min_batch) +
                        " sequences of " + std::to_string(r.bytes_per_item) + " bytes (+ " +
                        std::to_string(r.fixed_bytes) + " fixed) fit, after a trim and " +
                        std::to_string(attempts) + " attempts");
    batch = batch / 2 < r.min_batch ? r.min_batch : batch / 2;
  }
}

}  // namespace cudalab::ch12
