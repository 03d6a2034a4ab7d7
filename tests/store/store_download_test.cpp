// Downloads against a real HTTP server on loopback (fake_hub.py): full pull, resume after a dropped
// connection (Range), truncated bodies, 404, 500-then-success, stalls, md5 corruption, cancel + resume,
// concurrent pulls (threads and processes), a simulated full disk, and a prebuilt id through an HF endpoint.
#include <atomic>
#include <chrono>
#include <thread>

#include "store_test_util.h"

namespace ewgpu::test {
namespace {

class StoreDownload : public ::testing::Test {
 protected:
  void SetUp() override {
    root = tmp.path + "/hub";
    src = root + "/org/tiny-MLC";
    writeTinyMlcFolder(src, {40000, 120000, 64000, 8000}, (uint32_t)std::random_device{}());
    hub = std::make_unique<FakeHub>(root);
    url = hub->repoUrl("org/tiny-MLC");
  }
  std::unique_ptr<ModelStore> store(StoreOptions o) { return openStore(o); }
  StoreOptions opts() { return testStoreOptions(tmp.path + "/cache"); }
  int countRequests(const std::string& file, int status = 0) {
    int n = 0;
    for (const auto& e : hub->log())
      if (e["path"].get<std::string>().find(file) != std::string::npos && (status == 0 || e["status"] == status)) ++n;
    return n;
  }

