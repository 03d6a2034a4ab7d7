// The model's vocabulary as the grammar matcher sees it: the bytes each token id decodes to, in a prefix tree
// (trie) so that tokens sharing a prefix are matched once. Built once per tokenizer (the api layer keeps one per
// loaded model) and shared, immutable, by every grammar row of that model.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ewgpu::grammar {

class TokenVocabulary {
 public:
  // `token_bytes[id]`: the bytes token id decodes to on its own; an empty string marks a token a grammar never
  // allows (special tokens, unused ids). `size` = token_bytes.size() is the mask width in bits.
  static std::shared_ptr<const TokenVocabulary> build(std::vector<std::string> token_bytes);

  // A trie node in depth-first order: node 0 is the root (the empty prefix); the children of node i start at
  // i + 1 and follow one another through `next`; `next` of the last child is its parent's `next`.
  struct Node {
    uint8_t byte = 0;      // the byte on the edge from the parent
    uint32_t next = 0;     // the node after this subtree
    uint32_t tokens = 0;   // [tokens, tokens_end) in token_ids(): the ids whose bytes end here
    uint32_t tokens_end = 0;
  };

  uint32_t size() const { return (uint32_t)bytes_.size(); }
  const std::string& bytes(int32_t id) const { return bytes_[id]; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<int32_t>& tokenIds() const { return ids_; }
  size_t maxTokenBytes() const { return max_len_; }

 private:
  std::vector<std::string> bytes_;
  std::vector<Node> nodes_;
  std::vector<int32_t> ids_;
  size_t max_len_ = 0;
};

}  // namespace ewgpu::grammar
