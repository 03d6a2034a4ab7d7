// The embedded catalogue, URL resolution, cache folder names, and device fit (canRun / recommendModels).
#include <set>

#include "model/model_config.h"
#include "store/cache_files.h"
#include "store/catalog.h"
#include "store/device_fit.h"
#include "store/model_url.h"
#include "store_test_util.h"

namespace ewgpu::test {
namespace {

TEST(StoreCatalog, EmbeddedCatalogueMatchesTheTsv) {
  std::string tsv = readFile(std::string(EWGPU_SOURCE_DIR) + "/src/store/webllm-prebuilt-models.tsv");
  size_t rows = 0;
  for (char c : tsv) rows += c == '\n';
  const auto& cat = prebuiltCatalog();
  EXPECT_EQ(cat.size(), rows - 1);  // header
  std::set<std::string> ids;
  for (const auto& e : cat) {
    EXPECT_TRUE(ids.insert(e.model_id).second) << "duplicate " << e.model_id;
    EXPECT_EQ(e.model_url.rfind("https://huggingface.co/", 0), 0u) << e.model_id;
    EXPECT_FALSE(e.arch.empty()) << e.model_id;
  }
  // Spot-check one row against the raw text.
  const CatalogEntry* e = findPrebuilt("Llama-3.2-1B-Instruct-q4f16_1-MLC");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->arch, "llama");
  EXPECT_EQ(e->quantization, "q4f16_1");
  EXPECT_NEAR(e->vram_required_mb, 879.04, 1e-9);
  EXPECT_EQ(e->low_resource_required, std::optional<bool>(true));
  EXPECT_EQ(e->overrides["context_window_size"], 4096);
  EXPECT_EQ(findPrebuilt("no-such-model"), nullptr);
}

TEST(StoreCatalog, ParserRejectsBadInput) {
  EXPECT_FALSE(parseCatalogTsv("id\turl\n").ok());
  std::string tsv = readFile(std::string(EWGPU_SOURCE_DIR) + "/src/store/webllm-prebuilt-models.tsv");
  std::string header = tsv.substr(0, tsv.find('\n') + 1);
  EXPECT_FALSE(parseCatalogTsv(header + "a\tb\n").ok());  // too few cells
  auto bad_json = parseCatalogTsv(header + "m\thttps://x/y\t1\t\t\tq4f16_1\tllama\tLLM\t{oops\t\t\t\n");
  ASSERT_FALSE(bad_json.ok());
  EXPECT_EQ(bad_json.error().code, ErrorCode::kBadRequest);
  auto ok = parseCatalogTsv(header + "m\thttps://x/y\t12.5\tfalse\tshader-f16\tq4f16_1\tllama\tLLM\t\t\t\t\n");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->at(0).required_features, std::vector<std::string>{"shader-f16"});
  EXPECT_EQ(ok->at(0).low_resource_required, std::optional<bool>(false));
}

TEST(StoreUrl, ResolvesAsWebLLMDoes) {
  auto base = [](const std::string& u, const std::string& ep = "") {
    auto r = resolveModelBaseUrl(u, ep);
    return r.ok() ? *r : "ERR:" + r.error().message;
  };
  EXPECT_EQ(base("https://huggingface.co/mlc-ai/X-MLC"), "https://huggingface.co/mlc-ai/X-MLC/resolve/main/");
  EXPECT_EQ(base("https://huggingface.co/mlc-ai/X-MLC/"), "https://huggingface.co/mlc-ai/X-MLC/resolve/main/");
  EXPECT_EQ(base("https://huggingface.co/mlc-ai/X-MLC/resolve/dev"),
            "https://huggingface.co/mlc-ai/X-MLC/resolve/dev/");
  EXPECT_EQ(base("https://huggingface.co/mlc-ai/X-MLC/resolve/main/"),
            "https://huggingface.co/mlc-ai/X-MLC/resolve/main/");
  EXPECT_EQ(base("https://hf.co/a/b"), "https://hf.co/a/b/resolve/main/");
  EXPECT_EQ(base("https://cdn.example.com/models/X"), "https://cdn.example.com/models/X/");  // plain folder
  EXPECT_EQ(base("http://127.0.0.1:9/r/resolve/main"), "http://127.0.0.1:9/r/resolve/main/");
  // With an HF endpoint, hub URLs move onto it and its own URLs are hub-style.
  EXPECT_EQ(base("https://huggingface.co/mlc-ai/X", "http://127.0.0.1:9/"),
            "http://127.0.0.1:9/mlc-ai/X/resolve/main/");
  EXPECT_EQ(base("http://127.0.0.1:9/o/r", "http://127.0.0.1:9"), "http://127.0.0.1:9/o/r/resolve/main/");
  EXPECT_EQ(base("http://127.0.0.1:8/o/r", "http://127.0.0.1:9"), "http://127.0.0.1:8/o/r/");
  EXPECT_EQ(base("/models/X").substr(0, 4), "ERR:");
  EXPECT_EQ(base("file:///etc").substr(0, 4), "ERR:");
  EXPECT_EQ(modelIdFromUrl("https://huggingface.co/mlc-ai/X-MLC"), "X-MLC");
  EXPECT_EQ(modelIdFromUrl("http://h:1/o/r/resolve/main/"), "r");
}

