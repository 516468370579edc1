// Chapter 11, host side: the paged KV block allocator (exercise 11.1): block tables, shared blocks
// counted, copy-on-write.
// Runs on the CPU (CI tests it without a GPU); bad arguments throw std::invalid_argument naming
// the argument.
#pragma once

#include <cstddef>
#include <map>
#include <stdexcept>
#include <utility>
#include <vector>

namespace cudalab::ch11 {

// ---------------------------------------------------------------------------------------------
// Exercise 11.1 — the paged KV block allocator (vLLM's PagedAttention, host side).
// The cache is num_blocks blocks of block_size tokens. A sequence owns a block table: its logical
// block i lives in physical block table[i]. Blocks are shared between sequences (a forked prefix:
// parallel sampling, beam search, a common system prompt) and counted: a block returns to the free
// list when its last reference goes. Writing into a shared block first copies it
// (copy-on-write): the allocator records (src, dst) copies that the cache must perform before the
// next kernel writes (take_copies()).
class CacheFull : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class BlockAllocator {
 public:
  using SeqId = int;
  // Throws std::invalid_argument naming 'num_blocks' or 'block_size' when not positive.
  BlockAllocator(int num_blocks, int block_size);

  int num_blocks() const noexcept { return num_blocks_; }
  int block_size() const noexcept { return block_size_; }
  int free_blocks() const noexcept { return static_cast<int>(free_.size()); }
  bool has_sequence(SeqId id) const { return seqs_.count(id) != 0; }
  std::size_t num_sequences() const noexcept { return seqs_.size(); }

  // Blocks a sequence of `tokens` tokens needs: ceil(tokens / block_size).
  int blocks_for(std::size_t tokens) const;

  // A new sequence holding `tokens` tokens (its prompt), in fresh blocks. Throws
  // std::invalid_argument naming 'id' if it exists; CacheFull (nothing allocated) when fewer than
  // blocks_for(tokens) blocks are free.
  void add_sequence(SeqId id, std::size_t tokens);
  // One more token at the end of `id`. Needs a fresh block when the last block is full, or when it
  // is shared (copy-on-write: a copy (old, new) is recorded, the old block loses one reference).
  // Throws CacheFull (the sequence unchanged) when a block is needed and none is free; 'id' when
  // unknown.
  void append_token(SeqId id);
  // Whether append_token(id) would succeed now.
  bool can_append(SeqId id) const;
  // `child` becomes a copy of `parent` sharing all its blocks (each gains one reference).
  // Throws naming 'parent' (unknown) or 'child' (exists).
  void fork(SeqId parent, SeqId child);
  // Drops `id`; its blocks lose one reference each, those at zero become free. 'id' when unknown.
  void free_sequence(SeqId id);

  const std::vector<int>& block_table(SeqId id) const;
  std::size_t length(SeqId id) const;
  int ref_count(int block) const;  // 0 for a free block; throws naming 'block' when out of range
  // The copy-on-write copies recorded since the last call (source block, destination block).
  std::vector<std::pair<int, int>> take_copies();

 private:
  struct Seq {
    std::vector<int> table;
    std::size_t length = 0;
  };
  Seq& seq(SeqId id, const char* argument);
  const Seq& seq(SeqId id, const char* argument) const;
  int allocate();  // pops a free block with one reference (precondition: one is free)
  void release(int block);

  int num_blocks_;
  int block_size_;
  std::vector<int> refs_;
  std::vector<int> free_;  // a stack: the most recently freed block is reused first
  std::map<SeqId, Seq> seqs_;
  std::vector<std::pair<int, int>> copies_;
};

}  // namespace cudalab::ch11
