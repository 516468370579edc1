// Exercise 11.1 — the paged block allocator: unit cases, then a randomized allocate / fork /
// append / free sequence checked against a plain model (each sequence's token list) through a
// simulated cache: every token is written into its slot, copy-on-write copies are applied, and
// every sequence must read back exactly its own tokens after every step.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ch11/block_allocator.hpp"
#include "cudalab/random.hpp"
#include "cudalab/testing.hpp"

using namespace cudalab;
using namespace cudalab::ch11;

TEST(BlockAllocator, ConstructorArgumentsAreNamed) {
  cudalab::testing::expect_throws_naming([] { BlockAllocator(0, 16); }, "num_blocks");
  cudalab::testing::expect_throws_naming([] { BlockAllocator(4, 0); }, "block_size");
}

TEST(BlockAllocator, AddTakesCeilOfTokensOverBlockSize) {
  BlockAllocator a(10, 16);
  a.add_sequence(1, 33);  // 3 blocks
  EXPECT_EQ(a.block_table(1).size(), 3u);
  EXPECT_EQ(a.length(1), 33u);
  EXPECT_EQ(a.free_blocks(), 7);
  for (int b : a.block_table(1)) EXPECT_EQ(a.ref_count(b), 1);
  a.add_sequence(2, 0);  // an empty prompt holds no block
  EXPECT_TRUE(a.block_table(2).empty());
  cudalab::testing::expect_throws_naming([&] { a.add_sequence(1, 1); }, "id");
}

TEST(BlockAllocator, FullCacheIsAClearErrorAndChangesNothing) {
  BlockAllocator a(4, 8);
  a.add_sequence(1, 24);  // 3 blocks
  try {
    a.add_sequence(2, 9);  // needs 2, 1 free
    FAIL() << "expected CacheFull";
  } catch (const CacheFull& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("needs 2 blocks"), std::string::npos) << what;
    EXPECT_NE(what.find("1 of 4 are free"), std::string::npos) << what;
  }
  EXPECT_FALSE(a.has_sequence(2));
  EXPECT_EQ(a.free_blocks(), 1);
  a.add_sequence(3, 8);  // the last block
  EXPECT_FALSE(a.can_append(3));
  EXPECT_THROW(a.append_token(3), CacheFull);
  EXPECT_EQ(a.length(3), 8u);
  EXPECT_EQ(a.block_table(3).size(), 1u);
}

TEST(BlockAllocator, AppendFillsTheLastBlockThenTakesANewOne) {
  BlockAllocator a(8, 4);
  a.add_sequence(7, 3);
  a.append_token(7);  // slot 3 of block 0: no new block
  EXPECT_EQ(a.block_table(7).size(), 1u);
  a.append_token(7);  // token 4: a second block
  EXPECT_EQ(a.block_table(7).size(), 2u);
  EXPECT_EQ(a.length(7), 5u);
  EXPECT_TRUE(a.take_copies().empty());
  cudalab::testing::expect_throws_naming([&] { a.append_token(99); }, "id");
}

TEST(BlockAllocator, ForkSharesThenCopiesOnWrite) {
  BlockAllocator a(8, 4);
  a.add_sequence(1, 6);  // blocks b0 (full) and b1 (2 of 4)
  const std::vector<int> parent = a.block_table(1);
  a.fork(1, 2);
  EXPECT_EQ(a.block_table(2), parent);
  for (int b : parent) EXPECT_EQ(a.ref_count(b), 2);
  EXPECT_EQ(a.free_blocks(), 6);
  a.append_token(2);  // writes into the shared b1: copy-on-write
  const auto copies = a.take_copies();
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(copies[0].first, parent[1]);
  EXPECT_EQ(copies[0].second, a.block_table(2)[1]);
  EXPECT_NE(a.block_table(2)[1], parent[1]);
  EXPECT_EQ(a.block_table(2)[0], parent[0]);  // the full block stays shared
  EXPECT_EQ(a.ref_count(parent[0]), 2);
  EXPECT_EQ(a.ref_count(parent[1]), 1);
  a.append_token(1);  // the parent's b1 is its own now: no copy
  EXPECT_TRUE(a.take_copies().empty());
  cudalab::testing::expect_throws_naming([&] { a.fork(5, 6); }, "parent");
  cudalab::testing::expect_throws_naming([&] { a.fork(1, 2); }, "child");
}

TEST(BlockAllocator, FreeReturnsBlocksWithTheirLastReference) {
  BlockAllocator a(6, 4);
  a.add_sequence(1, 8);
  a.fork(1, 2);
  a.free_sequence(1);
  EXPECT_EQ(a.free_blocks(), 4);  // still held by 2
  a.free_sequence(2);
  EXPECT_EQ(a.free_blocks(), 6);
  EXPECT_FALSE(a.has_sequence(2));
  cudalab::testing::expect_throws_naming([&] { a.free_sequence(2); }, "id");
  cudalab::testing::expect_throws_naming([&] { (void)a.ref_count(6); }, "block");
}

