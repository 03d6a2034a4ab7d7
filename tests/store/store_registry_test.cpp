// The registry and the local source: a local model has no URL anywhere, a bad folder is rejected before
// anything is written, evict/remove/cacheState transitions, verify on an evicted local model, resolve, and a
// registry that survives a process killed in the middle of writing.
#include <sqlite3.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "store_test_util.h"

namespace ewgpu::test {
namespace {

// Every string anywhere in `j` (keys and values).
void collectStrings(const nlohmann::json& j, std::vector<std::string>& out) {
  if (j.is_string()) out.push_back(j.get<std::string>());
  if (j.is_object())
    for (auto it = j.begin(); it != j.end(); ++it) {
      out.push_back(it.key());
      collectStrings(it.value(), out);
    }
  if (j.is_array())
    for (const auto& x : j) collectStrings(x, out);
}

void expectNoUrl(const ModelRecord& r) {
  EXPECT_TRUE(r.url.empty());
  std::vector<std::string> strings;
  collectStrings(r.toJson(), strings);
  for (const auto& s : strings) {
    EXPECT_EQ(s.find("://"), std::string::npos) << r.id << " carries " << s;
    EXPECT_NE(s, "url") << r.id << " has a url field";
  }
}

class StoreLocal : public ::testing::Test {
 protected:
  void SetUp() override {
    folder = tmp.path + "/My-Model";
    writeValidTinyModel(folder, std::random_device{}());
    store = openStore(testStoreOptions(tmp.path + "/cache"));
  }
  TempDir tmp;
  std::string folder;
  std::unique_ptr<ModelStore> store;
};

TEST_F(StoreLocal, LocalRecordsHaveNoUrlAnywhere) {
  ASSERT_TRUE(store->addLocal(folder).ok());
  ASSERT_TRUE(store->addLocal(folder, "second").ok());
  ASSERT_TRUE(store->registerRemote("http://127.0.0.1:1/o/remote-MLC").ok());  // a non-local row beside them
  auto all = store->list();
  ASSERT_TRUE(all.ok());
  int local = 0;
  for (const auto& l : *all) {
    if (l.record.source != SourceKind::kLocal) continue;
    ++local;
    expectNoUrl(l.record);
    EXPECT_EQ(l.record.local_path, fs::canonical(folder).string());
    auto again = store->record(l.record.id);
    expectNoUrl(*again);
  }
  EXPECT_EQ(local, 2);
  // In the database itself: the url column of every local row is NULL (and a CHECK keeps it so).
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((tmp.path + "/cache/registry.sqlite").c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, "SELECT count(*) FROM models WHERE source='local' AND url IS NOT NULL", -1, &st, nullptr);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(st, 0), 0);
  sqlite3_finalize(st);
  EXPECT_NE(sqlite3_exec(db, "UPDATE models SET url='http://x/' WHERE source='local'", nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
}

TEST_F(StoreLocal, AddCopiesTheFolderAndResolves) {
  auto rec = store->addLocal(folder);
  ASSERT_TRUE(rec.ok()) << rec.error().toString();
  EXPECT_EQ(rec->id, "My-Model");
  EXPECT_EQ(rec->files.size(), folderFileCount(folder));  // config, manifest, shards, tokenizer
  EXPECT_TRUE(sameFolder(folder, rec->dir));
  EXPECT_EQ(*store->cacheState("My-Model"), CacheState::kCached);
  EXPECT_TRUE(store->verify("My-Model", true).ok());
  EXPECT_EQ(*resolveModelDir("My-Model", *store), rec->dir);
  EXPECT_EQ(*resolveModelDir(folder, *store), fs::canonical(folder).string());  // a folder is used as is
  EXPECT_EQ(resolveModelDir("nope", *store).error().code, ErrorCode::kUnknownModel);
}

TEST_F(StoreLocal, InvalidFolderIsRejectedBeforeAnythingIsWritten) {
  fs::remove(folder + "/params_shard_0.bin");
  auto rec = store->addLocal(folder);
  ASSERT_FALSE(rec.ok());
  EXPECT_EQ(rec.error().code, ErrorCode::kInvalidModelFolder);
  EXPECT_TRUE(fs::is_empty(tmp.path + "/cache/models"));
  EXPECT_TRUE(store->list()->empty());
  // A shard whose size differs from the manifest is just as invalid.
  fs::remove_all(folder);
  writeValidTinyModel(folder, 1);
  writeFile(folder + "/params_shard_0.bin", "short");
  EXPECT_EQ(store->addLocal(folder).error().code, ErrorCode::kInvalidModelFolder);
  EXPECT_TRUE(fs::is_empty(tmp.path + "/cache/models"));
}

TEST_F(StoreLocal, EvictRemoveAndCacheStateTransitions) {
  ASSERT_TRUE(store->addLocal(folder, "m").ok());
  auto dir = store->record("m")->dir;
  EXPECT_EQ(*store->cacheState("m"), CacheState::kCached);
  fs::remove(dir + "/params_shard_0.bin");  // storage lost one file
  EXPECT_EQ(*store->cacheState("m"), CacheState::kPartial);
  ASSERT_TRUE(store->evict("m").ok());
  EXPECT_EQ(*store->cacheState("m"), CacheState::kAbsent);
  EXPECT_FALSE(fs::exists(dir));
  EXPECT_TRUE(fs::exists(folder + "/params_shard_0.bin")) << "evict never touches the user's folder";
  EXPECT_EQ(store->record("m")->state, "evicted");  // the record stays
  ASSERT_TRUE(store->addLocal(folder, "m").ok());   // re-registering brings it back
  EXPECT_EQ(*store->cacheState("m"), CacheState::kCached);
  ASSERT_TRUE(store->remove("m").ok());
  EXPECT_EQ(store->cacheState("m").error().code, ErrorCode::kUnknownModel);
  EXPECT_EQ(store->remove("m").error().code, ErrorCode::kUnknownModel);
  EXPECT_FALSE(fs::exists(dir));
}

TEST_F(StoreLocal, VerifyOnAnEvictedLocalModelSaysReRegister) {
  ASSERT_TRUE(store->addLocal(folder, "m").ok());
  ASSERT_TRUE(store->evict("m").ok());
  auto st = store->verify("m");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kCacheIncomplete);
  EXPECT_NE(st.error().message.find("re-register the folder"), std::string::npos) << st.error().message;
  // prefetch/pull of a local model never turns into a download: same error, not a network one.
  auto pf = store->prefetch("m");
  ASSERT_FALSE(pf.ok());
  EXPECT_EQ(pf.error().code, ErrorCode::kCacheIncomplete);
  EXPECT_EQ(store->resolve("m").error().code, ErrorCode::kCacheIncomplete);
  Downloader dl({}, nullptr, nullptr);
  auto refused = dl.fetch({"", tmp.path + "/x", 1, ""});
  EXPECT_FALSE(refused.ok());
  EXPECT_FALSE(fs::exists(tmp.path + "/x"));
}

TEST(StoreRegistry, SurvivesAProcessKilledMidWrite) {
  TempDir t;
  std::string db = t.path + "/registry.sqlite";
  int pipefd[2];
  ASSERT_EQ(::pipe(pipefd), 0);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(pipefd[0]);
    auto reg = Registry::open(db);
    if (!reg) ::_exit(2);
    for (int i = 0;; ++i) {  // write until killed; report each committed id
      ModelRecord r;
      r.id = "m" + std::to_string(i);
      r.url = "http://127.0.0.1:1/" + r.id;
      r.dir = "/d/" + r.id;
      for (int f = 0; f < 20; ++f) r.files.push_back({"params_shard_" + std::to_string(f) + ".bin", 1000 + f, "ab"});
      if (!(*reg)->put(r)) ::_exit(3);
      if (::write(pipefd[1], &i, sizeof(i)) != sizeof(i)) ::_exit(4);
    }
  }
  ::close(pipefd[1]);
  int committed = -1, v;
  auto t0 = std::chrono::steady_clock::now();
  while (committed < 30 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20) &&
         ::read(pipefd[0], &v, sizeof(v)) == sizeof(v))
    committed = v;
  ::kill(pid, SIGKILL);
  while (::read(pipefd[0], &v, sizeof(v)) == sizeof(v)) committed = v;  // reports that raced the kill
  ::close(pipefd[0]);
  ::waitpid(pid, nullptr, 0);
  ASSERT_GE(committed, 30);

