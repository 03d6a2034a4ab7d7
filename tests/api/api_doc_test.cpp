// docs/api.md against the code: every public Engine method of include/ewgpu/engine.h, every error code, outcome,
// priority band and event type is documented, and the page names nothing the header lacks.
#include "ewgpu/engine.h"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

namespace ewgpu {
namespace {

std::string readFile(const std::string& rel) {
  std::ifstream in(std::string(EWGPU_SOURCE_DIR) + "/" + rel);
  EXPECT_TRUE(in.good()) << rel;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Method names declared in `class Engine { public: ... }` of the header.
std::set<std::string> engineMethods(const std::string& header) {
  const size_t start = header.find("class Engine {");
  const size_t end = header.find("\n private:", start);
  EXPECT_NE(start, std::string::npos);
  const std::string body = header.substr(start, end - start);
  std::set<std::string> names;
  std::regex decl(R"(\n  (?:static )?[A-Za-z_][A-Za-z_:<>,\*() ]*?[ \*&]([a-z][A-Za-z]*)\()");
  for (auto it = std::sregex_iterator(body.begin(), body.end(), decl); it != std::sregex_iterator(); ++it)
    names.insert((*it)[1]);
  return names;
}

// Method names the page documents: `engine->name(` / `name(` in its "### name" headings.
std::set<std::string> documentedMethods(const std::string& page) {
  std::set<std::string> names;
  std::regex heading(R"(\n### `([a-zA-Z.]+)\()");
  for (auto it = std::sregex_iterator(page.begin(), page.end(), heading); it != std::sregex_iterator(); ++it)
    names.insert((*it)[1]);
  return names;
}

TEST(ApiDoc, EveryPublicMethodIsDocumentedAndNothingElse) {
  const std::string header = readFile("include/ewgpu/engine.h");
  const std::string page = readFile("docs/api.md");
  std::set<std::string> in_header = engineMethods(header);
  in_header.insert("chat.completions.create");  // the nested facades
  in_header.insert("embeddings.create");
  const std::set<std::string> in_page = documentedMethods(page);
  EXPECT_GE(in_header.size(), 20u);
  for (const auto& m : in_header) EXPECT_TRUE(in_page.count(m)) << "docs/api.md has no \"### `" << m << "(\" section";
  for (const auto& m : in_page) EXPECT_TRUE(in_header.count(m)) << "docs/api.md documents " << m << ", which the header lacks";
}

TEST(ApiDoc, EveryErrorCodeOutcomeBandAndEventIsDocumented) {
  const std::string page = readFile("docs/api.md");
  for (ErrorCode c : kAllErrorCodes) {
    const std::string name(errorCodeName(c));
    EXPECT_NE(page.find("`" + name + "`"), std::string::npos) << name;
  }
  for (Outcome o : {Outcome::kCompleted, Outcome::kCancelled, Outcome::kPreempted, Outcome::kSuperseded, Outcome::kFailed})
    EXPECT_NE(page.find("`" + std::string(outcomeName(o)) + "`"), std::string::npos) << outcomeName(o);
  for (Priority p : {Priority::kInteractive, Priority::kNormal, Priority::kBackground})
    EXPECT_NE(page.find("`" + std::string(priorityName(p)) + "`"), std::string::npos) << priorityName(p);
  // The event types listed in the header's EngineEvent comment.
  const std::string types = readFile("include/ewgpu/types.h");
  std::regex ev(R"re("((?:model|job|config|device)\.[a-z]+)")re");
  int n = 0;
  for (auto it = std::sregex_iterator(types.begin(), types.end(), ev); it != std::sregex_iterator(); ++it, ++n)
    EXPECT_NE(page.find("`" + (*it)[1].str() + "`"), std::string::npos) << (*it)[1];
  EXPECT_GE(n, 10);
}

TEST(ApiDoc, TheErrorCodeListHasNoDuplicates) {
  std::set<std::string> names;
  for (ErrorCode c : kAllErrorCodes) EXPECT_TRUE(names.insert(std::string(errorCodeName(c))).second) << errorCodeName(c);
  EXPECT_EQ(names.count("INTERNAL"), 1u);
}

}  // namespace
}  // namespace ewgpu