  TempDir tmp;
  std::string root, src, url;
  std::unique_ptr<FakeHub> hub;
};

TEST_F(StoreDownload, FullPullMatchesTheServedFolder) {
  auto s = store(opts());
  int progress_calls = 0;
  int64_t last_done = 0, total = 0;
  PullOptions po;
  po.on_progress = [&](const DownloadProgress& p) {
    ++progress_calls;
    last_done = p.bytes_done;
    total = p.bytes_total;
  };
  auto rec = s->pull(url, "", po);
  ASSERT_TRUE(rec.ok()) << rec.error().toString();
  EXPECT_EQ(rec->id, "tiny-MLC");
  EXPECT_EQ(rec->source, SourceKind::kRemote);
  EXPECT_TRUE(sameFolder(src, rec->dir));
  EXPECT_EQ(*s->cacheState("tiny-MLC"), CacheState::kCached);
  EXPECT_TRUE(s->verify("tiny-MLC", true).ok());
  EXPECT_GT(progress_calls, 0);
  EXPECT_EQ(last_done, total);
  EXPECT_GE(total, 40000 + 120000 + 64000 + 8000);
  auto dir = s->resolve("tiny-MLC");
  ASSERT_TRUE(dir.ok());
  EXPECT_EQ(*dir, rec->dir);
  EXPECT_EQ(*resolveModelDir(url, *s), rec->dir);
  // A second pull finds everything cached and asks the server for nothing new.
  hub->clearLog();
  ASSERT_TRUE(s->pull("tiny-MLC").ok());
  EXPECT_TRUE(hub->log().empty());
}

TEST_F(StoreDownload, DroppedConnectionResumesWithRange) {
  hub->setRules({{{"match", "params_shard_1.bin"}, {"kind", "drop"}, {"after_bytes", 50000}, {"times", 1}}});
  auto s = store(opts());
  auto rec = s->pull(url);
  ASSERT_TRUE(rec.ok()) << rec.error().toString();
  EXPECT_TRUE(sameFolder(src, rec->dir));
  bool saw_range = false;
  for (const auto& e : hub->log())
    if (e["path"].get<std::string>().find("params_shard_1.bin") != std::string::npos && e["range"].is_string())
      saw_range |= e["range"] == "bytes=50000-" && e["status"] == 206;
  EXPECT_TRUE(saw_range) << "the retry did not continue from the partial size";
}

TEST_F(StoreDownload, TruncatedBodyIsNotCountedCachedAndIsCompleted) {
  hub->setRules({{{"match", "params_shard_2.bin"}, {"kind", "truncate"}, {"cut", 1000}, {"times", 1}}});
  auto s = store(opts());
  auto rec = s->pull(url);
  ASSERT_TRUE(rec.ok()) << rec.error().toString();
  EXPECT_TRUE(sameFolder(src, rec->dir));
  EXPECT_EQ(countRequests("params_shard_2.bin"), 2);
  bool resumed = false;
  for (const auto& e : hub->log()) resumed |= e["range"] == "bytes=63000-";
  EXPECT_TRUE(resumed);
}

TEST_F(StoreDownload, NotFoundIsANetworkErrorAndNothingIsCached) {
  hub->setRules({{{"match", "params_shard_3.bin"}, {"kind", "status"}, {"status", 404}, {"times", -1}}});
  auto s = store(opts());
  auto rec = s->pull(url);
  ASSERT_FALSE(rec.ok());
  EXPECT_EQ(rec.error().code, ErrorCode::kNetwork);
  EXPECT_EQ(rec.error().detail["http_status"], 404);
  EXPECT_NE(rec.error().detail["url"].get<std::string>().find("params_shard_3.bin"), std::string::npos);
  EXPECT_EQ(countRequests("params_shard_3.bin"), 1) << "a 404 is not retried";
  auto r = s->record("tiny-MLC");
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(fs::exists(r->dir + "/params_shard_3.bin"));
  EXPECT_FALSE(fs::exists(r->dir + "/params_shard_3.bin.part"));
  EXPECT_NE(*s->cacheState("tiny-MLC"), CacheState::kCached);
  EXPECT_EQ(s->verify("tiny-MLC").error().code, ErrorCode::kCacheIncomplete);
  EXPECT_EQ(s->resolve("tiny-MLC").error().code, ErrorCode::kCacheIncomplete);
}

TEST_F(StoreDownload, ServerErrorsAreRetriedThenSucceed) {
  hub->setRules({{{"match", "params_shard_0.bin"}, {"kind", "status"}, {"status", 500}, {"times", 2}}});
  auto s = store(opts());
  auto rec = s->pull(url);
  ASSERT_TRUE(rec.ok()) << rec.error().toString();
  EXPECT_EQ(countRequests("params_shard_0.bin", 500), 2);
  EXPECT_EQ(countRequests("params_shard_0.bin", 200), 1);
  EXPECT_TRUE(sameFolder(src, rec->dir));
}

TEST_F(StoreDownload, PersistentServerErrorGivesUpAfterMaxAttempts) {
  hub->setRules({{{"match", "tokenizer.json"}, {"kind", "status"}, {"status", 503}, {"times", -1}}});
  auto s = store(opts());
  auto rec = s->pull(url);
  ASSERT_FALSE(rec.ok());
  EXPECT_EQ(rec.error().code, ErrorCode::kNetwork);
  EXPECT_EQ(rec.error().detail["http_status"], 503);
  EXPECT_EQ(rec.error().detail["attempt"], opts().download.max_attempts);
  EXPECT_EQ(countRequests("tokenizer.json"), opts().download.max_attempts);
}

TEST_F(StoreDownload, StalledResponseTimesOutAndRetries) {
  hub->setRules(
      {{{"match", "params_shard_1.bin"}, {"kind", "stall"}, {"after_bytes", 1000}, {"delay_s", 4}, {"times", 1}}});
  auto s = store(opts());
  auto t0 = std::chrono::steady_clock::now();
  auto rec = s->pull(url);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(rec.ok()) << rec.error().toString();
  EXPECT_TRUE(sameFolder(src, rec->dir));
  EXPECT_LT(secs, 3.5) << "the stall timeout (1 s) should cut the 4 s stall short";
  bool resumed = false;
  for (const auto& e : hub->log()) resumed |= e["range"] == "bytes=1000-";
  EXPECT_TRUE(resumed);
}

TEST_F(StoreDownload, AServerThatNeverAnswersFailsInBoundedTime) {
  hub->setRules({{{"match", "params_shard_0.bin"}, {"kind", "stall"}, {"after_bytes", 0}, {"delay_s", 30}, {"times", -1}}});
  auto o = opts();
  o.download.max_attempts = 2;
  auto s = store(o);
  auto t0 = std::chrono::steady_clock::now();
  auto rec = s->pull(url);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_FALSE(rec.ok());
  EXPECT_EQ(rec.error().code, ErrorCode::kNetwork);
  EXPECT_EQ(rec.error().detail["reason"], "stalled");
  EXPECT_EQ(rec.error().detail["attempt"], 2);
  EXPECT_LT(secs, 8.0) << "2 attempts x (1 s stall timeout + up to 1 s of curl's progress interval) + backoff";
}

TEST_F(StoreDownload, CorruptShardFailsMd5AndIsNeverCached) {
  hub->setRules({{{"match", "params_shard_2.bin"}, {"kind", "corrupt"}, {"times", -1}}});
  auto s = store(opts());
  auto rec = s->pull(url);
  ASSERT_FALSE(rec.ok());
  EXPECT_EQ(rec.error().code, ErrorCode::kNetwork);
  EXPECT_EQ(rec.error().detail["reason"], "md5_mismatch");
  EXPECT_EQ(rec.error().detail["md5_mismatch"], true);
  auto r = s->record("tiny-MLC");
  EXPECT_FALSE(fs::exists(r->dir + "/params_shard_2.bin"));
  EXPECT_NE(*s->cacheState("tiny-MLC"), CacheState::kCached);
  // Once the server is fixed, the next pull completes.
  hub->setRules(nlohmann::json::array());
  ASSERT_TRUE(s->pull("tiny-MLC").ok());
  EXPECT_TRUE(s->verify("tiny-MLC", true).ok());
}

TEST_F(StoreDownload, CorruptOnceIsRepairedByRetry) {
  hub->setRules({{{"match", "params_shard_1.bin"}, {"kind", "corrupt"}, {"times", 1}}});
  auto s = store(opts());
  auto rec = s->pull(url);
  ASSERT_TRUE(rec.ok()) << rec.error().toString();
  EXPECT_TRUE(sameFolder(src, rec->dir));
  EXPECT_EQ(countRequests("params_shard_1.bin"), 2);
}

TEST_F(StoreDownload, CancelKeepsPartialFilesForAFreeResume) {
  hub->setRules(
      {{{"match", "params_shard_1.bin"}, {"kind", "stall"}, {"after_bytes", 30000}, {"delay_s", 3}, {"times", 1}}});
  auto o = opts();
  o.download.stall_timeout_s = 5;
  auto s = store(o);
  std::atomic<bool> cancel{false};
  PullOptions po;
  po.cancel = &cancel;
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    cancel = true;
  });
  auto rec = s->pull(url, "", po);
  stopper.join();
  ASSERT_FALSE(rec.ok());
  EXPECT_EQ(rec.error().code, ErrorCode::kCancelled);
  auto r = s->record("tiny-MLC");
  EXPECT_EQ(fileSize(r->dir + "/params_shard_1.bin.part"), 30000);
  EXPECT_EQ(*s->cacheState("tiny-MLC"), CacheState::kPartial);
  hub->clearLog();
  ASSERT_TRUE(s->pull("tiny-MLC").ok());
  EXPECT_TRUE(sameFolder(src, r->dir));
  bool resumed = false;
  for (const auto& e : hub->log())
    resumed |= e["path"].get<std::string>().find("params_shard_1.bin") != std::string::npos && e["range"].is_string();
  EXPECT_TRUE(resumed) << nlohmann::json(hub->log()).dump();
}

