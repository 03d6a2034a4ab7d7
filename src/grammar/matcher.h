// The token-level matcher of one generation: where the output is in the grammar, which tokens of the vocabulary
// may come next (a bitmask the GPU sampler applies), and whether the document is complete.
//
// The state is a set of stacks, a nondeterministic pushdown recognizer over bytes: each stack is a list of
// grammar positions, the top one a byte-set element still to match, the ones below the places to return to
// when a rule ends. Stacks are interned as linked nodes (position, parent), so equal stacks are one id and a
// state is a sorted list of ids. A rule reference at the end of an alternative returns straight to the parent
// (tail call), so a repetition does not deepen the stack and the state inside, say, a long string repeats: the
// mask of a state is cached. Computing a mask walks the vocabulary's trie from the current state, one byte
// transition per trie edge (memoised per stack and byte), and prunes every subtree no stack survives.
//
// Not thread-safe: one matcher per row, used by the executor's thread. The grammar and vocabulary it points
// to are immutable and shared.
#pragma once

#include "grammar/grammar.h"
#include "grammar/vocabulary.h"

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace ewgpu::grammar {

// A grammar ready to run against one model's vocabulary.
struct CompiledGrammar {
  Grammar grammar;
  std::shared_ptr<const TokenVocabulary> vocab;
  std::string kind;  // "json_object" | "json_schema" (for messages)
};

struct MatcherStats {
  uint64_t masks = 0, mask_cache_hits = 0, trie_edges = 0;
};

class Matcher {
 public:
  explicit Matcher(std::shared_ptr<const CompiledGrammar> g);

  // Feeds one token's bytes. False, with the state unchanged, if the grammar does not allow them (or the id is
  // outside the vocabulary or marked never-allowed).
  bool acceptToken(int32_t id);
  bool acceptBytes(std::string_view bytes);
  // Whether acceptBytes(bytes) would succeed, byte by byte (no trie, no mask cache), leaving the state as it is.
  bool allows(std::string_view bytes);
  bool canEnd() const;   // the document is complete here: a stop token may come
  bool mustEnd() const;  // complete, and nothing can follow: the generation is over
  bool dead() const { return state_.empty(); }

  // Allowed next tokens as bits (bit id % 32 of word id / 32), ceil(vocab / 32) words; the ids in `stop_ids`
  // are allowed exactly when canEnd() (even where their bytes would fit the grammar: a stop id ends the row).
  void fillMask(std::span<uint32_t> mask, std::span<const int32_t> stop_ids);

  const MatcherStats& stats() const { return stats_; }
  const CompiledGrammar& compiled() const { return *g_; }

 private:
  static constexpr uint32_t kAccept = 0;      // the empty stack: the root rule is complete
  static constexpr uint32_t kNoParent = ~0u;  // the bottom of a stack
  struct Node {
    uint32_t pos, parent;
  };
  uint32_t intern(uint32_t pos, uint32_t parent);
  void expand(uint32_t pos, uint32_t parent, std::vector<uint32_t>& out, int depth);
  std::span<const uint32_t> step(uint32_t stack, uint8_t byte);  // memoised
  void advance(const std::vector<uint32_t>& from, uint8_t byte, std::vector<uint32_t>& to);
  bool run(std::string_view bytes, std::vector<uint32_t>& state);  // advances `state` over bytes; false if it dies
  void walk(uint32_t node, size_t depth, std::span<uint32_t> mask);

  std::shared_ptr<const CompiledGrammar> g_;
  const Grammar& gr_;
  std::vector<Node> nodes_;
  std::unordered_map<uint64_t, uint32_t> interned_;
  std::unordered_map<uint64_t, std::pair<uint32_t, uint32_t>> steps_;  // (stack, byte) -> [begin, count) in pool_
  std::vector<uint32_t> pool_;
  std::vector<uint32_t> state_;  // sorted stack ids
  std::unordered_set<uint64_t> seen_;  // expand(): (position, parent) pairs done in this call
  std::vector<std::vector<uint32_t>> levels_;  // walk(): the state at each trie depth
  std::map<std::vector<uint32_t>, std::vector<uint32_t>> mask_cache_;  // state -> mask (without stop ids)
  MatcherStats stats_;
};

}  // namespace ewgpu::grammar
