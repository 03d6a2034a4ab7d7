// Model store commands, Ollama-style: pull, list, rm, add, recommend, prefetch, verify. Every one takes --json
// (one JSON document on stdout) and --cache-dir DIR (else $EWGPU_CACHE_DIR, else the XDG cache folder).
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <sstream>

#include "command.h"
#include "gpu/context.h"  // gpu::probeAdapterCached()
#include "store/device_fit.h"
#include "store/model_store.h"

namespace ewgpu::cli {
namespace {

std::atomic<bool> g_cancel{false};
void onSigint(int) { g_cancel = true; }

const std::vector<std::string> kValued = {"--id",          "--cache-dir", "--max-vram-mb", "--prefer",
                                          "--device-json", "--limit",     "--parallel"};

Result<std::unique_ptr<ModelStore>> openStore(const Args& a) {
  StoreOptions o;
  if (auto d = flagValue(a, "--cache-dir")) o.cache_dir = *d;
  if (auto p = flagValue(a, "--parallel")) o.download.parallel = std::max(1, std::atoi(p->c_str()));
  return ModelStore::open(o);
}

std::string human(double bytes) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) bytes /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return buf;
}

// "[#########.........]  45%  120.0 MB/266.0 MB  35.2 MB/s  ETA 0:04" on stderr, redrawn in place.
void drawProgress(const DownloadProgress& p, const std::string& id) {
  double frac = p.bytes_total > 0 ? (double)p.bytes_done / (double)p.bytes_total : 0;
  int filled = (int)(frac * 24);
  std::string bar(filled, '#');
  bar.resize(24, '.');
  long eta = p.bytes_per_second > 0 ? (long)((double)(p.bytes_total - p.bytes_done) / p.bytes_per_second) : -1;
  char etabuf[32] = "--:--";
  if (eta >= 0) std::snprintf(etabuf, sizeof etabuf, "%ld:%02ld", eta / 60, eta % 60);
  std::fprintf(stderr, "\rpulling %s [%s] %3d%%  %s/%s  %s/s  ETA %s   ", id.c_str(), bar.c_str(), (int)(frac * 100),
               human((double)p.bytes_done).c_str(), human((double)p.bytes_total).c_str(),
               human(p.bytes_per_second).c_str(), etabuf);
}

PullOptions pullOptions(const std::string& label, bool show) {
  g_cancel = false;
  std::signal(SIGINT, onSigint);  // Ctrl-C stops cleanly; partial files are kept for a resume
  PullOptions po;
  po.cancel = &g_cancel;
  if (show) po.on_progress = [label](const DownloadProgress& p) { drawProgress(p, label); };
  return po;
}

nlohmann::json listingJson(const ModelListing& l) {
  return {{"id", l.record.id},
          {"state", cacheStateName(l.state)},
          {"source", sourceKindName(l.record.source)},
          {"bytes_on_disk", l.bytes_on_disk},
          {"bytes_total", l.bytes_total},
          {"location", l.record.source == SourceKind::kLocal ? l.record.local_path : l.record.url},
          {"dir", l.record.dir}};
}

int cmdPull(const Args& a, bool prefetch_only) {
  bool json = hasFlag(a, "--json");
  auto pos = positionals(a, kValued);
  if (pos.size() != 1) return reportError(makeError(ErrorCode::kBadRequest, "expected one ID or URL"), json);
  auto store = openStore(a);
  if (!store) return reportError(store.error(), json);
  bool show = !json && !prefetch_only && ::isatty(2);
  auto t0 = std::chrono::steady_clock::now();
  auto po = pullOptions(pos[0], show);
  std::string id = flagValue(a, "--id").value_or("");
  Result<ModelRecord> rec =
      prefetch_only ? Result<ModelRecord>(makeError(ErrorCode::kInternal, "")) : (*store)->pull(pos[0], id, po);
  if (prefetch_only) {
    auto st = (*store)->prefetch(pos[0], po);
    rec = st ? (*store)->record(pos[0]) : Result<ModelRecord>(std::move(st).error());
  }
  if (show) std::fprintf(stderr, "\n");
  if (!rec) return reportError(rec.error(), json);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  int64_t bytes = 0;
  for (const auto& f : rec->files) bytes += std::max<int64_t>(0, f.size);
  if (json) {
    std::cout
        << nlohmann::json{{"id", rec->id}, {"state", "cached"}, {"dir", rec->dir}, {"bytes", bytes}, {"seconds", secs}}
               .dump()
        << "\n";
  } else {
    std::printf("%s: cached %s in %s (%.1f s)\n", rec->id.c_str(), human((double)bytes).c_str(), rec->dir.c_str(),
                secs);
  }
  return 0;
}