TEST_F(StoreDownload, ConcurrentPullsInThreadsAgree) {
  hub->setRules(
      {{{"match", "params_shard_1.bin"}, {"kind", "stall"}, {"after_bytes", 20000}, {"delay_s", 0.3}, {"times", 1}}});
  auto s1 = store(opts());
  auto s2 = store(opts());  // a second store on the same cache, as another component would open it
  ASSERT_TRUE(s1->registerRemote(url).ok());
  Status r1, r2, r3;
  std::thread a([&] { r1 = s1->prefetch("tiny-MLC"); });
  std::thread b([&] { r2 = s2->pull(url).ok() ? Status() : Status(makeError(ErrorCode::kInternal, "pull failed")); });
  std::thread c([&] { r3 = s2->prefetch("tiny-MLC"); });
  a.join();
  b.join();
  c.join();
  EXPECT_TRUE(r1.ok() && r2.ok() && r3.ok());
  EXPECT_TRUE(sameFolder(src, s1->record("tiny-MLC")->dir));
  EXPECT_TRUE(s1->verify("tiny-MLC", true).ok());
  EXPECT_EQ(countRequests("params_shard_1.bin"), 1) << "one pull fetches under the lock, the others reuse";
}

TEST_F(StoreDownload, ConcurrentPullsInProcessesAgree) {
  const int kProcs = 3;
  std::vector<pid_t> pids;
  for (int i = 0; i < kProcs; ++i) {
    pid_t pid = ::fork();
    if (pid == 0) {
      auto s = ModelStore::open(opts());
      Status st = s.ok() ? Status() : Status(s.error());
      if (st.ok())
        if (auto rec = (*s)->pull(url); !rec.ok()) st = rec.error();
      if (!st.ok())  // the parent sees only the exit status: say why here
        std::fprintf(stderr, "child %d: %s\n", (int)::getpid(), st.error().toJson().dump().c_str());
      ::_exit(st.ok() ? 0 : 1);
    }
    pids.push_back(pid);
  }
  for (pid_t p : pids) {
    int status = 0;
    ::waitpid(p, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  auto s = store(opts());
  EXPECT_TRUE(s->verify("tiny-MLC", true).ok());
  EXPECT_TRUE(sameFolder(src, s->record("tiny-MLC")->dir));
  EXPECT_EQ(countRequests("params_shard_1.bin", 200), 1) << "the file lock lets one process fetch, the rest reuse";
}

TEST_F(StoreDownload, DiskFullLeavesTheCacheConsistentAndALaterPullCompletes) {
  auto o = opts();
  o.download.write_budget = std::make_shared<std::atomic<int64_t>>(100000);
  auto s = store(o);
  auto rec = s->pull(url);
  ASSERT_FALSE(rec.ok());
  EXPECT_EQ(rec.error().code, ErrorCode::kIo);
  EXPECT_EQ(rec.error().detail["disk_full"], true);
  auto r = s->record("tiny-MLC");
  ASSERT_TRUE(r.ok());
  for (const auto& f : r->files) {  // every file that has its final name is complete and correct
    std::string path = r->dir + "/" + f.name;
    if (fs::exists(path)) {
      EXPECT_EQ(readFile(path), readFile(src + "/" + f.name)) << f.name;
    }
  }
  EXPECT_NE(*s->cacheState("tiny-MLC"), CacheState::kCached);
  s.reset();
  auto s2 = store(opts());
  ASSERT_TRUE(s2->pull("tiny-MLC").ok());
  EXPECT_TRUE(s2->verify("tiny-MLC", true).ok());
  EXPECT_TRUE(sameFolder(src, r->dir));
}

TEST_F(StoreDownload, PrebuiltIdComesThroughTheHfEndpoint) {
  const CatalogEntry& e = prebuiltCatalog().front();
  std::string repo = e.model_url.substr(std::string("https://huggingface.co/").size());
  writeTinyMlcFolder(root + "/" + repo, {4096, 8192}, 7);
  auto o = opts();
  o.hf_endpoint = hub->origin();
  auto s = store(o);
  ASSERT_TRUE(s->prefetch(e.model_id).ok());
  auto rec = s->record(e.model_id);
  EXPECT_EQ(rec->source, SourceKind::kPrebuilt);
  EXPECT_EQ(rec->url, e.model_url);  // the record keeps the catalogue URL; only the transfer is redirected
  EXPECT_TRUE(sameFolder(root + "/" + repo, rec->dir));
}

}  // namespace
}  // namespace ewgpu::test
