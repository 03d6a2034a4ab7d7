#include "grammar/vocabulary.h"

#include <algorithm>
#include <numeric>

namespace ewgpu::grammar {

std::shared_ptr<const TokenVocabulary> TokenVocabulary::build(std::vector<std::string> token_bytes) {
  auto v = std::make_shared<TokenVocabulary>();
  v->bytes_ = std::move(token_bytes);
  std::vector<int32_t> order;
  for (int32_t id = 0; id < (int32_t)v->bytes_.size(); ++id)
    if (!v->bytes_[id].empty()) order.push_back(id);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return v->bytes_[a] != v->bytes_[b] ? v->bytes_[a] < v->bytes_[b] : a < b;
  });
  v->ids_ = order;
  // Depth-first construction over the sorted ids: the tokens [lo, hi) share the first `depth` bytes.
  auto& nodes = v->nodes_;
  auto build_node = [&](auto& self, size_t lo, size_t hi, size_t depth, uint8_t byte) -> void {
    const uint32_t me = (uint32_t)nodes.size();
    nodes.push_back({byte, 0, (uint32_t)lo, (uint32_t)lo});
    size_t i = lo;
    while (i < hi && v->bytes_[order[i]].size() == depth) ++i;  // shorter strings sort first
    nodes[me].tokens_end = (uint32_t)i;
    v->max_len_ = std::max(v->max_len_, depth);
    while (i < hi) {
      const uint8_t c = (uint8_t)v->bytes_[order[i]][depth];
      size_t j = i;
      while (j < hi && (uint8_t)v->bytes_[order[j]][depth] == c) ++j;
      self(self, i, j, depth + 1, c);
      i = j;
    }
    nodes[me].next = (uint32_t)nodes.size();
  };
  build_node(build_node, 0, order.size(), 0, 0);
  return v;
}

}  // namespace ewgpu::grammar