int cmdList(const Args& a) {
  bool json = hasFlag(a, "--json");
  auto store = openStore(a);
  if (!store) return reportError(store.error(), json);
  auto all = (*store)->list();
  if (!all) return reportError(all.error(), json);
  nlohmann::json out = nlohmann::json::array();
  for (const auto& l : *all) out.push_back(listingJson(l));
  if (hasFlag(a, "--catalog"))
    for (const auto& e : prebuiltCatalog())
      out.push_back({{"id", e.model_id},
                     {"state", "catalogue"},
                     {"source", "prebuilt"},
                     {"arch", e.arch},
                     {"vram_required_MB", e.vram_required_mb}});
  if (json) {
    std::cout << nlohmann::json{{"cache_dir", (*store)->cacheDir()}, {"models", out}}.dump(2) << "\n";
    return 0;
  }
  std::printf("%-48s %-9s %-20s %-8s\n", "ID", "STATE", "SIZE", "SOURCE");
  for (const auto& m : out) {
    std::string size = m["state"] == "catalogue" ? "-"
                                                 : human((double)m["bytes_on_disk"].get<int64_t>()) + " / " +
                                                       human((double)m["bytes_total"].get<int64_t>());
    std::printf("%-48s %-9s %-20s %-8s\n", m["id"].get<std::string>().c_str(), m["state"].get<std::string>().c_str(),
                size.c_str(), m["source"].get<std::string>().c_str());
  }
  return 0;
}

int cmdRm(const Args& a) {
  bool json = hasFlag(a, "--json"), forget = hasFlag(a, "--forget");
  auto pos = positionals(a, kValued);
  if (pos.size() != 1) return reportError(makeError(ErrorCode::kBadRequest, "expected one ID"), json);
  auto store = openStore(a);
  if (!store) return reportError(store.error(), json);
  auto st = forget ? (*store)->remove(pos[0]) : (*store)->evict(pos[0]);
  if (!st) return reportError(st.error(), json);
  if (json)
    std::cout << nlohmann::json{{"id", pos[0]}, {"action", forget ? "removed" : "evicted"}}.dump() << "\n";
  else
    std::printf("%s: %s\n", pos[0].c_str(), forget ? "removed (files and record)" : "evicted (record kept)");
  return 0;
}

int cmdAdd(const Args& a) {
  bool json = hasFlag(a, "--json");
  auto pos = positionals(a, kValued);
  if (pos.size() != 1) return reportError(makeError(ErrorCode::kBadRequest, "expected one folder"), json);
  auto store = openStore(a);
  if (!store) return reportError(store.error(), json);
  auto rec = (*store)->addLocal(pos[0], flagValue(a, "--id").value_or(""));
  if (!rec) return reportError(rec.error(), json);
  if (json)
    std::cout << rec->toJson().dump() << "\n";
  else
    std::printf("%s: added from %s (%zu files)\n", rec->id.c_str(), rec->local_path.c_str(), rec->files.size());
  return 0;
}

int cmdVerify(const Args& a) {
  bool json = hasFlag(a, "--json"), md5 = hasFlag(a, "--md5");
  auto pos = positionals(a, kValued);
  if (pos.size() != 1) return reportError(makeError(ErrorCode::kBadRequest, "expected one ID"), json);
  auto store = openStore(a);
  if (!store) return reportError(store.error(), json);
  auto rec = (*store)->record(pos[0]);
  if (!rec) return reportError(rec.error(), json);
  auto t0 = std::chrono::steady_clock::now();
  std::clock_t c0 = std::clock();
  auto st = (*store)->verify(pos[0], md5);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double cpu = (double)(std::clock() - c0) / CLOCKS_PER_SEC;  // this process only: robust on a busy machine
  if (!st) return reportError(st.error(), json);
  int64_t bytes = 0;
  for (const auto& f : rec->files) bytes += std::max<int64_t>(0, f.size);
  double mbps = secs > 0 ? (double)bytes / (1 << 20) / secs : 0;
  if (json)
    std::cout << nlohmann::json{{"id", pos[0]},    {"ok", true},         {"md5", md5},      {"bytes", bytes},
                                {"seconds", secs}, {"cpu_seconds", cpu}, {"MB_per_s", mbps}}
                     .dump()
              << "\n";
  else
    std::printf("%s: ok (%s%s, %.2f s, %.0f MB/s)\n", pos[0].c_str(), human((double)bytes).c_str(),
                md5 ? ", md5 checked" : ", sizes only", secs, mbps);
  return 0;
}

