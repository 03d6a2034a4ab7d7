#include "grammar/matcher.h"

#include <algorithm>
#include <cstring>

namespace ewgpu::grammar {
namespace {

constexpr int kMaxExpandDepth = 512;        // guards an epsilon cycle; real grammars stay far below
constexpr size_t kMaxCachedMasks = 4096;    // per matcher

void sortUnique(std::vector<uint32_t>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

}  // namespace

Matcher::Matcher(std::shared_ptr<const CompiledGrammar> g) : g_(std::move(g)), gr_(g_->grammar) {
  nodes_.push_back({~0u, kNoParent});  // kAccept
  // The start: every alternative of the root rule, returning to nothing.
  for (uint32_t a : gr_.alts[gr_.root]) {
    seen_.clear();
    expand(a, kNoParent, state_, 1);
  }
  sortUnique(state_);
  levels_.resize((g_->vocab ? g_->vocab->maxTokenBytes() : 0) + 2);
}

uint32_t Matcher::intern(uint32_t pos, uint32_t parent) {
  const uint64_t key = ((uint64_t)pos << 32) | parent;
  auto [it, fresh] = interned_.try_emplace(key, (uint32_t)nodes_.size());
  if (fresh) nodes_.push_back({pos, parent});
  return it->second;
}

// Resolves position `pos` (with `parent` below it) into stacks whose top is a byte set, or kAccept.
// Each (position, parent) is expanded once per top-level call (depth 0): a left-recursive or ambiguous rule
// (anyOf of the same $ref twice) then costs linear time, not exponential.
void Matcher::expand(uint32_t pos, uint32_t parent, std::vector<uint32_t>& out, int depth) {
  if (depth == 0) seen_.clear();
  if (depth > kMaxExpandDepth || !seen_.insert(((uint64_t)pos << 32) | parent).second) return;
  const Element& e = gr_.elements[pos];
  switch (e.kind) {
    case Element::kBytes:
      out.push_back(intern(pos, parent));
      return;
    case Element::kEnd:
      if (parent == kNoParent) {
        out.push_back(kAccept);
      } else {
        const Node p = nodes_[parent];
        expand(p.pos, p.parent, out, depth + 1);
      }
      return;
    case Element::kRule: {
      // Tail call: a reference last in its alternative returns where this alternative returns.
      const uint32_t ret = gr_.elements[pos + 1].kind == Element::kEnd ? parent : intern(pos + 1, parent);
      for (uint32_t a : gr_.alts[e.value]) expand(a, ret, out, depth + 1);
      return;
    }
  }
}

std::span<const uint32_t> Matcher::step(uint32_t stack, uint8_t byte) {
  const uint64_t key = ((uint64_t)stack << 8) | byte;
  auto it = steps_.find(key);
  if (it == steps_.end()) {
    std::vector<uint32_t> out;
    if (stack != kAccept) {
      const Node n = nodes_[stack];
      if (gr_.sets[gr_.elements[n.pos].value].has(byte)) expand(n.pos + 1, n.parent, out, 0);
    }
    sortUnique(out);
    const uint32_t begin = (uint32_t)pool_.size();
    pool_.insert(pool_.end(), out.begin(), out.end());
    it = steps_.emplace(key, std::make_pair(begin, (uint32_t)out.size())).first;
  }
  return {pool_.data() + it->second.first, it->second.second};
}

void Matcher::advance(const std::vector<uint32_t>& from, uint8_t byte, std::vector<uint32_t>& to) {
  to.clear();
  for (uint32_t s : from) {
    auto next = step(s, byte);
    to.insert(to.end(), next.begin(), next.end());
  }
  if (from.size() > 1) sortUnique(to);
}

bool Matcher::run(std::string_view bytes, std::vector<uint32_t>& cur) {
  std::vector<uint32_t> next;
  for (char c : bytes) {
    advance(cur, (uint8_t)c, next);
    if (next.empty()) return false;
    cur.swap(next);
  }
  return true;
}

bool Matcher::allows(std::string_view bytes) {
  std::vector<uint32_t> cur = state_;
  return run(bytes, cur);
}

bool Matcher::acceptBytes(std::string_view bytes) {
  std::vector<uint32_t> cur = state_;
  if (!run(bytes, cur)) return false;
  state_ = std::move(cur);
  return true;
}

bool Matcher::acceptToken(int32_t id) {
  if (!g_->vocab || id < 0 || (uint32_t)id >= g_->vocab->size()) return false;
  const std::string& b = g_->vocab->bytes(id);
  return !b.empty() && acceptBytes(b);
}

bool Matcher::canEnd() const { return !state_.empty() && state_.front() == kAccept; }
bool Matcher::mustEnd() const { return state_.size() == 1 && state_.front() == kAccept; }

void Matcher::walk(uint32_t node, size_t depth, std::span<uint32_t> mask) {
  const auto& nodes = g_->vocab->nodes();
  const auto& ids = g_->vocab->tokenIds();
  const std::vector<uint32_t>& cur = levels_[depth];
  std::vector<uint32_t>& next = levels_[depth + 1];
  for (uint32_t c = node + 1; c < nodes[node].next; c = nodes[c].next) {
    ++stats_.trie_edges;
    advance(cur, nodes[c].byte, next);
    if (next.empty()) continue;
    for (uint32_t t = nodes[c].tokens; t < nodes[c].tokens_end; ++t) mask[ids[t] >> 5] |= 1u << (ids[t] & 31);
    if (!(next.size() == 1 && next.front() == kAccept) && nodes[c].next > c + 1) walk(c, depth + 1, mask);
    // walk() below reused levels_[depth + 1]; `cur` (levels_[depth]) is untouched.
  }
}

void Matcher::fillMask(std::span<uint32_t> mask, std::span<const int32_t> stop_ids) {
  ++stats_.masks;
  std::fill(mask.begin(), mask.end(), 0u);
  auto hit = mask_cache_.find(state_);
  if (hit != mask_cache_.end()) {
    ++stats_.mask_cache_hits;
    std::copy_n(hit->second.begin(), std::min(mask.size(), hit->second.size()), mask.begin());
  } else if (g_->vocab) {
    levels_[0] = state_;
    walk(0, 0, mask);
    if (mask_cache_.size() >= kMaxCachedMasks) mask_cache_.clear();
    mask_cache_.emplace(state_, std::vector<uint32_t>(mask.begin(), mask.end()));
  }
  // A stop id ends the row on the GPU whatever its bytes: allowed exactly where the document may end.
  const bool end = canEnd();
  for (int32_t id : stop_ids)
    if (id >= 0 && (size_t)(id >> 5) < mask.size()) {
      if (end) mask[id >> 5] |= 1u << (id & 31);
      else mask[id >> 5] &= ~(1u << (id & 31));
    }
}

}  // namespace ewgpu::grammar