TEST(StoreCache, FolderNamesAreSafeAndDistinct) {
  std::set<std::string> names;
  for (const char* id : {"a/b", "a_b", "a:b", "../x", "..", "", "Qwen3-0.6B-q4f16_1-MLC"}) {
    std::string n = modelFolderName(id);
    EXPECT_TRUE(names.insert(n).second) << id << " collides";
    EXPECT_EQ(n.find('/'), std::string::npos);
    EXPECT_NE(n[0], '.');
  }
  EXPECT_EQ(modelFolderName("x"), modelFolderName("x"));
  EXPECT_LE(modelFolderName(std::string(500, 'a')).size(), 48u + 13u);
}

DeviceInfo device(uint64_t binding_mb, uint64_t vram_mb, bool f16) {
  DeviceInfo d;
  d.max_storage_buffer_binding_size = binding_mb << 20;
  d.max_buffer_size = binding_mb << 20;
  d.shader_f16 = f16;
  if (vram_mb) d.memory_heaps.push_back({vram_mb << 20, 1});
  d.memory_heaps.push_back({64ull << 30, 2});  // host-visible heap: never counted as device memory
  return d;
}

bool hasCode(const std::vector<FitIssue>& v, const std::string& code) {
  for (const auto& i : v)
    if (i.code == code) return true;
  return false;
}

TEST(StoreFit, BlockersAndWarningsStayDistinct) {
  ModelFacts f;
  f.arch = "qwen2";
  f.vram_required_mb = 3000;
  f.required_features = {"shader-f16"};
  auto r = checkFit(f, device(128, 8192, false));
  EXPECT_TRUE(r.ok);
  EXPECT_TRUE(hasCode(r.warnings, "shader_f16"));
  EXPECT_FALSE(hasCode(r.blockers, "shader_f16"));

  r = checkFit(f, device(128, 2048, true));
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(hasCode(r.blockers, "vram"));
  r = checkFit(f, device(128, 3200, true));
  EXPECT_TRUE(r.ok);
  EXPECT_TRUE(hasCode(r.warnings, "vram_tight"));

  f.largest_tensor_bytes = 300ull << 20;  // splittable: a warning
  f.largest_row_bytes = 1ull << 20;
  f.tensor_sizes_exact = true;
  r = checkFit(f, device(128, 8192, true));
  EXPECT_TRUE(r.ok);
  EXPECT_TRUE(hasCode(r.warnings, "tensor_split"));
  f.largest_row_bytes = 200ull << 20;  // one row over the limit: a blocker
  r = checkFit(f, device(128, 8192, true));
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(hasCode(r.blockers, "tensor_row_too_large"));

  f.largest_row_bytes = f.largest_tensor_bytes = 0;
  f.arch = "phi3_v";
  r = checkFit(f, device(128, 8192, true));
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(hasCode(r.blockers, "unsupported_arch"));

  f.arch = "llama";
  r = checkFit(f, DeviceInfo{});  // nothing known about the device
  EXPECT_TRUE(r.ok);
  EXPECT_TRUE(hasCode(r.warnings, "device_unknown"));
}

TEST(StoreFit, FolderFactsComeFromTheManifest) {
  TempDir t;
  writeTinyMlcFolder(t.path, {4096, 1 << 20}, 3, true, "qwen3");  // tensors [4, n/16]: rows of n/4 bytes
  ModelFacts f;
  addFactsFromFolder(t.path, f);
  EXPECT_EQ(f.arch, "qwen3");
  EXPECT_EQ(f.largest_tensor_bytes, 1u << 20);
  EXPECT_EQ(f.largest_row_bytes, (1u << 20) / 4);
  EXPECT_TRUE(f.tensor_sizes_exact);
}

