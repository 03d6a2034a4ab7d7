// Whole-folder validation: each test breaks one thing in a copy of a valid tiny folder and checks the
// error code and detail fields; plus md5 verification and a large sparse folder that must validate
// without its shards being read.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <functional>
#include <random>

#include "model/model_folder.h"
#include "model/tiny_model.h"
#include "model_test_util.h"

namespace ewgpu {
namespace {

using test::readJson;
using test::writeJson;

class FolderValidation : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir();
    TinyModelSpec spec;
    spec.arch = Arch::kQwen3;
    spec.quant = Quant::kQ4F16_1;
    spec.tokenizer_path = test::writeSmallTokenizer(dir_->path());
    ASSERT_TRUE(writeTinyModel(spec, *dir_ / "good").ok());
  }
  static void TearDownTestSuite() { delete dir_; }

  // A fresh copy of the good folder.
  std::string copy(const std::string& name) {
    std::string d = *dir_ / name;
    test::copyDir(*dir_ / "good", d);
    return d;
  }
  // Opens `d`, expects INVALID_MODEL_FOLDER and returns its detail.
  nlohmann::json expectInvalid(const std::string& d) {
    auto f = ModelFolder::open(d);
    EXPECT_FALSE(f.ok());
    if (f.ok()) return {};
    EXPECT_EQ(f.error().code, ErrorCode::kInvalidModelFolder) << f.error().toString();
    EXPECT_FALSE(validateModelFolder(d).ok());
    return f.error().detail;
  }
  // Edits record `name` of tensor-cache.json in place.
  void editRecord(const std::string& d, const std::string& name, const std::function<void(nlohmann::json&)>& fn) {
    auto tc = readJson(d + "/tensor-cache.json");
    bool found = false;
    for (auto& shard : tc["records"])
      for (auto& r : shard["records"])
        if (r["name"] == name) {
          fn(r);
          found = true;
        }
    ASSERT_TRUE(found) << name;
    writeJson(d + "/tensor-cache.json", tc);
  }

  static test::TempDir* dir_;
};
test::TempDir* FolderValidation::dir_ = nullptr;

const char* kNorm = "model.layers.1.input_layernorm.weight";

TEST_F(FolderValidation, GoodFolderOpens) {
  auto f = ModelFolder::open(*dir_ / "good");
  ASSERT_TRUE(f.ok()) << f.error().toString();
  EXPECT_TRUE(f->verifyChecksums().ok());
  EXPECT_NE(f->find(kNorm), nullptr);
  EXPECT_EQ(f->find("nope"), nullptr);
}

TEST_F(FolderValidation, DeletedShard) {
  std::string d = copy("deleted");
  std::filesystem::remove(d + "/params_shard_0.bin");
  auto det = expectInvalid(d);
  EXPECT_EQ(det["file"], "params_shard_0.bin");
  EXPECT_EQ(det["problem"], "missing");
}

TEST_F(FolderValidation, TruncatedAndOversizedShard) {
  for (int delta : {-1, +7}) {
    std::string d = copy("size" + std::to_string(delta));
    auto size = std::filesystem::file_size(d + "/params_shard_0.bin");
    std::filesystem::resize_file(d + "/params_shard_0.bin", size + delta);
    auto det = expectInvalid(d);
    EXPECT_EQ(det["file"], "params_shard_0.bin");
    EXPECT_EQ(det["problem"], "size_mismatch");
    EXPECT_EQ(det["expected"], size);
    EXPECT_EQ(det["actual"], size + delta);
  }
}

TEST_F(FolderValidation, RecordBeyondShard) {
  std::string d = copy("beyond");
  uint64_t size = std::filesystem::file_size(d + "/params_shard_0.bin");
  editRecord(d, kNorm, [&](nlohmann::json& r) { r["byteOffset"] = size - r["nbytes"].get<uint64_t>() + 2; });
  auto det = expectInvalid(d);
  EXPECT_EQ(det["file"], "params_shard_0.bin");
  EXPECT_EQ(det["problem"], "outside_shard");
  EXPECT_EQ(det["tensor"], kNorm);
}