namespace {

// The simulated cache: one int per token slot.
struct Sim {
  BlockAllocator alloc;
  std::vector<int> slots;
  std::map<int, std::vector<int>> model;  // what each sequence must read back

  Sim(int blocks, int bs) : alloc(blocks, bs), slots(static_cast<std::size_t>(blocks) * bs, -1) {}

  int& slot(int id, std::size_t t) {
    const int bs = alloc.block_size();
    return slots[static_cast<std::size_t>(alloc.block_table(id)[t / bs]) * bs + t % bs];
  }
  void apply_copies() {
    const int bs = alloc.block_size();
    for (auto [src, dst] : alloc.take_copies())
      std::copy_n(slots.begin() + static_cast<std::ptrdiff_t>(src) * bs, bs,
                  slots.begin() + static_cast<std::ptrdiff_t>(dst) * bs);
  }
  // Every invariant of the contract, with the step that broke it.
  void check(const std::string& step) {
    std::vector<int> refs(static_cast<std::size_t>(alloc.num_blocks()), 0);
    ASSERT_EQ(alloc.num_sequences(), model.size()) << step;
    for (const auto& [id, tokens] : model) {
      ASSERT_TRUE(alloc.has_sequence(id)) << step;
      ASSERT_EQ(alloc.length(id), tokens.size()) << step << ", sequence " << id;
      ASSERT_EQ(alloc.block_table(id).size(),
                static_cast<std::size_t>(alloc.blocks_for(tokens.size())))
          << step << ", sequence " << id;
      for (int b : alloc.block_table(id)) ++refs[static_cast<std::size_t>(b)];
      for (std::size_t t = 0; t < tokens.size(); ++t)
        ASSERT_EQ(slot(id, t), tokens[t])
            << step << ": sequence " << id << " reads token " << t
            << " wrong (a write into a shared block leaked, or a copy was lost)";
    }
    int free_count = 0;
    for (int b = 0; b < alloc.num_blocks(); ++b) {
      ASSERT_EQ(alloc.ref_count(b), refs[static_cast<std::size_t>(b)]) << step << ", block " << b;
      free_count += refs[static_cast<std::size_t>(b)] == 0;
    }
    ASSERT_EQ(alloc.free_blocks(), free_count) << step;
  }
};

}  // namespace

TEST(BlockAllocator, RandomizedAgainstAModel) {
  Rng rng;
  for (int bs : {1, 3, 16}) {
    Sim sim(40, bs);
    int next_id = 0, next_token = 0, full = 0;
    for (int step = 0; step < 4000; ++step) {
      const int op = rng.scalar(0, 9);
      std::vector<int> ids;
      for (const auto& kv : sim.model) ids.push_back(kv.first);
      const int pick =
          ids.empty()
              ? -1
              : ids[static_cast<std::size_t>(rng.scalar<int>(0, static_cast<int>(ids.size()) - 1))];
      const std::string what =
          "block_size " + std::to_string(bs) + ", step " + std::to_string(step);
      if (op <= 1 || pick < 0) {  // add a prompt
        const auto len = static_cast<std::size_t>(rng.scalar(0, 3 * bs + 2));
        try {
          sim.alloc.add_sequence(next_id, len);
        } catch (const CacheFull&) {
          ++full;
          continue;
        }
        auto& tokens = sim.model[next_id];
        for (std::size_t t = 0; t < len; ++t) tokens.push_back(next_token++);
        for (std::size_t t = 0; t < len; ++t) sim.slot(next_id, t) = tokens[t];
        ++next_id;
      } else if (op <= 3) {  // fork
        sim.alloc.fork(pick, next_id);
        sim.model[next_id] = sim.model[pick];
        ++next_id;
      } else if (op <= 7) {  // append
        const bool can = sim.alloc.can_append(pick);
        try {
          sim.alloc.append_token(pick);
        } catch (const CacheFull&) {
          ASSERT_FALSE(can) << what << ": can_append said yes";
          ++full;
          sim.check(what + " (after a refused append)");
          continue;
        }
        ASSERT_TRUE(can) << what << ": can_append said no";
        sim.apply_copies();
        sim.model[pick].push_back(next_token);
        sim.slot(pick, sim.model[pick].size() - 1) = next_token++;
      } else {  // free
        sim.alloc.free_sequence(pick);
        sim.model.erase(pick);
      }
      sim.check(what);
      if (::testing::Test::HasFatalFailure()) return;
    }
    EXPECT_GT(full, 0) << "the sequence never filled the cache: the error path went untested";
  }
}
