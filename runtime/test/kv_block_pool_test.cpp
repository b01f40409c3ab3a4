// The paged KV cache's block bookkeeping: allocation, release, prefix reuse and its
// eviction, least recently used first.
#include "loops/kv_block_pool.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace tfc::internal {
namespace {

std::vector<int32_t> iota(int32_t from, int32_t count) {
  std::vector<int32_t> v(static_cast<size_t>(count));
  for (int32_t i = 0; i < count; ++i) v[static_cast<size_t>(i)] = from + i;
  return v;
}

TEST(KvBlockPoolTest, AllocatesEveryBlockOnceAndFreesThem) {
  KvBlockPool pool(3, 4);
  std::vector<int32_t> got;
  for (int i = 0; i < 3; ++i) got.push_back(*pool.allocate());
  EXPECT_FALSE(pool.allocate().has_value());
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, iota(0, 3));
  EXPECT_EQ(pool.used(), 3);
  EXPECT_EQ(pool.available(), 0);
  pool.release(1);
  EXPECT_EQ(pool.available(), 1);
  EXPECT_EQ(*pool.allocate(), 1);
}

TEST(KvBlockPoolTest, ReusesPublishedPrefixesWholeBlocksOnly) {
  KvBlockPool pool(4, 2);
  const std::vector<int32_t> prompt = {5, 6, 7, 8, 9};
  const int32_t a = *pool.allocate(), b = *pool.allocate(), c = *pool.allocate();
  pool.publish(a, prompt, 2);
  pool.publish(b, prompt, 4);
  for (int32_t id : {a, b, c}) pool.release(id);
  EXPECT_EQ(pool.used(), 0);
  EXPECT_EQ(pool.cached(), 2);  // c held a partial block: not published, free
  // The same first four tokens: both blocks; another second block: only the first.
  EXPECT_EQ(pool.matchPrefix({5, 6, 7, 8, 1}, 8), (std::vector<int32_t>{a, b}));
  EXPECT_EQ(pool.matchPrefix({5, 6, 7, 1}, 8), (std::vector<int32_t>{a}));
  EXPECT_EQ(pool.matchPrefix({6, 5, 7, 8}, 8), (std::vector<int32_t>{}));
  // maxBlocks caps the match, and a block is shared by every holder.
  EXPECT_EQ(pool.matchPrefix({5, 6, 7, 8}, 1), (std::vector<int32_t>{a}));
  EXPECT_EQ(pool.used(), 2);
  pool.release(a);
  pool.release(a);
  EXPECT_EQ(pool.used(), 2);  // a is still held by the third match
  pool.release(a);
  pool.release(b);
  EXPECT_EQ(pool.used(), 0);
  EXPECT_EQ(pool.cached(), 2);
}

TEST(KvBlockPoolTest, EvictsTheLeastRecentlyUsedPrefixWhenFreeBlocksRunOut) {
  KvBlockPool pool(2, 1);
  const int32_t x = *pool.allocate(), y = *pool.allocate();
  pool.publish(x, {1}, 1);
  pool.publish(y, {2}, 1);
  pool.release(x);
  pool.release(y);
  // Touch x: y is now the least recently used.
  pool.release(pool.matchPrefix({1}, 1).at(0));
  EXPECT_EQ(*pool.allocate(), y);
  EXPECT_TRUE(pool.matchPrefix({2}, 1).empty());  // forgotten with its block
  EXPECT_EQ(pool.matchPrefix({1}, 1), (std::vector<int32_t>{x}));
  EXPECT_FALSE(pool.allocate().has_value());
}

TEST(KvBlockPoolTest, APrefixIsHeldByOneBlock) {
  KvBlockPool pool(2, 2);
  const int32_t first = *pool.allocate(), second = *pool.allocate();
  pool.publish(first, {3, 4}, 2);
  pool.publish(second, {3, 4}, 2);  // computed twice at once: the first one keeps it
  pool.release(first);
  pool.release(second);
  EXPECT_EQ(pool.cached(), 1);
  EXPECT_EQ(pool.matchPrefix({3, 4}, 1), (std::vector<int32_t>{first}));
}

}  // namespace
}  // namespace tfc::internal
