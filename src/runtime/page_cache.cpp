#include "runtime/page_cache.h"

#include <algorithm>

namespace ewgpu {

PageCache::PageCache(uint32_t pages, uint32_t snapshots, bool hybrid)
    : hybrid_(hybrid), refs_(pages, 0), nodes_(pages), lru_pos_(pages), in_lru_(pages, false),
      snaps_(hybrid ? snapshots : 0) {
  for (uint32_t p = pages; p-- > 0;) free_.push_back(p);  // page 0 first
}

uint64_t PageCache::blockKey(uint64_t parent, const int32_t* ids) {
  // splitmix64 steps over the parent key and the ids; 0 is reserved for "not published".
  uint64_t h = parent ^ 0x9E3779B97F4A7C15ull;
  for (uint32_t i = 0; i < kPageTokens; ++i) {
    h += (uint64_t)(uint32_t)ids[i] + 0x9E3779B97F4A7C15ull;
    h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
    h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
    h ^= h >> 31;
  }
  return h ? h : 1;
}

void PageCache::ref(uint32_t page) {
  if (refs_[page]++ == 0 && in_lru_[page]) {
    lru_.erase(lru_pos_[page]);
    in_lru_[page] = false;
  }
}

void PageCache::unref(uint32_t page) {
  if (page >= refs_.size() || refs_[page] == 0) return;
  if (--refs_[page] > 0) return;
  if (nodes_[page].key) {
    lru_.push_back(page);
    lru_pos_[page] = std::prev(lru_.end());
    in_lru_[page] = true;
  } else {
    free_.push_back(page);
  }
}

void PageCache::unpublish(uint32_t page) {
  Node& n = nodes_[page];
  if (!n.key) return;
  auto it = index_.find(n.key);
  if (it != index_.end() && it->second == page) index_.erase(it);
  n = Node{};
}

bool PageCache::evictSnapshot(int keep) {
  int victim = -1;
  for (int i = 0; i < (int)snaps_.size(); ++i)
    if (snaps_[i].used && i != keep && (victim < 0 || snaps_[i].last_use < snaps_[victim].last_use)) victim = i;
  if (victim < 0) return false;
  Snapshot& s = snaps_[victim];
  for (uint32_t p : s.pages) unref(p);
  s = Snapshot{};
  ++stats_.evicted_snapshots;
  return true;
}

Result<uint32_t> PageCache::take() {
  for (;;) {
    if (!free_.empty()) {
      const uint32_t p = free_.back();
      free_.pop_back();
      refs_[p] = 1;
      return p;
    }
    if (!lru_.empty()) {
      const uint32_t p = lru_.front();
      lru_.pop_front();
      in_lru_[p] = false;
      unpublish(p);
      refs_[p] = 1;
      ++stats_.evicted_pages;
      return p;
    }
    if (!evictSnapshot())
      return makeError(ErrorCode::kOutOfMemory, "the KV page pool is exhausted", {{"pages", pages()}});
  }
}

Result<PageCache::Lease> PageCache::acquire(const std::vector<int32_t>& prompt, uint32_t positions, bool reuse) {
  Lease lease;
  const uint32_t need = (positions + kPageTokens - 1) / kPageTokens;
  const uint32_t reusable = prompt.empty() ? 0 : (uint32_t)prompt.size() - 1;
  ++stats_.lookups;
  if (reuse && hybrid_) {
    int best = -1;
    for (int i = 0; i < (int)snaps_.size(); ++i) {
      const Snapshot& s = snaps_[i];
      if (!s.used || s.tokens.size() > reusable || s.tokens.size() > positions) continue;
      if (best >= 0 && s.tokens.size() <= snaps_[best].tokens.size()) continue;
      if (std::equal(s.tokens.begin(), s.tokens.end(), prompt.begin())) best = i;
    }
    if (best >= 0) {
      Snapshot& s = snaps_[best];
      s.last_use = ++clock_;
      lease.snapshot = best;
      lease.cached = (uint32_t)s.tokens.size();
      const uint32_t full = lease.cached / kPageTokens;
      for (uint32_t i = 0; i < full; ++i) {
        ref(s.pages[i]);
        lease.pages.push_back(s.pages[i]);
      }
      if (lease.cached % kPageTokens) lease.copy_from = s.pages[full];
    }
  } else if (reuse) {
    uint64_t key = 0;
    for (uint32_t b = 0; (b + 1) * kPageTokens <= reusable && b < need; ++b) {
      key = blockKey(key, prompt.data() + (size_t)b * kPageTokens);
      auto it = index_.find(key);
      if (it == index_.end()) break;
      const Node& n = nodes_[it->second];
      if (!std::equal(n.block.begin(), n.block.end(), prompt.begin() + (size_t)b * kPageTokens)) break;
      ref(it->second);
      lease.pages.push_back(it->second);
    }
    lease.cached = (uint32_t)lease.pages.size() * kPageTokens;
  }
  // The partial page to copy from stays referenced while fresh pages are found (taking one may evict the
  // snapshot); the caller records the copy before anything else can take it.
  if (lease.copy_from != kNoPage) ref(lease.copy_from);
  while (lease.pages.size() < need) {
    auto p = take();
    if (!p) {
      release(lease.pages);
      if (lease.copy_from != kNoPage) unref(lease.copy_from);
      return std::move(p).error();
    }
    lease.pages.push_back(*p);
  }
  if (lease.copy_from != kNoPage) unref(lease.copy_from);
  stats_.hit_tokens += lease.cached;
  return lease;
}

void PageCache::publish(const std::vector<int32_t>& tokens, uint32_t n, const std::vector<uint32_t>& pages) {
  if (hybrid_) return;  // hybrid pages are found through snapshots only
  n = std::min<uint32_t>(n, (uint32_t)tokens.size());
  uint64_t key = 0;
  for (uint32_t b = 0; (b + 1) * kPageTokens <= n && b < pages.size(); ++b) {
    const int32_t* ids = tokens.data() + (size_t)b * kPageTokens;
    const uint64_t parent = key;
    key = blockKey(key, ids);
    const uint32_t page = pages[b];
    if (nodes_[page].key) continue;  // already published (shared from the index, or by an earlier call)
    if (index_.count(key)) continue;  // the same block is already cached in another page: this one stays private
    index_[key] = page;
    nodes_[page] = Node{key, parent, std::vector<int32_t>(ids, ids + kPageTokens)};
  }
}

int PageCache::addSnapshot(const std::vector<int32_t>& tokens, uint32_t n, const std::vector<uint32_t>& pages) {
  if (!hybrid_ || snaps_.empty() || n == 0 || n > tokens.size()) return -1;
  const uint32_t cover = (n + kPageTokens - 1) / kPageTokens;
  if (cover > pages.size()) return -1;
  for (auto& s : snaps_)
    if (s.used && s.tokens.size() == n && std::equal(s.tokens.begin(), s.tokens.end(), tokens.begin())) {
      s.last_use = ++clock_;
      return -1;
    }
  int slot = -1;
  for (int i = 0; i < (int)snaps_.size() && slot < 0; ++i)
    if (!snaps_[i].used) slot = i;
  if (slot < 0) {
    evictSnapshot();
    for (int i = 0; i < (int)snaps_.size() && slot < 0; ++i)
      if (!snaps_[i].used) slot = i;
  }
  if (slot < 0) return -1;
  Snapshot& s = snaps_[slot];
  s.used = true;
  s.tokens.assign(tokens.begin(), tokens.begin() + n);
  s.pages.assign(pages.begin(), pages.begin() + cover);
  for (uint32_t p : s.pages) ref(p);
  s.last_use = ++clock_;
  return slot;
}

void PageCache::release(const std::vector<uint32_t>& pages) {
  for (uint32_t p : pages) unref(p);
}

void PageCache::clear() {
  for (int i = 0; i < (int)snaps_.size(); ++i)
    if (snaps_[i].used) {
      for (uint32_t p : snaps_[i].pages) unref(p);
      snaps_[i] = Snapshot{};
    }
  for (uint32_t p : lru_) {
    in_lru_[p] = false;
    nodes_[p] = Node{};
    free_.push_back(p);
  }
  lru_.clear();
  index_.clear();
  for (auto& n : nodes_) n = Node{};  // pages still referenced stay with their sequences, unpublished
}

PageCacheStats PageCache::stats() const {
  PageCacheStats s = stats_;
  s.free_pages = (uint32_t)free_.size();
  s.cached_pages = (uint32_t)lru_.size();
  s.used_pages = pages() - s.free_pages - s.cached_pages;
  for (const auto& x : snaps_) s.snapshots += x.used;
  return s;
}

}  // namespace ewgpu
