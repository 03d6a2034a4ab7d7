// PageCache (prefix reuse's bookkeeping, GPU-free): the full-page index, reference counts, LRU eviction under a
// fixed pool, hybrid snapshots (exact match only, copy-on-write of the partial page, LRU among snapshots).
#include "runtime/page_cache.h"

#include <gtest/gtest.h>

#include <numeric>
#include <set>

namespace ewgpu {
namespace {

std::vector<int32_t> seq(uint32_t n, int32_t from = 0) {
  std::vector<int32_t> v(n);
  std::iota(v.begin(), v.end(), from);
  return v;
}

TEST(PageCache, SharesPublishedFullPagesOfAPrefix) {
  PageCache c(16, 0, false);
  auto p = seq(40);
  auto a = c.acquire(p, 50, true);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->cached, 0u);
  EXPECT_EQ(a->pages.size(), 4u);
  c.publish(p, 40, a->pages);  // pages 0 and 1 are full
  // A prompt extending the first 35 tokens: two full pages shared, while the first sequence still holds them.
  auto q = seq(35);
  q.push_back(999);
  auto b = c.acquire(q, 40, true);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->cached, 32u);
  EXPECT_EQ(b->pages[0], a->pages[0]);
  EXPECT_EQ(b->pages[1], a->pages[1]);
  EXPECT_NE(b->pages[2], a->pages[2]);
  // Never the whole prompt: the last token is computed for its logits.
  auto whole = c.acquire(seq(32), 40, true);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole->cached, 16u);
  // A different first block matches nothing, and reuse off never matches.
  auto d = c.acquire(seq(40, 1), 40, true);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->cached, 0u);
  c.release(d->pages);
  auto e = c.acquire(p, 40, false);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->cached, 0u);
  c.release(e->pages);
  c.release(whole->pages);
  c.release(b->pages);
  c.release(a->pages);
  EXPECT_EQ(c.stats().used_pages, 0u);
  EXPECT_EQ(c.stats().cached_pages, 2u);  // the two published pages stay cached
}

TEST(PageCache, SameIdsAtAnotherOffsetDoNotMatch) {
  PageCache c(8, 0, false);
  auto p = seq(33);
  auto a = c.acquire(p, 33, true);
  c.publish(p, 33, a->pages);
  c.release(a->pages);
  // Block 1 of p (ids 16..31) as the first block of another prompt: the chain key differs.
  auto q = seq(33, 16);
  auto b = c.acquire(q, 33, true);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->cached, 0u);
}

TEST(PageCache, EvictsLeastRecentlyUsedUnreferencedPagesOnly) {
  PageCache c(4, 0, false);
  auto p = seq(17), q = seq(17, 100);
  auto a = c.acquire(p, 32, true);  // 2 pages, the first one full after the prompt
  c.publish(p, 17, a->pages);
  c.release(a->pages);
  auto b = c.acquire(q, 32, true);
  c.publish(q, 17, b->pages);
  c.release(b->pages);
  EXPECT_EQ(c.stats().cached_pages, 2u);
  EXPECT_EQ(c.stats().free_pages, 2u);
  // p is used again (most recent); a 3-page sequence then evicts q's page, not p's.
  auto a2 = c.acquire(p, 32, true);
  EXPECT_EQ(a2->cached, 16u);
  EXPECT_EQ(a2->pages[0], a->pages[0]);
  c.release(a2->pages);
  auto x = c.acquire(seq(40, 500), 48, true);
  ASSERT_TRUE(x.ok());
  EXPECT_EQ(c.stats().evicted_pages, 1u);
  c.release(x->pages);
  auto q2 = c.acquire(q, 32, true);
  ASSERT_TRUE(q2.ok());
  EXPECT_EQ(q2->cached, 0u);  // evicted
  c.release(q2->pages);
  auto a3 = c.acquire(p, 32, true);
  EXPECT_EQ(a3->cached, 16u);  // still cached
  // Referenced pages are never taken: with all 4 referenced, one more page is an error, not a stolen page.
  auto y = c.acquire(seq(30, 900), 32, true);
  ASSERT_TRUE(y.ok());
  auto z = c.acquire(seq(10, 700), 10, true);
  ASSERT_FALSE(z.ok());
  EXPECT_EQ(z.error().code, ErrorCode::kOutOfMemory);
  c.release(y->pages);
  c.release(a3->pages);
  EXPECT_EQ(c.stats().used_pages, 0u);
}

