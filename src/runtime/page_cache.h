// Prefix reuse across requests, the bookkeeping half (GPU-free; docs/prefix-reuse.md). The attention layers' KV
// cache is a pool of fixed-size pages (kPageTokens positions each, every attention layer's page of the same id
// together); a sequence addresses its positions through a page table (Forward writes it to the GPU). This class
// decides which pages a new sequence gets:
//   - Full pages of tokens a sequence has written are published in a prefix index: a hash chain over full blocks
//     (key of block i = hash(key of block i-1, its kPageTokens ids), with the ids kept and compared, so a hash
//     collision is a miss, never a wrong page). A new prompt walks the chain from its first block and shares every
//     page found, copy-free; the rest of its positions get fresh pages.
//   - Pages carry a reference count (sequences using them, snapshots holding them). A published page nobody
//     references stays cached, in LRU order, until an allocation needs it; an unpublished one is free at once.
//   - Hybrid models (Qwen3.5: Gated DeltaNet layers, whose recurrent state cannot be truncated) resume only from
//     an exact snapshot of that state: a snapshot names the tokens it has seen and holds the pages covering them
//     (its last, partial page is copied into the new sequence's own page: copy-on-write). Snapshots are evicted
//     in LRU order when their slots are full or pages are needed.
// The pool has `pages` pages; id `pages` itself is the trash page, which a table's unused entries name.
#pragma once

#include "base/error.h"

#include <cstdint>
#include <list>
#include <unordered_map>
#include <vector>

namespace ewgpu {

inline constexpr uint32_t kPageTokens = 16;
inline constexpr uint32_t kNoPage = 0xFFFFFFFFu;

struct PageCacheStats {
  uint64_t lookups = 0, hit_tokens = 0, evicted_pages = 0, evicted_snapshots = 0;
  uint32_t free_pages = 0, cached_pages = 0, used_pages = 0, snapshots = 0;
};

class PageCache {
 public:
  // `hybrid`: reuse only from snapshots (up to `snapshots` of them); otherwise through the full-page index.
  PageCache(uint32_t pages, uint32_t snapshots, bool hybrid);

  struct Lease {
    std::vector<uint32_t> pages;  // the sequence's page table: ceil(positions / kPageTokens) ids
    uint32_t cached = 0;          // prompt tokens whose KV (and state) is reused: prefill starts here
    int snapshot = -1;            // hybrid: the snapshot whose state the sequence resumes from
    uint32_t copy_from = kNoPage;  // hybrid: copy this page into pages[cached / kPageTokens] (its partial page)
  };
  // The pages of a new sequence of `positions` positions whose prompt is `prompt` (reuse: at most
  // prompt.size() - 1 tokens, the last one must be computed for its logits). `reuse` false: fresh pages only.
  // OUT_OF_MEMORY if the pool cannot supply them (only when positions exceed what was reserved per sequence).
  Result<Lease> acquire(const std::vector<int32_t>& prompt, uint32_t positions, bool reuse);
  // Publishes the full pages of tokens[0, n) (their KV written, or queued to be, by the sequence holding `pages`).
  void publish(const std::vector<int32_t>& tokens, uint32_t n, const std::vector<uint32_t>& pages);
  // Hybrid: a snapshot of the state after tokens[0, n), holding pages[0, ceil(n / kPageTokens)). Returns the
  // snapshot index to copy the state into (-1: not kept: n is 0 or already snapshotted).
  int addSnapshot(const std::vector<int32_t>& tokens, uint32_t n, const std::vector<uint32_t>& pages);
  void release(const std::vector<uint32_t>& pages);  // a sequence's references
  void clear();  // forgets every cached page and snapshot (sequences' references must be released first)

  uint32_t pages() const { return (uint32_t)refs_.size(); }
  uint32_t trashPage() const { return pages(); }
  PageCacheStats stats() const;

 private:
  struct Node {  // a published page
    uint64_t key = 0, parent = 0;
    std::vector<int32_t> block;
  };
  struct Snapshot {
    bool used = false;
    std::vector<int32_t> tokens;
    std::vector<uint32_t> pages;
    uint64_t last_use = 0;
  };
  Result<uint32_t> take();  // a free page (evicting if needed), its reference count 1
  void ref(uint32_t page);
  void unref(uint32_t page);
  void unpublish(uint32_t page);
  bool evictSnapshot(int keep = -1);
  static uint64_t blockKey(uint64_t parent, const int32_t* ids);

  bool hybrid_;
  std::vector<uint32_t> refs_;
  std::vector<Node> nodes_;            // per page (key 0: not published)
  std::vector<std::list<uint32_t>::iterator> lru_pos_;
  std::vector<bool> in_lru_;
  std::list<uint32_t> lru_;            // published pages with no reference, least recently used first
  std::vector<uint32_t> free_;
  std::unordered_map<uint64_t, uint32_t> index_;  // block key -> page
  std::vector<Snapshot> snaps_;
  uint64_t clock_ = 0;
  PageCacheStats stats_;
};

}  // namespace ewgpu