TEST_F(FolderValidation, OverlappingRecords) {
  std::string d = copy("overlap");
  auto tc = readJson(d + "/tensor-cache.json");
  auto& recs = tc["records"][0]["records"];
  std::string second = recs[1]["name"];
  recs[1]["byteOffset"] = recs[0]["byteOffset"].get<uint64_t>() + 2;
  writeJson(d + "/tensor-cache.json", tc);
  auto det = expectInvalid(d);
  EXPECT_EQ(det["problem"], "overlapping_records");
  EXPECT_EQ(det["file"], "params_shard_0.bin");
  EXPECT_EQ(det["tensor"], second);
}

TEST_F(FolderValidation, UnknownDtypeAndFormats) {
  std::string d = copy("dtype");
  editRecord(d, kNorm, [](nlohmann::json& r) { r["dtype"] = "float13"; });
  auto det = expectInvalid(d);
  EXPECT_EQ(det["problem"], "unknown_dtype");
  EXPECT_EQ(det["file"], "tensor-cache.json");
  EXPECT_EQ(det["tensor"], kNorm);

  d = copy("format");
  editRecord(d, kNorm, [](nlohmann::json& r) { r["format"] = "zstd"; });
  det = expectInvalid(d);
  EXPECT_EQ(det["problem"], "unknown_format");
  EXPECT_EQ(det["tensor"], kNorm);

  d = copy("shardformat");
  auto tc = readJson(d + "/tensor-cache.json");
  tc["records"][0]["format"] = "zip-shard";
  writeJson(d + "/tensor-cache.json", tc);
  det = expectInvalid(d);
  EXPECT_EQ(det["problem"], "unknown_format");
  EXPECT_EQ(det["shard"], "params_shard_0.bin");
}

TEST_F(FolderValidation, NbytesDisagreesWithShape) {
  std::string d = copy("nbytes");
  editRecord(d, kNorm, [](nlohmann::json& r) { r["shape"] = {65}; });
  auto det = expectInvalid(d);
  EXPECT_EQ(det["problem"], "nbytes_mismatch");
  EXPECT_EQ(det["tensor"], kNorm);
  EXPECT_EQ(det["expected"], 130);
  EXPECT_EQ(det["nbytes"], 128);
}

TEST_F(FolderValidation, MissingConfigField) {
  std::string d = copy("field");
  auto cfg = readJson(d + "/mlc-chat-config.json");
  cfg["model_config"].erase("num_attention_heads");
  writeJson(d + "/mlc-chat-config.json", cfg);
  auto det = expectInvalid(d);
  EXPECT_EQ(det["file"], "mlc-chat-config.json");
  EXPECT_EQ(det["field"], "num_attention_heads");
  EXPECT_EQ(det["problem"], "missing_field");
}

TEST_F(FolderValidation, MissingTensor) {
  std::string d = copy("missingtensor");
  auto tc = readJson(d + "/tensor-cache.json");
  auto& recs = tc["records"][0]["records"];
  const std::string gone = "model.layers.1.self_attn.k_norm.weight";
  for (size_t i = 0; i < recs.size(); ++i)
    if (recs[i]["name"] == gone) recs.erase(i);
  writeJson(d + "/tensor-cache.json", tc);
  auto det = expectInvalid(d);
  EXPECT_EQ(det["problem"], "missing_tensor");
  EXPECT_EQ(det["tensor"], gone);
  EXPECT_EQ(det["file"], "tensor-cache.json");
}

TEST_F(FolderValidation, WrongShapeAndDtype) {
  std::string d = copy("shape");
  editRecord(d, kNorm, [](nlohmann::json& r) { r["shape"] = {32, 2}; });  // same nbytes
  auto det = expectInvalid(d);
  EXPECT_EQ(det["problem"], "wrong_shape");
  EXPECT_EQ(det["tensor"], kNorm);
  EXPECT_EQ(det["expected"], nlohmann::json({64}));
  EXPECT_EQ(det["actual"], nlohmann::json({32, 2}));

  d = copy("wrongdtype");
  editRecord(d, kNorm, [](nlohmann::json& r) { r["dtype"] = "bfloat16"; });  // same size
  det = expectInvalid(d);
  EXPECT_EQ(det["problem"], "wrong_dtype");
  EXPECT_EQ(det["expected"], "float16");
}

