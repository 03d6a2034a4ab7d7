// SQLite-backed model registry (see registry.h for the schema).
#include "store/registry.h"

#include <sqlite3.h>

#include <ctime>

namespace ewgpu {
namespace {

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS models(
  id TEXT PRIMARY KEY NOT NULL,
  source TEXT NOT NULL CHECK (source IN ('prebuilt','remote','local')),
  url TEXT,
  local_path TEXT,
  dir TEXT NOT NULL,
  state TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  CHECK ((source = 'local' AND url IS NULL AND local_path IS NOT NULL) OR
         (source <> 'local' AND url IS NOT NULL AND local_path IS NULL)));
CREATE TABLE IF NOT EXISTS files(
  model_id TEXT NOT NULL REFERENCES models(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  size INTEGER NOT NULL,
  md5 TEXT,
  PRIMARY KEY (model_id, name));
PRAGMA user_version = 1;
)sql";

// RAII prepared statement.
struct Stmt {
  sqlite3_stmt* s = nullptr;
  Stmt(sqlite3* db, const char* sql) { sqlite3_prepare_v2(db, sql, -1, &s, nullptr); }
  ~Stmt() { sqlite3_finalize(s); }
  void text(int i, const std::string& v) { sqlite3_bind_text(s, i, v.c_str(), (int)v.size(), SQLITE_TRANSIENT); }
  void textOrNull(int i, const std::string& v) { v.empty() ? (void)sqlite3_bind_null(s, i) : text(i, v); }
  std::string col(int i) {
    auto p = sqlite3_column_text(s, i);
    return p ? reinterpret_cast<const char*>(p) : "";
  }
};

SourceKind parseSource(const std::string& s) {
  return s == "prebuilt" ? SourceKind::kPrebuilt : s == "local" ? SourceKind::kLocal : SourceKind::kRemote;
}

}  // namespace

std::string_view sourceKindName(SourceKind k) {
  switch (k) {
    case SourceKind::kPrebuilt:
      return "prebuilt";
    case SourceKind::kRemote:
      return "remote";
    case SourceKind::kLocal:
      return "local";
  }
  return "remote";
}

nlohmann::json ModelRecord::toJson() const {
  nlohmann::json f = nlohmann::json::array();
  for (const auto& x : files) f.push_back({{"name", x.name}, {"size", x.size}, {"md5", x.md5}});
  nlohmann::json j = {{"id", id},       {"source", sourceKindName(source)}, {"dir", dir},
                      {"state", state}, {"created_at", created_at},         {"updated_at", updated_at},
                      {"files", f}};
  if (source == SourceKind::kLocal)
    j["local_path"] = local_path;  // a local record carries no url key at all
  else
    j["url"] = url;
  return j;
}

Registry::~Registry() {
  if (db_) sqlite3_close_v2(db_);
}

Error Registry::dbError(const std::string& what) {
  std::string msg = db_ ? sqlite3_errmsg(db_) : "no database";
  return makeError(ErrorCode::kIo, "registry " + what + ": " + msg,
                   {{"path", path_}, {"sqlite", msg}, {"sqlite_code", db_ ? sqlite3_extended_errcode(db_) : 0}});
}

Status Registry::exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    sqlite3_free(err);
    Error e = dbError(std::string("exec"));
    e.detail["sql"] = std::string(sql).substr(0, 80);
    return e;
  }
  return {};
}