// DeviceInfo from a JSON file in the shape `ewgpu probe --json` prints (DeviceInfo::toJson).
Result<DeviceInfo> deviceFromJson(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  auto j = nlohmann::json::parse(ss.str(), nullptr, false);
  if (!in || j.is_discarded() || !j.is_object())
    return makeError(ErrorCode::kBadRequest, "cannot read device JSON " + path, {{"path", path}});
  auto section = [&](const char* k) { return j.contains(k) && j[k].is_object() ? j[k] : nlohmann::json::object(); };
  auto adapter = section("adapter"), features = section("features"), limits = section("limits");
  DeviceInfo d;
  d.description = adapter.value("description", "");
  d.backend = adapter.value("backend", "");
  d.adapter_type = adapter.value("type", "");
  d.shader_f16 = features.value("shader-f16", false);
  d.max_storage_buffer_binding_size = limits.value("maxStorageBufferBindingSize", (uint64_t)0);
  d.max_buffer_size = limits.value("maxBufferSize", (uint64_t)0);
  if (j.contains("memory_heaps") && j["memory_heaps"].is_array())
    for (const auto& h : j["memory_heaps"])
      if (h.is_object()) d.memory_heaps.push_back({h.value("size", (uint64_t)0), h.value("properties", (uint64_t)0)});
  return d;
}

// The device to rank for: --device-json FILE, else the GPU layer's cached probe, else "unknown".
Result<DeviceInfo> deviceFor(const Args& a, std::string& note) {
  if (auto f = flagValue(a, "--device-json")) return deviceFromJson(*f);
  auto d = gpu::probeAdapterCached();
  if (d) return d;
  note = "unknown device (" + d.error().message + "): limits and memory not checked";
  return DeviceInfo{};
}

int cmdRecommend(const Args& a) {
  bool json = hasFlag(a, "--json");
  std::string note;
  auto dev = deviceFor(a, note);
  if (!dev) return reportError(dev.error(), json);
  RecommendOptions o;
  if (auto v = flagValue(a, "--max-vram-mb")) o.max_vram_mb = std::atof(v->c_str());
  o.prefer = flagValue(a, "--prefer").value_or("quality");
  o.limit = (size_t)std::max(1, std::atoi(flagValue(a, "--limit").value_or("10").c_str()));
  auto recs = recommendModels(*dev, o);
  if (!recs) return reportError(recs.error(), json);
  if (json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& r : *recs) out.push_back(r.toJson());
    std::cout << nlohmann::json{{"prefer", o.prefer}, {"note", note}, {"models", out}}.dump(2) << "\n";
    return 0;
  }
  if (!note.empty()) std::printf("note: %s\n", note.c_str());
  std::printf("%-46s %-8s %-8s %8s %10s  %s\n", "ID", "ARCH", "QUANT", "PARAMS", "VRAM MB", "WARNINGS");
  for (const auto& r : *recs) {
    std::string warn;
    for (const auto& w : r.fit.warnings) warn += (warn.empty() ? "" : ",") + w.code;
    std::printf("%-46s %-8s %-8s %7.2fB %10.0f  %s\n", r.entry->model_id.c_str(), r.entry->arch.c_str(),
                r.entry->quantization.c_str(), r.params_b, r.entry->vram_required_mb, warn.c_str());
  }
  return 0;
}

const char* kCommon = " [--cache-dir DIR] [--json]";
Registration reg_pull{{"pull", std::string("pull ID|URL [--id NAME] [--parallel N]") + kCommon,
                       "download a model into the cache (resumes; Ctrl-C keeps partial files)",
                       [](const Args& a) { return cmdPull(a, false); }}};
Registration reg_prefetch{{"prefetch", std::string("prefetch ID") + kCommon,
                           "fill the cache for a known id, quietly (no GPU)",
                           [](const Args& a) { return cmdPull(a, true); }}};
Registration reg_list{
    {"list", std::string("list [--catalog]") + kCommon, "models in the store: id, state, size, source", cmdList}};
Registration reg_rm{{"rm", std::string("rm ID [--forget]") + kCommon,
                     "evict a model's files (keep the record); --forget removes it entirely", cmdRm}};
Registration reg_add{{"add", std::string("add PATH [--id NAME]") + kCommon,
                      "register a local MLC folder (validated; never touches the network)", cmdAdd}};
Registration reg_verify{{"verify", std::string("verify ID [--md5]") + kCommon,
                         "check a cached model's files (sizes; --md5 re-hashes)", cmdVerify}};
Registration reg_recommend{
    {"recommend", "recommend [--max-vram-mb N] [--prefer quality|speed] [--device-json FILE] [--limit N] [--json]",
     "rank catalogue models that fit this device", cmdRecommend}};

}  // namespace
}  // namespace ewgpu::cli
