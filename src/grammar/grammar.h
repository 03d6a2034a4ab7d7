// A context-free grammar over bytes, the form every structured-output constraint is compiled to
// (docs/structured-output.md). A rule is a list of alternatives; an alternative is a sequence of elements, each a
// set of bytes (one byte of input) or a reference to a rule. All alternatives are laid end to end in one element
// array, each closed by an End element, so a position in the grammar is one index: the matcher's stacks are
// lists of such indices (grammar/matcher.h).
//
// The builder has the few combinators the JSON Schema compiler needs (literal, optional, repeat with bounds);
// repetitions become right-recursive helper rules. A grammar must have no left recursion and no repetition of
// something that can match the empty string; the compiler never builds either, and the matcher guards against
// epsilon cycles anyway.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ewgpu::grammar {

struct ByteSet {
  std::array<uint64_t, 4> bits{};  // bit c = byte c is in the set
  bool has(uint8_t c) const { return (bits[c >> 6] >> (c & 63)) & 1; }
  ByteSet& add(uint8_t c) {
    bits[c >> 6] |= uint64_t{1} << (c & 63);
    return *this;
  }
  ByteSet& add(uint8_t lo, uint8_t hi) {
    for (unsigned c = lo; c <= hi; ++c) add((uint8_t)c);
    return *this;
  }
  bool operator==(const ByteSet&) const = default;
};

struct Element {
  enum Kind : uint8_t { kBytes, kRule, kEnd };
  Kind kind = kEnd;
  uint32_t value = 0;  // kBytes: index into Grammar::sets; kRule: the rule id
};

struct Grammar {
  std::vector<ByteSet> sets;
  std::vector<Element> elements;            // every alternative, each closed by kEnd
  std::vector<std::vector<uint32_t>> alts;  // rule -> start index in `elements` of each alternative
  std::vector<std::string> names;           // rule -> name (for messages and dumps)
  uint32_t root = 0;

  size_t ruleCount() const { return alts.size(); }
  std::string dump() const;  // one rule per line, EBNF-like: for tests and debugging
};

// One element of a sequence under construction: a byte set or a rule reference.
struct Sym {
  bool rule = false;
  uint32_t id = 0;  // rule id
  ByteSet set;
};
using Seq = std::vector<Sym>;

class GrammarBuilder {
 public:
  uint32_t newRule(std::string name);  // a rule with no alternatives yet
  void addAlt(uint32_t rule, const Seq& seq);  // an empty seq is the empty alternative
  static Sym ref(uint32_t rule) { return Sym{true, rule, {}}; }
  static Sym bytes(const ByteSet& s) { return Sym{false, 0, s}; }
  static Sym byte(uint8_t c) { return Sym{false, 0, ByteSet{}.add(c)}; }
  static Seq literal(std::string_view s);
  static Seq cat(std::initializer_list<Seq> parts);
  // A rule matching any of `alternatives`.
  Sym choice(std::string name, const std::vector<Seq>& alternatives);
  Sym optional(std::string name, const Seq& seq);
  // seq repeated min..max times (max < 0: unbounded); seq must not match the empty string. Bounded forms expand
  // to max - min nested optional rules, so the caller caps max.
  Sym repeat(std::string name, const Seq& seq, uint32_t min, int64_t max);
  // `item` min..max times with `sep` between consecutive items (a JSON array body, a list of members).
  Sym separated(std::string name, const Seq& item, const Seq& sep, uint32_t min, int64_t max);

  Grammar build(uint32_t root);

 private:
  std::vector<std::string> names_;
  std::vector<std::vector<Seq>> rules_;
};

}  // namespace ewgpu::grammar