  auto reg = Registry::open(db);
  ASSERT_TRUE(reg.ok()) << reg.error().toString();
  EXPECT_EQ(*(*reg)->integrityCheck(), "ok");
  auto all = (*reg)->all();
  ASSERT_TRUE(all.ok());
  EXPECT_GE((int)all->size(), committed + 1);
  EXPECT_LE((int)all->size(), committed + 2);  // at most the one in flight committed without its report
  for (int i = 0; i <= committed; ++i) {
    auto r = (*reg)->get("m" + std::to_string(i));
    ASSERT_TRUE(r.ok() && r->has_value()) << i;
    EXPECT_EQ((*r)->files.size(), 20u) << "a model row never lands without its files";
  }
}


// Every process opening a new cache at the same moment gets a working store. The first open of a database
// switches it to WAL, and SQLite refuses a second process doing that at once with SQLITE_BUSY, bypassing the busy
// timeout (CI saw one of three concurrent pulls fail so before ModelStore::open took turns under a lock).
TEST(StoreRegistry, ProcessesOpeningANewCacheTogetherAllSucceed) {
  for (int round = 0; round < 5; ++round) {
    TempDir t;
    const int kProcs = 6;
    int go[2];
    ASSERT_EQ(::pipe(go), 0);
    std::vector<pid_t> pids;
    for (int i = 0; i < kProcs; ++i) {
      pid_t pid = ::fork();
      if (pid == 0) {
        ::close(go[1]);
        char c;
        if (::read(go[0], &c, 1) != 0) ::_exit(5);  // wait for the parent to close the pipe: all start together
        auto s = ModelStore::open(testStoreOptions(t.path + "/cache"));
        if (!s) {
          std::fprintf(stderr, "open: %s\n", s.error().toString().c_str());
          ::_exit(1);
        }
        auto all = (*s)->list();
        ::_exit(all.ok() ? 0 : 2);
      }
      pids.push_back(pid);
    }
    ::close(go[0]);
    ::close(go[1]);
    for (pid_t p : pids) {
      int status = 0;
      ::waitpid(p, &status, 0);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "round " << round << " status " << status;
    }
  }
}

}  // namespace
}  // namespace ewgpu::test

