// docs/http-api.md documents exactly the routes the server registers: every "### METHOD /path" heading is a
// route, and every route has its heading.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "server/http_server.h"

namespace {

std::string readFile(const std::string& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(HttpDoc, EveryRouteIsDocumentedAndNothingElse) {
  const std::string page = readFile(std::string(EWGPU_SOURCE_DIR) + "/docs/http-api.md");
  ASSERT_FALSE(page.empty());
  std::set<std::string> documented;
  std::regex heading(R"(^### (GET|POST) (/\S*)\s*$)");
  std::istringstream lines(page);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_match(line, m, heading)) documented.insert(m[1].str() + " " + m[2].str());
  }
  std::set<std::string> registered;
  for (const auto& r : ewgpu::server::allRoutes()) registered.insert(r.method + " " + r.path);
  EXPECT_GE(registered.size(), 14u);
  for (const auto& r : registered)
    EXPECT_TRUE(documented.count(r)) << r << " is registered but not in docs/http-api.md";
  for (const auto& d : documented) EXPECT_TRUE(registered.count(d)) << d << " is documented but not registered";
}

TEST(HttpDoc, ServerRoutesMatchTheList) {
  ewgpu::EngineOptions eo;
  auto engine = ewgpu::Engine::create(eo);
  ASSERT_TRUE(engine.ok());
  auto srv = ewgpu::server::HttpServer::create(**engine, {});
  ASSERT_TRUE(srv.ok());
  const auto a = (*srv)->routes(), b = ewgpu::server::allRoutes();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].method + a[i].path, b[i].method + b[i].path);
}

}  // namespace
