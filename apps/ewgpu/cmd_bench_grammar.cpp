// ewgpu bench grammar: what structured output costs.
//  1. CPU, per tokenizer (--tokenizer, repeatable): building the vocabulary trie; compiling each schema of a small
//     suite to a grammar; the mask per token (the CPU time to compute the allowed-token bitmask) along a document
//     the matcher itself generates (first token of each state uncached; the cache hit rate is printed).
//  2. GPU (--model): decode tok/s of a batch of free rows alone, and of the same batch with one more row under a
//     grammar (the free rows' aggregate and the grammar row's own rate), greedy.
#include "command.h"
#include "ewgpu/engine.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "grammar/tokenizer_vocabulary.h"
#include "tokenizer/tokenizer.h"

#include <chrono>
#include <cstdio>
#include <iostream>
#include <random>

namespace ewgpu::cli {
namespace {

using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

double msSince(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

const std::vector<std::pair<const char*, json>>& benchSchemas() {
  static const std::vector<std::pair<const char*, json>> s = {
      {"json_object", nullptr},
      {"person", json::parse(R"({"type":"object","properties":{"name":{"type":"string","maxLength":20},
        "age":{"type":"integer"},"email":{"type":["string","null"]},"tags":{"type":"array","items":{"type":"string"},
        "maxItems":4}},"required":["name","age","email","tags"],"additionalProperties":false})")},
      {"enum+anyOf", json::parse(R"({"type":"object","properties":{"status":{"enum":["ok","error","pending"]},
        "result":{"anyOf":[{"type":"number"},{"type":"string","format":"date-time"},{"type":"null"}]}},
        "required":["status","result"]})")},
      {"nested array", json::parse(R"({"type":"array","items":{"type":"object","properties":{"id":{"type":"integer"},
        "done":{"type":"boolean"},"note":{"type":"string","maxLength":64}},"required":["id","done"]},"maxItems":8})")},
  };
  return s;
}

struct MaskRow {
  std::string schema;
  double compile_ms = 0, miss_ms = 0, mean_mask_ms = 0, max_mask_ms = 0;
  uint32_t tokens = 0, misses = 0;
};

// Walks a document: at each step the mask, then a random allowed token (fixed seed; whitespace-only tokens are
// skipped so the walk moves on), until the document is complete or 64 tokens. Random picks spend most steps
// inside strings, where nearly the whole vocabulary is allowed: the costly masks.
MaskRow maskCost(const std::shared_ptr<const grammar::TokenVocabulary>& v, const char* name, const json& schema) {
  MaskRow row;
  row.schema = name;
  auto t0 = Clock::now();
  auto cg = std::make_shared<grammar::CompiledGrammar>();
  if (schema.is_null()) cg->grammar = grammar::jsonObjectGrammar();
  else cg->grammar = *grammar::compileJsonSchema(schema, "schema");
  cg->vocab = v;
  row.compile_ms = msSince(t0);
  grammar::Matcher m(cg);
  std::vector<uint32_t> mask((v->size() + 31) / 32);
  double total = 0, miss_total = 0;
  std::mt19937 rng(1);
  std::vector<int32_t> allowed;
  for (uint32_t step = 0; step < 64 && !m.mustEnd(); ++step) {
    const uint64_t hits = m.stats().mask_cache_hits;
    t0 = Clock::now();
    m.fillMask(mask, {});
    const double ms = msSince(t0);
    total += ms;
    if (m.stats().mask_cache_hits == hits) miss_total += ms, ++row.misses;
    row.max_mask_ms = std::max(row.max_mask_ms, ms);
    ++row.tokens;
    allowed.clear();
    for (uint32_t id = 0; id < v->size(); ++id)
      if ((mask[id >> 5] >> (id & 31)) & 1) {
        const std::string& b = v->bytes((int32_t)id);
        if (b.find_first_not_of(" \t\r\n") != std::string::npos) allowed.push_back((int32_t)id);
      }
    if (allowed.empty() || !m.acceptToken(allowed[rng() % allowed.size()])) break;
  }
  row.mean_mask_ms = row.tokens ? total / row.tokens : 0;
  row.miss_ms = row.misses ? miss_total / row.misses : 0;
  return row;
}

struct GrammarFlags {
  std::vector<std::string> tokenizers;
  std::string model, adapter;
  uint32_t rows = 4, tokens = 64;
  bool json = false;
};

Result<double> decodeRate(Engine& e, const CompletionRequest& r) {
  auto h = e.complete(r);
  if (!h) return std::move(h).error();
  const CompletionResult& res = (*h)->wait();
  if (res.error) return *res.error;
  return res.timings.decode_tok_s;
}