TEST(StoreFit, CanRunUsesTheStoredModel) {
  TempDir t;
  auto s = openStore(testStoreOptions(t.path + "/cache"));
  std::string folder = t.path + "/m";
  writeValidTinyModel(folder, 3, Arch::kQwen3);
  ASSERT_TRUE(s->addLocal(folder, "m").ok());
  // The largest row, computed here from the manifest independently of the store.
  auto manifest = nlohmann::json::parse(readFile(folder + "/tensor-cache.json"));
  uint64_t row = 0;
  for (const auto& shard : manifest["records"])
    for (const auto& r : shard["records"])
      row = std::max<uint64_t>(row, r["nbytes"].get<uint64_t>() / std::max<uint64_t>(1, r["shape"][0].get<uint64_t>()));
  ASSERT_GT(row, 0u);
  auto r = canRun(*s, "m", device(128, 8192, true));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->ok);
  auto small = device(1, 8192, true);
  small.max_storage_buffer_binding_size = row - 1;
  r = canRun(*s, "m", small);
  EXPECT_FALSE(r->ok);
  EXPECT_TRUE(hasCode(r->blockers, "tensor_row_too_large"));
  small.max_storage_buffer_binding_size = row;  // every row fits: at most a split warning
  r = canRun(*s, "m", small);
  EXPECT_TRUE(r->ok);
  EXPECT_EQ(canRun(*s, "nope", small).error().code, ErrorCode::kUnknownModel);
  auto cat = canRun(*s, "Llama-3.2-1B-Instruct-q4f16_1-MLC", device(128, 512, true));
  ASSERT_TRUE(cat.ok());
  EXPECT_TRUE(hasCode(cat->blockers, "vram"));  // 879 MB needed, 512 MB present
}

TEST(StoreFit, ParamsAndBits) {
  EXPECT_DOUBLE_EQ(paramsFromId("Llama-3.2-1B-Instruct-q4f16_1-MLC"), 1);
  EXPECT_DOUBLE_EQ(paramsFromId("Qwen2.5-0.5B-Instruct-q4f16_1-MLC"), 0.5);
  EXPECT_DOUBLE_EQ(paramsFromId("SmolLM2-135M-Instruct-q0f16-MLC"), 0.135);
  EXPECT_DOUBLE_EQ(paramsFromId("Llama-3.1-70B-Instruct-q3f16_1-MLC"), 70);
  EXPECT_DOUBLE_EQ(paramsFromId("Phi-3-mini-4k-instruct-q4f16_1-MLC"), 0);
  EXPECT_LT(bitsPerWeight("q4f16_1"), bitsPerWeight("q4f32_1"));
  EXPECT_LT(bitsPerWeight("q4f32_1"), bitsPerWeight("q0f16"));
}

TEST(StoreFit, RecommendationsFitAndFollowTheRankingRule) {
  auto dev = device(1024, 6144, true);
  for (std::string prefer : {"quality", "speed"}) {
    RecommendOptions o;
    o.max_vram_mb = 4000;
    o.prefer = prefer;
    o.limit = 1000;
    auto recs = recommendModels(dev, o);
    ASSERT_TRUE(recs.ok());
    ASSERT_GT(recs->size(), 5u);
    for (size_t i = 0; i < recs->size(); ++i) {
      const auto& r = (*recs)[i];
      EXPECT_TRUE(isSupportedArch(r.entry->arch)) << r.entry->model_id;
      EXPECT_LE(r.entry->vram_required_mb, 4000) << r.entry->model_id;
      EXPECT_TRUE(r.fit.ok);
      if (i == 0) continue;
      const auto& p = (*recs)[i - 1];
      if (prefer == "quality")
        EXPECT_GE(p.params_b, r.params_b);
      else
        EXPECT_LE(p.weight_mb, r.weight_mb);
    }
  }
  // Without a budget the device's memory is the budget.
  auto all = recommendModels(device(1024, 2000, true), {std::nullopt, "quality", 1000});
  for (const auto& r : *all) EXPECT_LE(r.entry->vram_required_mb, 2000);
  EXPECT_EQ(recommendModels(dev, {std::nullopt, "cheap", 3}).error().code, ErrorCode::kBadRequest);
}

