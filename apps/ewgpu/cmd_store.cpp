// Model store commands, Ollama-style: pull, list, rm, add, recommend, prefetch, verify. Every one takes --json
// (one JSON document on stdout) and --cache-dir DIR (else $EWGPU_CACHE_DIR, else the XDG cache folder).
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "command.h"
#include "terminal.h"
#include "gpu/context.h"  // gpu::probeAdapterCached()
#include "store/device_fit.h"
#include "store/model_store.h"

namespace ewgpu::cli {
namespace {

// The flags every store command takes.
struct StoreFlags {
  std::string cache_dir;
  int parallel = 4;
  bool json = false;
};

void addStoreFlags(CLI::App& app, StoreFlags& f, bool parallel) {
  addCacheDirFlag(app, f.cache_dir);
  if (parallel) app.add_option("--parallel", f.parallel, "files downloaded at once")->check(bounded(1, 64));
  addJsonFlag(app, f.json);
}

Result<std::unique_ptr<ModelStore>> openStore(const StoreFlags& f) {
  StoreOptions o;
  o.cache_dir = f.cache_dir;
  o.download.parallel = f.parallel;
  return ModelStore::open(o);
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

struct PullFlags : StoreFlags {
  std::string source, id;
};

int cmdPull(const PullFlags& a, bool prefetch_only) {
  const bool json = a.json;
  auto store = openStore(a);
  if (!store) return reportError(store.error(), json);
  bool show = !json && !prefetch_only && stderrIsTerminal();
  auto t0 = std::chrono::steady_clock::now();
  auto po = terminalPullOptions(a.source, show);
  Result<ModelRecord> rec =
      prefetch_only ? Result<ModelRecord>(makeError(ErrorCode::kInternal, "")) : (*store)->pull(a.source, a.id, po);
  if (prefetch_only) {
    auto st = (*store)->prefetch(a.source, po);
    rec = st ? (*store)->record(a.source) : Result<ModelRecord>(std::move(st).error());
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
    std::printf("%s: cached %s in %s (%.1f s)\n", rec->id.c_str(), humanBytes((double)bytes).c_str(), rec->dir.c_str(),
                secs);
  }
  return 0;
}

struct ListFlags : StoreFlags {
  bool catalog = false;
};

int cmdList(const ListFlags& a) {
  const bool json = a.json;
  auto store = openStore(a);
  if (!store) return reportError(store.error(), json);
  auto all = (*store)->list();
  if (!all) return reportError(all.error(), json);
  nlohmann::json out = nlohmann::json::array();
  for (const auto& l : *all) out.push_back(listingJson(l));
  if (a.catalog)
    for (const auto& e : prebuiltCatalog()) {
      const std::string why = notRunnableReason(e);  // "" for an entry this engine runs
      out.push_back({{"id", e.model_id},
                     {"state", "catalogue"},
                     {"source", "prebuilt"},
                     {"arch", e.arch},
                     {"vram_required_MB", e.vram_required_mb},
                     {"runnable", why.empty()},
                     {"reason", why}});
    }
  if (json) {
    std::cout << nlohmann::json{{"cache_dir", (*store)->cacheDir()}, {"models", out}}.dump(2) << "\n";
    return 0;
  }
  std::printf("%-48s %-9s %-20s %-8s%s\n", "ID", "STATE", "SIZE", "SOURCE", a.catalog ? " RUNNABLE" : "");
  for (const auto& m : out) {
    std::string size = m["state"] == "catalogue" ? "-"
                                                 : humanBytes((double)m["bytes_on_disk"].get<int64_t>()) + " / " +
                                                       humanBytes((double)m["bytes_total"].get<int64_t>());
    std::string runnable;  // catalogue rows: "yes", or "no: <reason>"
    if (m.contains("runnable"))
      runnable = m["runnable"].get<bool>() ? " yes" : " no: " + m["reason"].get<std::string>();
    std::printf("%-48s %-9s %-20s %-8s%s\n", m["id"].get<std::string>().c_str(), m["state"].get<std::string>().c_str(),
                size.c_str(), m["source"].get<std::string>().c_str(), runnable.c_str());
  }
  return 0;
}

struct IdFlags : StoreFlags {
  std::string id, name;
  bool forget = false, md5 = false;
};

int cmdRm(const IdFlags& a) {
  const bool json = a.json, forget = a.forget;
  const std::vector<std::string> pos = {a.id};
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

int cmdAdd(const IdFlags& a) {
  const bool json = a.json;
  auto store = openStore(a);
  if (!store) return reportError(store.error(), json);
  auto rec = (*store)->addLocal(a.id, a.name);
  if (!rec) return reportError(rec.error(), json);
  if (json)
    std::cout << rec->toJson().dump() << "\n";
  else
    std::printf("%s: added from %s (%zu files)\n", rec->id.c_str(), rec->local_path.c_str(), rec->files.size());
  return 0;
}

int cmdVerify(const IdFlags& a) {
  const bool json = a.json, md5 = a.md5;
  const std::vector<std::string> pos = {a.id};
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
    std::printf("%s: ok (%s%s, %.2f s, %.0f MB/s)\n", pos[0].c_str(), humanBytes((double)bytes).c_str(),
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
Result<DeviceInfo> deviceFor(const std::string& device_json, std::string& note) {
  if (!device_json.empty()) return deviceFromJson(device_json);
  auto d = gpu::probeAdapterCached();
  if (d) return d;
  note = "unknown device (" + d.error().message + "): limits and memory not checked";
  return DeviceInfo{};
}

struct RecommendFlags {
  std::optional<double> max_vram_mb;
  std::string prefer = "quality", device_json;
  int limit = 10;
  bool json = false;
};

int cmdRecommend(const RecommendFlags& a) {
  const bool json = a.json;
  std::string note;
  auto dev = deviceFor(a.device_json, note);
  if (!dev) return reportError(dev.error(), json);
  RecommendOptions o;
  if (a.max_vram_mb) o.max_vram_mb = *a.max_vram_mb;
  o.prefer = a.prefer;
  o.limit = (size_t)a.limit;
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

template <class Flags>
std::shared_ptr<Flags> withId(CLI::App& app, const char* name, const char* help) {
  auto f = std::make_shared<Flags>();
  app.add_option(name, f->id, help)->required();
  return f;
}

Registration reg_pull{{"pull", "download a model into the cache (resumes; Ctrl-C keeps partial files)", [](CLI::App& app) {
                         auto f = std::make_shared<PullFlags>();
                         app.add_option("SOURCE", f->source, "a catalogue id, a registered id or an http(s) URL")
                             ->required();
                         app.add_option("--id", f->id, "the id to register a URL under (default: from the URL)");
                         addStoreFlags(app, *f, true);
                         return [f] { return cmdPull(*f, false); };
                       }}};
Registration reg_prefetch{{"prefetch", "fill the cache for a known id, quietly (no GPU)", [](CLI::App& app) {
                             auto f = std::make_shared<PullFlags>();
                             app.add_option("ID", f->source, "a catalogue id or a registered id")->required();
                             addStoreFlags(app, *f, true);
                             return [f] { return cmdPull(*f, true); };
                           }}};
Registration reg_list{{"list", "models in the store: id, state, size, source", [](CLI::App& app) {
                         auto f = std::make_shared<ListFlags>();
                         app.add_flag("--catalog", f->catalog, "also list WebLLM's prebuilt catalogue");
                         addStoreFlags(app, *f, false);
                         return [f] { return cmdList(*f); };
                       }}};
Registration reg_rm{{"rm", "evict a model's files (keep the record); --forget removes it entirely", [](CLI::App& app) {
                       auto f = withId<IdFlags>(app, "ID", "a registered id");
                       app.add_flag("--forget", f->forget, "also forget the record");
                       addStoreFlags(app, *f, false);
                       return [f] { return cmdRm(*f); };
                     }}};
Registration reg_add{{"add", "register a local MLC folder (validated; never touches the network)", [](CLI::App& app) {
                        auto f = withId<IdFlags>(app, "PATH", "an MLC model folder");
                        app.add_option("--id", f->name, "the id to register it under (default: the folder's name)");
                        addStoreFlags(app, *f, false);
                        return [f] { return cmdAdd(*f); };
                      }}};
Registration reg_verify{{"verify", "check a cached model's files (sizes; --md5 re-hashes)", [](CLI::App& app) {
                           auto f = withId<IdFlags>(app, "ID", "a registered or catalogue id");
                           app.add_flag("--md5", f->md5, "re-hash every file against its md5");
                           addStoreFlags(app, *f, false);
                           return [f] { return cmdVerify(*f); };
                         }}};
Registration reg_recommend{{"recommend", "rank catalogue models that fit this device", [](CLI::App& app) {
                              auto f = std::make_shared<RecommendFlags>();
                              app.add_option("--max-vram-mb", f->max_vram_mb,
                                             "memory budget in MB (default: the device-local memory)")
                                  ->check(bounded(1.0, 1e9));
                              app.add_option("--prefer", f->prefer, "order: quality (bigger first) or speed")
                                  ->check(CLI::IsMember({"quality", "speed"}));
                              app.add_option("--device-json", f->device_json,
                                             "rank for the device in this file (the shape `ewgpu probe --json` prints)");
                              app.add_option("--limit", f->limit, "models to list")->check(bounded(1, 1000));
                              addJsonFlag(app, f->json);
                              return [f] { return cmdRecommend(*f); };
                            }}};

}  // namespace
}  // namespace ewgpu::cli