namespace ewgpu::test {
namespace {

// Lock files do not outlive their use (issue 18: no lock files behind), and removing them does not break mutual
// exclusion: a waiter that gets the flock of an unlinked file starts over on the path's fresh file.
TEST(FileLockTest, ReleasedLocksLeaveNoFileAndStillExclude) {
  const std::string dir = ::testing::TempDir() + "/ewgpu-lock-" + std::to_string(::getpid());
  ASSERT_TRUE(makeDirTree(dir).ok());
  const std::string path = dir + "/m.lock";
  std::atomic<int> inside{0}, most{0}, rounds{0};
  auto worker = [&] {
    for (int i = 0; i < 200; ++i) {
      auto lock = FileLock::acquire(path);
      ASSERT_TRUE(lock.ok()) << lock.error().toString();
      const int now = ++inside;
      int seen = most.load();
      while (now > seen && !most.compare_exchange_weak(seen, now)) {
      }
      std::this_thread::yield();
      --inside;
      ++rounds;
    }
  };
  std::thread a(worker), b(worker), c(worker);
  a.join(), b.join(), c.join();
  EXPECT_EQ(rounds.load(), 600);
  EXPECT_EQ(most.load(), 1) << "two holders at once";
  EXPECT_FALSE(std::filesystem::exists(path)) << "the lock file outlived its last holder";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ewgpu::test
