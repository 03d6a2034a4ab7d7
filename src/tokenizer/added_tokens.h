// Added tokens (the "added_tokens" list of tokenizer.json): strings such as <|im_start|> that are cut out
// of the input before normalization and map straight to their ids. Matching is leftmost-longest over a
// byte trie (HF tokenizers uses Aho-Corasick with the same semantics); lstrip/rstrip absorb neighbouring
// whitespace and single_word rejects matches inside words. Tokens flagged `normalized` are matched in a
// second pass on normalized text (their content normalized the same way), as HF does.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ewgpu {

struct AddedToken {
  int32_t id = -1;
  std::string content;
  bool singleWord = false, lstrip = false, rstrip = false, normalized = false, special = false;
};

class AddedTokenMatcher {
 public:
  // A piece of the input: a byte range that is either an added token (tokenId >= 0) or plain text.
  struct Segment {
    uint32_t begin, end;
    int32_t tokenId;
  };

  void add(const AddedToken& token);  // `token.content` is the string to match
  bool empty() const { return tokens_.empty(); }

  // Cuts well-formed UTF-8 `text` into `out` (cleared first): tokens and the text between them.
  // Empty text segments are dropped.
  void split(std::string_view text, std::vector<Segment>& out) const;

 private:
  // Longest token starting at `pos` (index into tokens_), or -1.
  int32_t longestAt(std::string_view text, size_t pos, size_t* len) const;

  struct Node {
    int32_t token = -1;  // index into tokens_ of a token ending here
  };
  std::vector<Node> nodes_{Node{}};
  std::unordered_map<uint64_t, int32_t> edges_;  // (node << 8 | byte) -> child node
  std::array<bool, 256> firstByte_{};
  std::vector<AddedToken> tokens_;
};

}  // namespace ewgpu