Result<std::unique_ptr<Registry>> Registry::open(const std::string& path) {
  std::unique_ptr<Registry> r(new Registry());
  r->path_ = path;
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX;
  if (sqlite3_open_v2(path.c_str(), &r->db_, flags, nullptr) != SQLITE_OK) return r->dbError("open");
  sqlite3_busy_timeout(r->db_, 15000);
  EWGPU_TRY(r->exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;"));
  EWGPU_TRY(r->exec("BEGIN IMMEDIATE;"));
  if (auto st = r->exec(kSchema); !st) {
    (void)r->exec("ROLLBACK;");
    return std::move(st).error();
  }
  EWGPU_TRY(r->exec("COMMIT;"));
  return r;
}

Status Registry::put(const ModelRecord& rec) {
  std::lock_guard<std::mutex> g(mu_);
  EWGPU_TRY(exec("BEGIN IMMEDIATE;"));
  auto fail = [&](const std::string& what) {
    Error e = dbError(what);
    (void)exec("ROLLBACK;");
    return e;
  };
  int64_t now = (int64_t)std::time(nullptr);
  {
    Stmt s(db_,
           "INSERT INTO models(id, source, url, local_path, dir, state, created_at, updated_at) "
           "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT(id) DO UPDATE SET source=?2, url=?3, "
           "local_path=?4, dir=?5, state=?6, updated_at=?8");
    s.text(1, rec.id);
    s.text(2, std::string(sourceKindName(rec.source)));
    if (rec.source == SourceKind::kLocal) {
      sqlite3_bind_null(s.s, 3);
      s.text(4, rec.local_path);
    } else {
      s.text(3, rec.url);
      sqlite3_bind_null(s.s, 4);
    }
    s.text(5, rec.dir);
    s.text(6, rec.state.empty() ? "registered" : rec.state);
    sqlite3_bind_int64(s.s, 7, rec.created_at ? rec.created_at : now);
    sqlite3_bind_int64(s.s, 8, now);
    if (sqlite3_step(s.s) != SQLITE_DONE) return Status(fail("insert model " + rec.id));
  }
  {
    Stmt del(db_, "DELETE FROM files WHERE model_id = ?1");
    del.text(1, rec.id);
    if (sqlite3_step(del.s) != SQLITE_DONE) return Status(fail("delete files"));
  }
  for (const auto& f : rec.files) {
    Stmt s(db_, "INSERT INTO files(model_id, name, size, md5) VALUES(?1, ?2, ?3, ?4)");
    s.text(1, rec.id);
    s.text(2, f.name);
    sqlite3_bind_int64(s.s, 3, f.size);
    s.textOrNull(4, f.md5);
    if (sqlite3_step(s.s) != SQLITE_DONE) return Status(fail("insert file " + f.name));
  }
  if (auto st = exec("COMMIT;"); !st) return Status(fail("commit"));
  return {};
}

Status Registry::setState(const std::string& id, const std::string& state) {
  std::lock_guard<std::mutex> g(mu_);
  Stmt s(db_, "UPDATE models SET state = ?1, updated_at = ?2 WHERE id = ?3");
  s.text(1, state);
  sqlite3_bind_int64(s.s, 2, (int64_t)std::time(nullptr));
  s.text(3, id);
  if (sqlite3_step(s.s) != SQLITE_DONE) return dbError("set state");
  return {};
}

Status Registry::loadFiles(ModelRecord& rec) {
  Stmt s(db_, "SELECT name, size, md5 FROM files WHERE model_id = ?1 ORDER BY rowid");
  s.text(1, rec.id);
  int rc;
  while ((rc = sqlite3_step(s.s)) == SQLITE_ROW)
    rec.files.push_back({s.col(0), sqlite3_column_int64(s.s, 1), s.col(2)});
  if (rc != SQLITE_DONE) return dbError("read files");
  return {};
}

Result<std::vector<ModelRecord>> Registry::query(const char* where, const std::string& arg) {
  std::lock_guard<std::mutex> g(mu_);
  std::string sql = std::string("SELECT id, source, url, local_path, dir, state, created_at, updated_at FROM models ") +
                    where + " ORDER BY id";
  Stmt s(db_, sql.c_str());
  if (!s.s) return dbError("prepare");
  if (!arg.empty() || std::string(where).find('?') != std::string::npos) s.text(1, arg);
  std::vector<ModelRecord> out;
  int rc;
  while ((rc = sqlite3_step(s.s)) == SQLITE_ROW) {
    ModelRecord r;
    r.id = s.col(0);
    r.source = parseSource(s.col(1));
    r.url = s.col(2);
    r.local_path = s.col(3);
    r.dir = s.col(4);
    r.state = s.col(5);
    r.created_at = sqlite3_column_int64(s.s, 6);
    r.updated_at = sqlite3_column_int64(s.s, 7);
    out.push_back(std::move(r));
  }
  if (rc != SQLITE_DONE) return dbError("read models");
  for (auto& r : out) EWGPU_TRY(loadFiles(r));
  return out;
}

Result<std::optional<ModelRecord>> Registry::get(const std::string& id) {
  auto r = query("WHERE id = ?1", id);
  if (!r) return std::move(r).error();
  if (r->empty()) return std::optional<ModelRecord>();
  return std::optional<ModelRecord>(std::move(r->front()));
}

Result<std::optional<ModelRecord>> Registry::findByUrl(const std::string& url) {
  auto r = query("WHERE url = ?1", url);
  if (!r) return std::move(r).error();
  if (r->empty()) return std::optional<ModelRecord>();
  return std::optional<ModelRecord>(std::move(r->front()));
}

Result<std::vector<ModelRecord>> Registry::all() { return query("", ""); }

Status Registry::erase(const std::string& id) {
  std::lock_guard<std::mutex> g(mu_);
  Stmt s(db_, "DELETE FROM models WHERE id = ?1");
  s.text(1, id);
  if (sqlite3_step(s.s) != SQLITE_DONE) return dbError("delete model " + id);
  return {};
}

Result<std::string> Registry::integrityCheck() {
  std::lock_guard<std::mutex> g(mu_);
  Stmt s(db_, "PRAGMA integrity_check");
  std::string out;
  while (sqlite3_step(s.s) == SQLITE_ROW) out += (out.empty() ? "" : "; ") + s.col(0);
  if (out.empty()) return dbError("integrity_check");
  return out;
}

}  // namespace ewgpu