TEST(PageCache, DuplicateBlocksStayPrivateAndAreFreed) {
  PageCache c(8, 0, false);
  auto p = seq(20);
  auto a = c.acquire(p, 20, true), b = c.acquire(p, 20, true);  // started together: nothing shared yet
  EXPECT_EQ(b->cached, 0u);
  c.publish(p, 20, a->pages);
  c.publish(p, 20, b->pages);  // block 0 is already indexed (a's page): b's copy stays unpublished
  c.release(b->pages);
  c.release(a->pages);
  EXPECT_EQ(c.stats().cached_pages, 1u);
  EXPECT_EQ(c.stats().free_pages, 7u);
}

TEST(PageCache, HybridResumesOnlyFromExactSnapshots) {
  PageCache c(12, 2, true);
  auto turn1 = seq(24);  // prompt + generated tokens whose state was snapshotted
  auto a = c.acquire(turn1, 30, true);
  ASSERT_TRUE(a.ok());
  c.publish(turn1, 24, a->pages);  // ignored for hybrids
  EXPECT_EQ(c.addSnapshot(turn1, 24, a->pages), 0);
  EXPECT_EQ(c.addSnapshot(turn1, 24, a->pages), -1);  // already there
  c.release(a->pages);
  // Extends the snapshot: resumes at 24, shares page 0, copies the partial page 1 into its own.
  auto next = seq(30);
  auto b = c.acquire(next, 40, true);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->cached, 24u);
  EXPECT_EQ(b->snapshot, 0);
  EXPECT_EQ(b->pages[0], a->pages[0]);
  EXPECT_EQ(b->copy_from, a->pages[1]);
  EXPECT_NE(b->pages[1], a->pages[1]);
  c.release(b->pages);
  // A prompt sharing 20 of the 24 tokens has no exact snapshot: nothing is reused.
  auto other = seq(20);
  other.push_back(77);
  other.push_back(78);
  auto d = c.acquire(other, 30, true);
  EXPECT_EQ(d->cached, 0u);
  EXPECT_EQ(d->snapshot, -1);
  c.release(d->pages);
  // Neither is a snapshot longer than the prompt minus one usable.
  auto same = c.acquire(turn1, 30, true);
  EXPECT_EQ(same->cached, 0u);
  c.release(same->pages);
}

TEST(PageCache, SnapshotsAreEvictedLeastRecentlyUsedAndUnderPagePressure) {
  PageCache c(6, 2, true);
  auto s1 = seq(16), s2 = seq(16, 100), s3 = seq(16, 200);
  for (const auto* s : {&s1, &s2}) {
    auto a = c.acquire(*s, 16, true);
    EXPECT_GE(c.addSnapshot(*s, 16, a->pages), 0);
    c.release(a->pages);
  }
  auto use1 = seq(20);  // touches s1
  auto u = c.acquire(use1, 20, true);
  EXPECT_EQ(u->cached, 16u);
  c.release(u->pages);
  auto a = c.acquire(s3, 16, true);
  EXPECT_GE(c.addSnapshot(s3, 16, a->pages), 0);  // evicts s2 (least recently used)
  c.release(a->pages);
  EXPECT_EQ(c.stats().evicted_snapshots, 1u);
  auto r2 = c.acquire(seq(20, 100), 20, true);
  EXPECT_EQ(r2->cached, 0u);
  c.release(r2->pages);
  // 6 pages, 2 held by snapshots: a sequence needing all 6 evicts them.
  auto big = c.acquire(seq(96, 1000), 96, true);
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(c.stats().snapshots, 0u);
  std::set<uint32_t> distinct(big->pages.begin(), big->pages.end());
  EXPECT_EQ(distinct.size(), 6u);
  c.release(big->pages);
  c.clear();
  EXPECT_EQ(c.stats().free_pages, 6u);
}

}  // namespace
}  // namespace ewgpu