int runBenchGrammar(const GrammarFlags& f) {
  json out = {{"tokenizers", json::array()}};
  for (const auto& path : f.tokenizers) {
    auto tok = Tokenizer::fromFile(path);
    if (!tok) return reportError(tok.error(), f.json);
    auto t0 = Clock::now();
    auto v = grammar::vocabularyOf(*tok);
    const double build_ms = msSince(t0);
    if (f.json) {
      json rows = json::array();
      for (const auto& [name, schema] : benchSchemas()) {
        MaskRow r = maskCost(v, name, schema);
        rows.push_back({{"schema", r.schema}, {"compile_ms", r.compile_ms}, {"tokens", r.tokens},
                        {"masks_computed", r.misses}, {"ms_per_computed_mask", r.miss_ms},
                        {"max_mask_ms", r.max_mask_ms}, {"mean_mask_ms", r.mean_mask_ms}});
      }
      out["tokenizers"].push_back({{"path", path}, {"vocab", v->size()}, {"trie_nodes", v->nodes().size()},
                                   {"trie_ms", build_ms}, {"schemas", rows}});
      continue;
    }
    std::printf("%s: %u tokens, trie of %zu nodes built in %.1f ms\n\n", path.c_str(), v->size(), v->nodes().size(),
                build_ms);
    std::printf("| schema | compile ms | tokens | masks computed (not cached) | ms per computed mask | max ms | mean ms per token |\n");
    std::printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for (const auto& [name, schema] : benchSchemas()) {
      MaskRow r = maskCost(v, name, schema);
      std::printf("| %s | %.2f | %u | %u | %.2f | %.2f | %.2f |\n", r.schema.c_str(), r.compile_ms, r.tokens, r.misses,
                  r.miss_ms, r.max_mask_ms, r.mean_mask_ms);
    }
    std::printf("\n");
  }
  if (f.model.empty()) {
    if (f.json) std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }

  EngineOptions eo;
  eo.rows = f.rows;
  eo.adapter = f.adapter;
  auto eng = Engine::create(eo);
  if (!eng) return reportError(eng.error(), f.json);
  Engine& e = **eng;
  auto info = e.load(f.model)->wait();
  if (!info) return reportError(info.error(), f.json);
  auto request = [&](uint32_t i, bool grammar) {
    CompletionRequest r;
    r.prompt = "Story " + std::to_string(i) + ": once";
    r.max_tokens = f.tokens;
    r.temperature = 0;
    if (grammar) {  // a document that cannot end before the budget: an array of many booleans
      r.response_format = ResponseFormat{"json_schema", {{"type", "array"}, {"items", {{"type", "boolean"}}}, {"minItems", 256}}, "b", false};
    }
    return r;
  };
  // Warm-up: every pipeline once, with and without a grammar row.
  if (auto w = decodeRate(e, request(0, true)); !w) return reportError(w.error(), f.json);
  auto batch = [&](uint32_t free_rows, bool grammar_row, double* grammar_rate) -> Result<double> {
    std::vector<CompletionHandle> hs;
    for (uint32_t i = 0; i < free_rows + (grammar_row ? 1 : 0); ++i) {
      auto h = e.complete(request(i + 1, grammar_row && i == free_rows));
      if (!h) return std::move(h).error();
      hs.push_back(*h);
    }
    double free_rate = 0;
    for (uint32_t i = 0; i < hs.size(); ++i) {
      const CompletionResult& r = hs[i]->wait();
      if (r.error) return *r.error;
      if (i < free_rows) free_rate += r.timings.decode_tok_s;
      else if (grammar_rate) *grammar_rate = r.timings.decode_tok_s;
    }
    return free_rate;
  };
  const uint32_t free_rows = f.rows - 1;
  double g_rate = 0, g_alone = 0;
  auto alone = batch(free_rows, false, nullptr);
  auto beside = batch(free_rows, true, &g_rate);
  auto only = batch(0, true, &g_alone);
  if (!alone) return reportError(alone.error(), f.json);
  if (!beside) return reportError(beside.error(), f.json);
  if (!only) return reportError(only.error(), f.json);
  if (f.json) {
    out["decode"] = {{"model", info->id}, {"tokens_per_row", f.tokens}, {"free_rows", free_rows},
                     {"free_rows_tok_s", *alone}, {"free_rows_beside_grammar_tok_s", *beside},
                     {"grammar_row_beside_tok_s", g_rate}, {"grammar_row_alone_tok_s", g_alone}};
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("%s, %u tokens per row, greedy, decode tok/s (sum over rows):\n\n", info->id.c_str(), f.tokens);
  std::printf("| batch | free rows tok/s | grammar row tok/s | free rows vs alone |\n| --- | ---: | ---: | ---: |\n");
  std::printf("| %u free rows | %.1f | - | 1.00x |\n", free_rows, *alone);
  std::printf("| %u free rows + 1 grammar row | %.1f | %.1f | %.2fx |\n", free_rows, *beside, g_rate, *beside / *alone);
  std::printf("| 1 grammar row alone | - | %.1f | - |\n", g_alone);
  return 0;
}

Registration reg{{"bench grammar",
                  "structured output: grammar compile time, mask CPU time per token, decode tok/s with a grammar row",
                  [](CLI::App& app) {
                    auto f = std::make_shared<GrammarFlags>();
                    app.add_option("--tokenizer", f->tokenizers, "a tokenizer.json to measure the mask on (repeatable)");
                    app.add_option("--model", f->model, "a model folder or store id: decode with and without a grammar row");
                    addAdapterFlag(app, f->adapter);
                    app.add_option("--rows", f->rows, "decode rows (the grammar run adds its row to rows - 1 free ones)")
                        ->check(bounded<uint32_t>(2, 8))
                        ->capture_default_str();
                    app.add_option("--tokens", f->tokens, "tokens per row")
                        ->check(bounded<uint32_t>(2, 4096))
                        ->capture_default_str();
                    addJsonFlag(app, f->json);
                    return [f] { return runBenchGrammar(*f); };
                  }}};

}  // namespace
}  // namespace ewgpu::cli
