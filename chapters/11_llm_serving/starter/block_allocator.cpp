// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/11_llm_serving/reference/block_allocator.cpp by scripts/variants.py.)
// Exercise 11.1 — the paged KV block allocator (block_allocator.hpp).
//
// Why paged: a contiguous cache must reserve the longest possible sequence for every request,
// and the unused tail is lost (vLLM measured 60-80% of KV memory wasted that way). Blocks of a few
// tokens, mapped by a per-sequence table like a page table, waste at most block_size - 1 tokens per
// sequence, and let sequences share a prefix by pointing at the same blocks.
#include "ch11/block_allocator.hpp"

#include <algorithm>
#include <string>

#include "cudalab/check.hpp"

namespace cudalab::ch11 {

BlockAllocator::BlockAllocator(int num_blocks, int block_size)
    : num_blocks_(num_blocks), block_size_(block_size) {
  require(num_blocks > 0, "num_blocks", "must be positive");
  require(block_size > 0, "block_size", "must be positive");
  refs_.assign(static_cast<std::size_t>(num_blocks), 0);
  free_.reserve(static_cast<std::size_t>(num_blocks));
  for (int b = num_blocks - 1; b >= 0; --b) free_.push_back(b);  // block 0 is handed out first
}

int BlockAllocator::blocks_for(std::size_t tokens) const {
  return static_cast<int>((tokens + static_cast<std::size_t>(block_size_) - 1) /
                          static_cast<std::size_t>(block_size_));
}

BlockAllocator::Seq& BlockAllocator::seq(SeqId id, const char* argument) {
  const auto it = seqs_.find(id);
  if (it == seqs_.end()) throw_invalid_argument(argument, "no sequence " + std::to_string(id));
  return it->second;
}
const BlockAllocator::Seq& BlockAllocator::seq(SeqId id, const char* argument) const {
  return const_cast<BlockAllocator*>(this)->seq(id, argument);
}

int BlockAllocator::allocate() {
  const int b = free_.back();
  free_.pop_back();
  refs_[static_cast<std::size_t>(b)] = 1;
  return b;
}

void BlockAllocator::release(int block) {
  if (--refs_[static_cast<std::size_t>(block)] == 0) free_.push_back(block);
}

void BlockAllocator::add_sequence(SeqId id, std::size_t tokens) {
  require(!has_sequence(id), "id", "sequence " + std::to_string(id) + " exists already");
  const int need = blocks_for(tokens);
  if (need > free_blocks())
    throw CacheFull("KV cache full: sequence " + std::to_string(id) + " needs " +
                    std::to_string(need) + " blocks of " + std::to_string(block_size_) +
                    " tokens, " + std::to_string(free_blocks()) + " of " +
                    std::to_string(num_blocks_) + " are free (preempt or free a sequence)");
  Seq s;
  s.length = tokens;
  for (int i = 0; i < need; ++i) s.table.push_back(allocate());
  seqs_.emplace(id, std::move(s));
}

bool BlockAllocator::can_append(SeqId id) const {
  const Seq& s = seq(id, "id");
  const bool needs_block = s.length % static_cast<std::size_t>(block_size_) == 0 ||
                           refs_[static_cast<std::size_t>(s.table.back())] > 1;
  return !needs_block || free_blocks() > 0;
}

void BlockAllocator::append_token(SeqId id) {
  Seq& s = seq(id, "id");
  // TODO(11.1): append_token, fork and free_sequence (this region and the two below).
  //   Contract: after append_token(id), length(id) grows by one and the new token's slot
  //   (block_table(id)[t / block_size], t % block_size) belongs to `id` alone; every block's
  //   ref_count equals the number of block tables holding it; a block is free exactly when its
  //   count is 0. A write into a block that another table also holds must not be seen by that
  //   sequence: record the copy (source, destination) for take_copies(), whose contents the cache
  //   copies before the next kernel writes the token.
  //   Errors: when a block is needed and none is free, throw CacheFull (message: how many blocks
  //   are free of how many) and leave everything unchanged.
  //   Constraints: O(1) per call apart from the copy list; no scan of all blocks.
  //   Hints: scripts/lab hint 11.1
  (void)s;
  throw NotImplemented("Exercise 11.1: append_token (chapters/11_llm_serving/starter/block_allocator.cpp)");
}

void BlockAllocator::fork(SeqId parent, SeqId child) {
  const Seq& p = seq(parent, "parent");
  require(!has_sequence(child), "child", "sequence " + std::to_string(child) + " exists already");
  // TODO(11.1): the child shares every block of the parent (no copy now: copy-on-write later).
  (void)p;
  throw NotImplemented("Exercise 11.1: fork (chapters/11_llm_serving/starter/block_allocator.cpp)");
}

void BlockAllocator::free_sequence(SeqId id) {
  Seq& s = seq(id, "id");
  // TODO(11.1): drop the sequence; a block returns to the free list with its last reference.
  (void)s;
  throw NotImplemented("Exercise 11.1: free_sequence (chapters/11_llm_serving/starter/block_allocator.cpp)");
}

const std::vector<int>& BlockAllocator::block_table(SeqId id) const {
  return seq(id, "id").table;
}
std::size_t BlockAllocator::length(SeqId id) const {
  return seq(id, "id").length;
}

int BlockAllocator::ref_count(int block) const {
  require(block >= 0 && block < num_blocks_, "block", "out of range");
  return refs_[static_cast<std::size_t>(block)];
}

std::vector<std::pair<int, int>> BlockAllocator::take_copies() {
  return std::exchange(copies_, {});
}

}  // namespace cudalab::ch11