TEST_F(FolderValidation, BadJsonAndMissingFiles) {
  std::string d = copy("badjson");
  test::writeText(d + "/tensor-cache.json", "{\"records\": [");
  auto det = expectInvalid(d);
  EXPECT_EQ(det["file"], "tensor-cache.json");
  EXPECT_EQ(det["problem"], "bad_json");

  d = copy("badconfig");
  test::writeText(d + "/mlc-chat-config.json", "not json");
  det = expectInvalid(d);
  EXPECT_EQ(det["file"], "mlc-chat-config.json");
  EXPECT_EQ(det["problem"], "bad_json");

  d = copy("notok");
  std::filesystem::remove(d + "/tokenizer.json");
  det = expectInvalid(d);
  EXPECT_EQ(det["file"], "tokenizer.json");
  EXPECT_EQ(det["problem"], "missing");

  d = copy("nocache");
  std::filesystem::remove(d + "/tensor-cache.json");
  det = expectInvalid(d);
  EXPECT_EQ(det["file"], "tensor-cache.json");
  EXPECT_EQ(det["problem"], "missing");
}

TEST_F(FolderValidation, LegacyNdarrayCacheName) {
  std::string d = copy("legacy");
  std::filesystem::rename(d + "/tensor-cache.json", d + "/ndarray-cache.json");
  auto f = ModelFolder::open(d);
  ASSERT_TRUE(f.ok()) << f.error().toString();
  EXPECT_EQ(f->cache().file, "ndarray-cache.json");
}

TEST_F(FolderValidation, Md5MismatchFoundByVerifyChecksums) {
  std::string d = copy("md5");
  {
    std::fstream s(d + "/params_shard_0.bin", std::ios::in | std::ios::out | std::ios::binary);
    s.seekp(1000);
    char c = 0;
    s.read(&c, 1);
    s.seekp(1000);
    c ^= 0x10;
    s.write(&c, 1);
  }
  auto f = ModelFolder::open(d);  // sizes still agree: open() does not read shards
  ASSERT_TRUE(f.ok());
  auto st = f->verifyChecksums();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().detail["problem"], "md5_mismatch");
  EXPECT_EQ(st.error().detail["file"], "params_shard_0.bin");
}

// Untrusted input: random type/value mutations of a valid config and manifest never throw and never yield
// anything but success or INVALID_MODEL_FOLDER.
TEST_F(FolderValidation, MutatedJsonNeverThrows) {
  const nlohmann::json cfg = readJson(*dir_ / "good/mlc-chat-config.json");
  const nlohmann::json tc = readJson(*dir_ / "good/tensor-cache.json");
  std::mt19937 rng(99);
  const nlohmann::json junk[] = {nullptr,
                                 -3,
                                 1.5,
                                 "x",
                                 nlohmann::json::array({1, "a"}),
                                 nlohmann::json::object(),
                                 true,
                                 nlohmann::json::object({{"type", 5}})};
  auto mutate = [&](nlohmann::json doc) {
    // Collect pointers to every value, then replace one or two at random.
    std::vector<nlohmann::json::json_pointer> ptrs;
    std::function<void(const nlohmann::json&, const nlohmann::json::json_pointer&)> walk =
        [&](const nlohmann::json& v, const nlohmann::json::json_pointer& at) {
          ptrs.push_back(at);
          if (v.is_object())
            for (auto it = v.begin(); it != v.end(); ++it) walk(it.value(), at / it.key());
          else if (v.is_array())
            for (size_t i = 0; i < v.size() && i < 8; ++i) walk(v[i], at / i);
        };
    walk(doc, nlohmann::json::json_pointer());
    for (int k = 0; k < 2; ++k) {
      const auto& p = ptrs[rng() % ptrs.size()];
      if (doc.contains(p)) doc[p] = junk[rng() % std::size(junk)];  // the first edit may have removed it
    }
    return doc;
  };
  for (int i = 0; i < 300; ++i) {
    auto c = parseModelConfig(mutate(cfg), "mlc-chat-config.json");
    if (!c.ok()) {  // a model_type string the engine does not run is UNSUPPORTED, naming it
      const bool unsupportedArch = c.error().code == ErrorCode::kUnsupported && c.error().detail["field"] == "model_type";
      EXPECT_TRUE(c.error().code == ErrorCode::kInvalidModelFolder || unsupportedArch) << c.error().toString();
    }
    auto t = parseTensorCache(mutate(tc), "tensor-cache.json");
    if (!t.ok()) {
      EXPECT_EQ(t.error().code, ErrorCode::kInvalidModelFolder);
    }
  }
}

