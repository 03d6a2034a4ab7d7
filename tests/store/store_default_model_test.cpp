// The built-in default model as a store entry (store/default_model.h): written from the embedded bytes on first
// use, registered as a local model with no URL, md5-verified, found again without rewriting, repaired when its
// cached files go missing, and resolvable as the id `default`.
#include "store/default_model.h"
#include "store_test_util.h"

#include "model/model_folder.h"

namespace ewgpu::test {
namespace {

TEST(DefaultModel, EmbeddedFilesAreTheCommittedFolder) {
  auto files = defaultModelFiles();
  ASSERT_GE(files.size(), 4u);
  bool config = false, shard = false;
  for (const auto& f : files) {
    EXPECT_EQ(md5Hex(f.bytes()), f.md5) << f.name;
    config |= f.name == "mlc-chat-config.json";
    shard |= f.name.starts_with("params_shard_");
    auto on_disk = md5OfFile(std::string(EWGPU_SOURCE_DIR) + "/models/default/q4f16_1/" + std::string(f.name));
    ASSERT_TRUE(on_disk.ok());
    EXPECT_EQ(*on_disk, f.md5) << f.name << ": rebuild after changing models/default";
  }
  EXPECT_TRUE(config && shard);
}

TEST(DefaultModel, MaterialisedRegisteredVerifiedAndRepaired) {
  TempDir cache;
  auto store = ModelStore::open({.cache_dir = cache.path});
  ASSERT_TRUE(store.ok()) << store.error().toString();
  auto dir = defaultModelDir(**store);
  ASSERT_TRUE(dir.ok()) << dir.error().toString();
  EXPECT_TRUE(validateModelFolder(*dir).ok());
  auto rec = (*store)->record(std::string(kDefaultModelId));
  ASSERT_TRUE(rec.ok());
  EXPECT_EQ(rec->source, SourceKind::kLocal);
  EXPECT_TRUE(rec->url.empty()) << "a built-in model never reaches the network";
  EXPECT_EQ(rec->dir, *dir);
  EXPECT_EQ(rec->local_path.rfind(cache.path + "/builtin/default-", 0), 0u) << rec->local_path;
  EXPECT_TRUE((*store)->verify(std::string(kDefaultModelId), /*check_md5=*/true).ok());

  // Found again as it is; `default` resolves to the same folder.
  auto again = defaultModelDir(**store);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *dir);
  auto resolved = (*store)->resolve("default");
  ASSERT_TRUE(resolved.ok()) << resolved.error().toString();
  EXPECT_EQ(*resolved, *dir);

  // A cached file removed (evicted by hand): the next call puts it back.
  std::filesystem::remove(*dir + "/params_shard_0.bin");
  auto repaired = defaultModelDir(**store);
  ASSERT_TRUE(repaired.ok()) << repaired.error().toString();
  EXPECT_TRUE((*store)->verify(std::string(kDefaultModelId), true).ok());
}

}  // namespace
}  // namespace ewgpu::test