// Every catalogue entry's architecture is runnable (model/model_config.h archRunnable) or named, with a reason,
// in notYetRunnableArchs, which is documented in docs/store.md. The list holds only architectures the
// catalogue has and the engine does not run, so adding an Arch makes this test ask for its removal.
TEST(StoreCatalog, EveryArchitectureIsRunnableOrListedAsNotYet) {
  std::set<std::string> gaps, catalogueArchs;
  for (const ArchGap& g : notYetRunnableArchs()) {
    EXPECT_TRUE(gaps.insert(std::string(g.arch)).second) << "listed twice: " << g.arch;
    EXPECT_FALSE(archRunnable(g.arch)) << g.arch << " is runnable now: remove it from notYetRunnableArchs";
    EXPECT_FALSE(g.reason.empty()) << g.arch;
  }
  size_t runnable = 0;
  for (const auto& e : prebuiltCatalog()) {
    catalogueArchs.insert(e.arch);
    const bool listed = gaps.count(e.arch) > 0;
    EXPECT_NE(archRunnable(e.arch), listed) << e.model_id << " (" << e.arch << ")";
    const std::string why = notRunnableReason(e);
    if (archRunnable(e.arch) && e.webllm_model_type == "LLM") {
      EXPECT_EQ(why, "") << e.model_id;
      ++runnable;
    } else {
      EXPECT_NE(why.find(e.arch), std::string::npos) << e.model_id << ": " << why;
    }
  }
  for (const auto& g : gaps) EXPECT_TRUE(catalogueArchs.count(g)) << g << " is listed but not in the catalogue";
  EXPECT_GE(runnable, 100u);  // llama, mistral, qwen2, qwen3, qwen3_5 rows today
  // docs/store.md names every listed architecture.
  const std::string doc = readFile(std::string(EWGPU_SOURCE_DIR) + "/docs/store.md");
  const size_t section = doc.find("## Architectures");
  ASSERT_NE(section, std::string::npos);
  for (const auto& g : gaps) EXPECT_NE(doc.find("`" + g + "`", section), std::string::npos) << g;
}

TEST(StoreFit, VisionAndNotYetImplementedEntriesAreBlockedWithTheirReason) {
  const CatalogEntry* v = findPrebuilt("Phi-3.5-vision-instruct-q4f16_1-MLC");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(notRunnableReason(*v),
            "architecture phi3_v: a vision-language model: image input is not implemented (this engine runs " +
                [] {
                  std::string s;
                  for (const auto& n : runnableArchNames()) s += (s.empty() ? "" : ", ") + n;
                  return s;
                }() +
                ")");
  auto r = checkFit(factsFromCatalog(*v), device(128, 81920, true));
  EXPECT_FALSE(r.ok);
  ASSERT_TRUE(hasCode(r.blockers, "unsupported_arch"));
  EXPECT_NE(r.blockers[0].message.find("phi3_v"), std::string::npos);
  const CatalogEntry* bert = findPrebuilt("snowflake-arctic-embed-s-q0f32-MLC-b4");
  ASSERT_NE(bert, nullptr);
  EXPECT_NE(notRunnableReason(*bert).find("embedding"), std::string::npos);
  const CatalogEntry* llama = findPrebuilt("Llama-3.2-1B-Instruct-q4f16_1-MLC");
  ASSERT_NE(llama, nullptr);
  EXPECT_EQ(notRunnableReason(*llama), "");
  // recommend considers only runnable entries, however large the budget.
  RecommendOptions o;
  o.max_vram_mb = 1e9;
  o.limit = 100000;
  auto recs = recommendModels(device(1024, 1 << 30, true), o);
  ASSERT_TRUE(recs.ok());
  size_t runnable = 0;
  for (const auto& e : prebuiltCatalog()) runnable += notRunnableReason(e).empty();
  EXPECT_EQ(recs->size(), runnable);
  for (const auto& rec : *recs) EXPECT_EQ(notRunnableReason(*rec.entry), "") << rec.entry->model_id;
}

// A folder of an architecture the engine does not run is UNSUPPORTED, naming its model_type.
TEST(StoreFit, LoadingAPhi3VFolderIsUnsupportedNamingIt) {
  auto r = parseModelConfig({{"model_type", "phi3_v"}, {"quantization", "q4f16_1"}, {"model_config", {}}},
                            "mlc-chat-config.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(r.error().message.find("'phi3_v'"), std::string::npos) << r.error().message;
  EXPECT_EQ(r.error().detail["model_type"], "phi3_v");
  EXPECT_EQ(r.error().detail["field"], "model_type");
}

}  // namespace
}  // namespace ewgpu::test
