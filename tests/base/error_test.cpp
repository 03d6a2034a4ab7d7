#include "base/error.h"

#include <gtest/gtest.h>

namespace ewgpu {
namespace {

Result<int> parsePositive(int v) {
  if (v <= 0) return makeError(ErrorCode::kBadRequest, "must be positive", {{"value", v}});
  return v;
}

Status chain(int v) {
  EWGPU_TRY(parsePositive(v));
  return {};
}

TEST(Error, ResultCarriesValueOrTypedError) {
  auto ok = parsePositive(3);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 3);
  auto bad = parsePositive(-1);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kBadRequest);
  EXPECT_EQ(bad.error().detail["value"], -1);
  EXPECT_EQ(bad.error().toJson()["code"], "BAD_REQUEST");
}

TEST(Error, TryPropagates) {
  EXPECT_TRUE(chain(1).ok());
  Status s = chain(0);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message, "must be positive");
}

TEST(Error, EveryCodeHasAWireName) {
  for (int c = 0; c <= (int)ErrorCode::kInternal; ++c) {
    auto name = errorCodeName((ErrorCode)c);
    EXPECT_FALSE(name.empty());
    for (char ch : name) EXPECT_TRUE((ch >= 'A' && ch <= 'Z') || ch == '_') << name;
  }
}

}  // namespace
}  // namespace ewgpu
