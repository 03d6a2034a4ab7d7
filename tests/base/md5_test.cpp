#include "base/md5.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace ewgpu {
namespace {

std::string md5Of(const std::string& s) { return md5Hex({(const uint8_t*)s.data(), s.size()}); }

TEST(Md5, Rfc1321TestSuite) {
  EXPECT_EQ(md5Of(""), "d41d8cd98f00b204e9800998ecf8427e");
  EXPECT_EQ(md5Of("a"), "0cc175b9c0f1b6a831c399e269772661");
  EXPECT_EQ(md5Of("abc"), "900150983cd24fb0d6963f7d28e17f72");
  EXPECT_EQ(md5Of("message digest"), "f96b697d7cb7938d525a2f31aaf161d0");
  EXPECT_EQ(md5Of("abcdefghijklmnopqrstuvwxyz"), "c3fcd3d76192e4007dfb496cca67e13b");
  EXPECT_EQ(md5Of("12345678901234567890123456789012345678901234567890123456789012345678901234567890"),
            "57edf4a22be3c955ac49da2e2107b67a");
}

TEST(Md5, StreamingEqualsOneShotAndCoreutils) {
  std::mt19937 rng(7);
  std::vector<uint8_t> data(1 << 20 | 77);
  for (auto& b : data) b = (uint8_t)rng();
  Md5 m;
  size_t pos = 0;
  while (pos < data.size()) {  // uneven pieces cross block boundaries
    size_t n = std::min<size_t>(1 + rng() % 200, data.size() - pos);
    m.update(data.data() + pos, n);
    pos += n;
  }
  std::string streamed = m.hexDigest();
  EXPECT_EQ(streamed, md5Hex(data));

  std::string path = testing::TempDir() + "/md5_test.bin";
  FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_TRUE(f);
  std::fwrite(data.data(), 1, data.size(), f);
  std::fclose(f);
  FILE* p = popen(("md5sum " + path).c_str(), "r");
  ASSERT_TRUE(p);
  char buf[33] = {};
  ASSERT_EQ(std::fread(buf, 1, 32, p), 32u);
  pclose(p);
  EXPECT_EQ(streamed, std::string(buf, 32));
}

}  // namespace
}  // namespace ewgpu
