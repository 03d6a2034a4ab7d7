#include "grammar/grammar.h"

#include <cstdio>

namespace ewgpu::grammar {

uint32_t GrammarBuilder::newRule(std::string name) {
  names_.push_back(std::move(name));
  rules_.emplace_back();
  return (uint32_t)rules_.size() - 1;
}

void GrammarBuilder::addAlt(uint32_t rule, const Seq& seq) { rules_[rule].push_back(seq); }

Seq GrammarBuilder::literal(std::string_view s) {
  Seq out;
  for (char c : s) out.push_back(byte((uint8_t)c));
  return out;
}

Seq GrammarBuilder::cat(std::initializer_list<Seq> parts) {
  Seq out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

Sym GrammarBuilder::choice(std::string name, const std::vector<Seq>& alternatives) {
  const uint32_t r = newRule(std::move(name));
  for (const auto& a : alternatives) addAlt(r, a);
  return ref(r);
}

Sym GrammarBuilder::optional(std::string name, const Seq& seq) { return choice(std::move(name), {seq, {}}); }

Sym GrammarBuilder::repeat(std::string name, const Seq& seq, uint32_t min, int64_t max) {
  Seq head;
  for (uint32_t i = 0; i < min; ++i) head.insert(head.end(), seq.begin(), seq.end());
  if (max < 0) {  // tail := seq tail | ε
    const uint32_t tail = newRule(name + "*");
    addAlt(tail, cat({seq, {ref(tail)}}));
    addAlt(tail, {});
    head.push_back(ref(tail));
  } else if (max > (int64_t)min) {  // o_1 := seq | ε; o_j := seq o_{j-1} | ε
    uint32_t prev = newRule(name + "?1");
    addAlt(prev, seq);
    addAlt(prev, {});
    for (int64_t j = 2; j <= max - (int64_t)min; ++j) {
      const uint32_t o = newRule(name + "?" + std::to_string(j));
      addAlt(o, cat({seq, {ref(prev)}}));
      addAlt(o, {});
      prev = o;
    }
    head.push_back(ref(prev));
  }
  return choice(std::move(name), {head});
}

Sym GrammarBuilder::separated(std::string name, const Seq& item, const Seq& sep, uint32_t min, int64_t max) {
  if (max == 0) return choice(std::move(name), {{}});
  if (min == 0) {
    Sym some = separated(name + "+", item, sep, 1, max);
    return choice(std::move(name), {{some}, {}});
  }
  Sym rest = repeat(name + ".rest", cat({sep, item}), min - 1, max < 0 ? -1 : max - 1);
  return choice(std::move(name), {cat({item, {rest}})});
}

Grammar GrammarBuilder::build(uint32_t root) {
  Grammar g;
  g.root = root;
  g.names = names_;
  g.alts.resize(rules_.size());
  for (size_t r = 0; r < rules_.size(); ++r) {
    for (const Seq& seq : rules_[r]) {
      g.alts[r].push_back((uint32_t)g.elements.size());
      for (const Sym& s : seq) {
        if (s.rule) {
          g.elements.push_back({Element::kRule, s.id});
          continue;
        }
        uint32_t idx = 0;
        while (idx < g.sets.size() && !(g.sets[idx] == s.set)) ++idx;
        if (idx == g.sets.size()) g.sets.push_back(s.set);
        g.elements.push_back({Element::kBytes, idx});
      }
      g.elements.push_back({Element::kEnd, 0});
    }
  }
  return g;
}

namespace {

std::string setText(const ByteSet& s) {
  std::string out = "[";
  int n = 0;
  for (int c = 0; c < 256; ++c) n += s.has((uint8_t)c);
  if (n == 1) {
    for (int c = 0; c < 256; ++c)
      if (s.has((uint8_t)c)) {
        char buf[8];
        if (c >= 0x21 && c < 0x7f && c != '\'') return std::string("'") + (char)c + "'";
        std::snprintf(buf, sizeof buf, "x%02X", c);
        return buf;
      }
  }
  for (int c = 0; c < 256;) {
    if (!s.has((uint8_t)c)) {
      ++c;
      continue;
    }
    int e = c;
    while (e + 1 < 256 && s.has((uint8_t)(e + 1))) ++e;
    char buf[16];
    if (e == c) std::snprintf(buf, sizeof buf, "%02X ", c);
    else std::snprintf(buf, sizeof buf, "%02X-%02X ", c, e);
    out += buf;
    c = e + 1;
  }
  if (out.size() > 1) out.pop_back();
  return out + "]";
}

}  // namespace

std::string Grammar::dump() const {
  std::string out;
  for (size_t r = 0; r < alts.size(); ++r) {
    out += names[r] + " ::=";
    for (size_t a = 0; a < alts[r].size(); ++a) {
      if (a) out += " |";
      bool empty = true;
      for (uint32_t p = alts[r][a]; elements[p].kind != Element::kEnd; ++p) {
        empty = false;
        const Element& e = elements[p];
        out += " " + (e.kind == Element::kRule ? names[e.value] : setText(sets[e.value]));
      }
      if (empty) out += " ε";
    }
    out += "\n";
  }
  return out;
}

}  // namespace ewgpu::grammar