// Issue 18: each field of tensor-cache.json that is read is type-checked, and the error names it.
TEST_F(FolderValidation, ManifestFieldsOfTheWrongTypeNameTheField) {
  const nlohmann::json tc = readJson(*dir_ / "good/tensor-cache.json");
  struct Case {
    std::function<void(nlohmann::json&)> edit;
    std::string field;
  };
  const std::vector<Case> cases = {
      {[](auto& j) { j["records"][0]["md5sum"] = 5; }, "records[].md5sum"},
      {[](auto& j) { j["records"][0]["format"] = nullptr, j["records"][0]["format"] = 1; }, "records[].format"},
      {[](auto& j) { j["records"][0]["nbytes"] = -1; }, "records[].nbytes"},
      {[](auto& j) { j["records"][0]["dataPath"] = 0; }, "records[].dataPath"},
      {[](auto& j) { j["records"][0]["records"][0]["format"] = true; }, "records[].records[].format"},
      {[](auto& j) { j["records"][0]["records"][0]["byteOffset"] = "0"; }, "records[].records[].byteOffset"},
      {[](auto& j) { j["records"][0]["records"][0]["shape"] = {1ll << 40, 1ll << 40}; }, "records[].records[].shape"},
      {[](auto& j) { j["metadata"] = 3; }, "metadata"},
      {[](auto& j) { j = nlohmann::json::array(); }, ""},
  };
  for (const auto& c : cases) {
    nlohmann::json j = tc;
    c.edit(j);
    auto t = parseTensorCache(j, "tensor-cache.json");
    ASSERT_FALSE(t.ok()) << j.dump().substr(0, 200);
    EXPECT_EQ(t.error().code, ErrorCode::kInvalidModelFolder);
    EXPECT_EQ(t.error().detail["file"], "tensor-cache.json");
    EXPECT_EQ(t.error().detail.value("field", std::string("?")), c.field) << t.error().toString();
  }
}

// A Qwen3.5-2B-shaped q4f16_1 folder (about 1 GB) whose shards are sparse files: validation must succeed
// from the manifest and stat alone.
TEST(FolderValidationLarge, SparseRealShapeFolderValidatesWithoutReading) {
  test::TempDir dir;
  TinyModelSpec spec;
  ASSERT_TRUE(applyShapePreset(spec, "qwen3.5-2b").ok());
  std::string tok = test::writeSmallTokenizer(dir.path());
  ModelConfig c = tinyModelConfig(spec, 248000);
  test::writeJson(dir / "mlc-chat-config.json", mlcChatConfigJson(c));
  std::filesystem::copy_file(tok, dir / "tokenizer.json");
  // Pack every record into shards of at most 256 MiB.
  nlohmann::json shards = nlohmann::json::array();
  nlohmann::json cur = nlohmann::json::array();
  uint64_t off = 0;
  auto flush = [&] {
    std::string name = "params_shard_" + std::to_string(shards.size()) + ".bin";
    int fd = ::open((dir / name).c_str(), O_CREAT | O_WRONLY, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(ftruncate(fd, (off_t)off), 0);
    ::close(fd);
    shards.push_back({{"dataPath", name}, {"format", "raw-shard"}, {"nbytes", off}, {"records", cur}});
    cur = nlohmann::json::array();
    off = 0;
  };
  uint64_t total = 0;
  for (const ParamSpec& p : expectedParams(c)) {
    uint64_t n = 1;
    for (auto d : p.shape) n *= d;
    uint64_t nb = n * (p.dtype == DType::kF32 ? 2 : dtypeSize(p.dtype));
    if (off + nb > (256ull << 20) && off) flush();
    cur.push_back({{"name", p.name},
                   {"shape", p.shape},
                   {"dtype", dtypeName(p.dtype)},
                   {"format", "f32-to-bf16"},
                   {"nbytes", nb},
                   {"byteOffset", off}});
    off += nb;
    total += nb;
  }
  flush();
  test::writeJson(dir / "tensor-cache.json", {{"metadata", nlohmann::json::object()}, {"records", shards}});
  EXPECT_GT(total, 1000000000ull);
  auto f = ModelFolder::open(dir.path());
  ASSERT_TRUE(f.ok()) << f.error().toString();
  EXPECT_EQ(parameterCount(f->config()), 1881825088);
}

}  // namespace
}  // namespace ewgpu
