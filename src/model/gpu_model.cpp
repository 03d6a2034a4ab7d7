#include "model/gpu_model.h"

#include "base/clock.h"
#include "gpu/upload.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace ewgpu {
namespace {

using kernels::WeightFormat;

struct Part {               // one module of a (possibly fused) matrix
  std::string module;
  uint32_t rows;
};

using Clock = std::chrono::steady_clock;

bool envFlag(const char* name, bool dflt) {
  const char* v = std::getenv(name);
  return v && *v ? v[0] != '0' : dflt;
}

// Faults the shards' pages in, in manifest order (the order the upload mostly walks), on a thread of its own, so
// the upload's writes find them resident: the page-cache (or disk) reads overlap the copies into Dawn's staging
// memory. It touches one byte per page and keeps nothing; stop() ends it where it is.
class ReadAhead {
 public:
  ReadAhead(const ModelFolder& f, bool on) : f_(f) {
#ifndef EWGPU_WEB
    if (on) thread_ = std::thread([this] { run(); });
#else
    (void)on;
#endif
  }
  ~ReadAhead() { stop(); }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  double ms() const { return ms_; }
  uint64_t bytes() const { return bytes_; }

 private:
  void run() {
    const auto t0 = Clock::now();
    for (const auto& t : f_.tensors()) {
      if (stop_) break;
      auto raw = f_.rawBytes(t);
      if (!raw) continue;  // the upload reports it
      const volatile uint8_t* p = raw->data();  // volatile: each read happens
      for (size_t i = 0; i < raw->size() && !stop_; i += 4096) (void)p[i];
      if (!stop_) bytes_ += raw->size();
    }
    ms_ = msSince(t0);
  }
  const ModelFolder& f_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  double ms_ = 0;
  uint64_t bytes_ = 0;
};

}  // namespace

// The matrices' bytes still to be written (UploadOptions::overlap): finish() writes them through the staging ring
// on the calling thread.
class WeightCopies {
 public:
  WeightCopies(gpu::Context& ctx, std::vector<gpu::UploadRange> ranges, uint32_t threads)
      : ctx_(ctx), ranges_(std::move(ranges)), threads_(threads) {}
  uint32_t threads() const { return threads_; }
  Status finish(double* copy_ms) {
    const auto t0 = Clock::now();
    gpu::RingOptions o;
    o.threads = threads_;
    Status s = gpu::uploadThroughRing(ctx_, ranges_, o);
    ranges_.clear();
    if (copy_ms) *copy_ms = msSince(t0);
    return s;
  }

 private:
  gpu::Context& ctx_;
  std::vector<gpu::UploadRange> ranges_;
  uint32_t threads_;
};

GpuModel::GpuModel() = default;
GpuModel::~GpuModel() = default;
GpuModel::GpuModel(GpuModel&&) noexcept = default;
GpuModel& GpuModel::operator=(GpuModel&&) noexcept = default;

Status GpuModel::finishUpload(double* copy_ms) {
  if (!copies) return {};
  Status s = copies->finish(copy_ms);
  copies.reset();
  return s;
}

namespace {

class Uploader {
 public:
  // copy: each slice through a host buffer (UploadOptions::copy_through_host), else straight from the mapping.
  // ring: the matrices' rows listed as ranges() for the staging ring instead of written.
  Uploader(gpu::Context& ctx, const ModelFolder& f, const UploadOptions& o, bool copy, bool ring)
      : ctx_(ctx), f_(f), max_chunk_(o.max_chunk_bytes), on_bytes_(o.on_bytes), defer_(o.defer), copy_(copy),
        ring_(ring) {}
  double read_ms = 0, write_ms = 0, alloc_ms = 0;
  // createBuffer, timed
  Result<gpu::Buffer> newBuffer(uint64_t size, const std::string& label) {
    const auto t0 = Clock::now();
    auto b = ctx_.createBuffer(size, gpu::BufferKind::kStorage, label);
    alloc_ms += msSince(t0);
    return b;
  }
  std::vector<gpu::UploadRange>& ranges() { return ranges_; }

  Result<GpuMatrix> matrix(const std::vector<Part>& parts, uint32_t k, const std::string& bias_name = "") {
    GpuMatrix m;
    m.format = weightFormatOf(f_.config().quant);
    m.k = k;
    for (const auto& p : parts) m.n += p.rows;
    const bool q = quantSpec(f_.config().quant).quantized;
    std::vector<Src> ws, ss;  // per part: its weight record (and scale record)
    for (const auto& p : parts) {
      const TensorInfo* wt = f_.find(p.module + (q ? ".q_weight" : ".weight"));
      if (!wt) return missing(p.module);
      ws.push_back({wt, p.rows});
      if (q) {
        const TensorInfo* st = f_.find(p.module + ".q_scale");
        if (!st) return missing(p.module + ".q_scale");
        ss.push_back({st, p.rows});
      }
    }
    const uint64_t w_row = rowBytes(ws), s_row = q ? rowBytes(ss) : 0;
    if (w_row == 0 || (q && s_row == 0)) {  // unusual records: the old way
      EWGPU_TRY(concatenated(m, parts, q));
    } else {
      EWGPU_TRY(chunked(
          m, parts[0].module, w_row, s_row,
          [&](uint32_t start, uint32_t rows, const gpu::Buffer& b) { return copyRows(ws, w_row, start, rows, b); },
          [&](uint32_t start, uint32_t rows, const gpu::Buffer& b) { return copyRows(ss, s_row, start, rows, b); }));
    }
    if (!bias_name.empty()) {
      auto b = vector(bias_name);
      if (!b) return std::move(b).error();
      m.bias = std::move(*b);
    }
    return m;
  }

  // The old path for records whose rows are not whole 4-byte words (or f32 records stored as bf16): every part
  // concatenated in host memory, then split.
  Status concatenated(GpuMatrix& m, const std::vector<Part>& parts, bool q) {
    std::vector<uint8_t> w, s;
    for (const auto& p : parts) {
      auto wb = f_.storageBytes(*f_.find(p.module + (q ? ".q_weight" : ".weight")));
      if (!wb) return std::move(wb).error();
      w.insert(w.end(), wb->begin(), wb->end());
      if (q) {
        auto sb = f_.storageBytes(*f_.find(p.module + ".q_scale"));
        if (!sb) return std::move(sb).error();
        s.insert(s.end(), sb->begin(), sb->end());
      }
    }
    const uint64_t w_row = w.size() / m.n, s_row = s.size() / m.n;
    w.resize(padded(w.size()), 0);
    return chunked(
        m, parts[0].module, w_row, s_row,
        [&](uint32_t start, uint32_t rows, const gpu::Buffer& b) -> Status {
          ctx_.write(b, 0, w.data() + start * w_row,
                     std::min<size_t>(padded(rows * w_row), w.size() - (size_t)(start * w_row)));
          return {};
        },
        [&](uint32_t start, uint32_t rows, const gpu::Buffer& b) -> Status {
          std::vector<uint8_t> chunk(s.begin() + start * s_row, s.begin() + (start + rows) * s_row);
          chunk.resize(padded(chunk.size()), 0);
          ctx_.write(b, 0, chunk.data(), chunk.size());
          return {};
        });
  }

  // Splits m's rows into chunks a binding can hold (an even number of rows each) and creates each chunk's weight
  // buffer, and its scale buffer where s_row > 0, filled by fill_w / fill_s(start row, rows, buffer).
  template <class FillW, class FillS>
  Status chunked(GpuMatrix& m, const std::string& label, uint64_t w_row, uint64_t s_row, FillW fill_w, FillS fill_s) {
    const uint64_t limit = max_chunk_ ? max_chunk_ : ctx_.limits().maxStorageBufferBindingSize;
    const uint64_t per_chunk = std::max<uint64_t>(2, (limit / std::max<uint64_t>(w_row, 1)) & ~uint64_t(1));
    for (uint32_t start = 0; start < m.n; start += (uint32_t)per_chunk) {
      const uint32_t rows = (uint32_t)std::min<uint64_t>(per_chunk, m.n - start);
      auto wbuf = newBuffer(rows * w_row, label);
      if (!wbuf) return std::move(wbuf).error();
      EWGPU_TRY(fill_w(start, rows, *wbuf));
      m.w.push_back(std::move(*wbuf));
      if (s_row) {
        auto sbuf = newBuffer(rows * s_row, label + ".scale");
        if (!sbuf) return std::move(sbuf).error();
        EWGPU_TRY(fill_s(start, rows, *sbuf));
        m.s.push_back(std::move(*sbuf));
      }
      m.rows.push_back(rows);
      added(rows * (w_row + s_row));
    }
    return {};
  }

  Result<gpu::Buffer> vector(const std::string& name) {
    auto v = loadVectorF32(f_, name);
    if (!v) return std::move(v).error();
    return floats(*v, name);
  }

  Result<gpu::Buffer> floats(const std::vector<float>& v, const std::string& label) {
    auto b = newBuffer(v.size() * 4, label);
    if (!b) return std::move(b).error();
    ctx_.write(*b, 0, v.data(), v.size() * 4);
    added(v.size() * 4);
    return b;
  }

  uint64_t bytes() const { return bytes_; }

 private:
  struct Src {
    const TensorInfo* t;
    uint32_t rows;
  };
  // Bytes per row, the same for every part and a whole number of 4-byte words; 0 when not (then the
  // concatenating path runs).
  static uint64_t rowBytes(const std::vector<Src>& parts) {
    uint64_t row = 0;
    for (const auto& p : parts) {
      if (p.t->f32_as_bf16 || p.rows == 0 || p.t->nbytes % p.rows) return 0;
      const uint64_t r = p.t->nbytes / p.rows;
      if (r % 4 || (row && r != row)) return 0;
      row = r;
    }
    return row;
  }
  // Rows [start, start + rows) of the parts stacked, into dst from offset 0, read in slices of at most
  // kSliceBytes: the host never holds more than one slice of a matrix (the browser's heap stays small).
  // With the ring, each range is listed for it instead (ranges()).
  Status copyRows(const std::vector<Src>& parts, uint64_t row_bytes, uint32_t start, uint32_t rows,
                  const gpu::Buffer& dst) {
    constexpr uint64_t kSliceBytes = 8ull << 20;
    const uint64_t slice_rows = std::max<uint64_t>(1, kSliceBytes / row_bytes);
    uint64_t first = 0, dst_off = 0;  // first: the part's first row in the stacked matrix
    const uint64_t end = (uint64_t)start + rows;
    for (const auto& p : parts) {
      const uint64_t lo = std::max<uint64_t>(first, start), hi = std::min<uint64_t>(first + p.rows, end);
      if (defer_ && hi > lo) {
        defer_(dst, dst_off, *p.t, (lo - first) * row_bytes, (hi - lo) * row_bytes);
        dst_off += (hi - lo) * row_bytes;
        first += p.rows;
        continue;
      }
      std::span<const uint8_t> shard;
      if (!copy_) {
        auto raw = f_.rawBytes(*p.t);
        if (!raw) return std::move(raw).error();
        shard = *raw;
      }
      if (ring_ && hi > lo) {
        ranges_.push_back({shard.data() + (lo - first) * row_bytes, dst.handle(), dst_off, (hi - lo) * row_bytes});
        dst_off += (hi - lo) * row_bytes;
        first += p.rows;
        continue;
      }
      for (uint64_t r = lo; r < hi; r += slice_rows) {
        const uint64_t n = std::min<uint64_t>(slice_rows, hi - r);
        const uint8_t* src;
        if (copy_) {
          const auto t0 = Clock::now();
          staging_.resize(n * row_bytes);
          EWGPU_TRY(f_.readRange(*p.t, (r - first) * row_bytes, staging_));
          read_ms += msSince(t0);
          src = staging_.data();
        } else {
          src = shard.data() + (r - first) * row_bytes;  // Dawn copies it during the call
        }
        const auto t0 = Clock::now();
        ctx_.write(dst, dst_off, src, n * row_bytes);
        write_ms += msSince(t0);
        dst_off += n * row_bytes;
      }
      first += p.rows;
    }
    return {};
  }
  std::vector<uint8_t> staging_;
  static size_t padded(size_t n) { return (n + 3) & ~size_t(3); }
  void added(uint64_t n) {
    bytes_ += n;
    if (on_bytes_) on_bytes_(bytes_);
  }
  Error missing(const std::string& what) {
    return makeError(ErrorCode::kInvalidModelFolder, "tensor " + what + " missing",
                     {{"file", f_.cache().file}, {"problem", "missing_tensor"}, {"tensor", what}});
  }
  gpu::Context& ctx_;
  const ModelFolder& f_;
  uint64_t max_chunk_;
  std::function<void(uint64_t)> on_bytes_;
  std::function<void(const gpu::Buffer&, uint64_t, const TensorInfo&, uint64_t, uint64_t)> defer_;
  uint64_t bytes_ = 0;
  bool copy_;
  bool ring_;
  std::vector<gpu::UploadRange> ranges_;
};

}  // namespace

WeightFormat weightFormatOf(Quant q) {
  switch (q) {
    case Quant::kQ4F16_1: return WeightFormat::kQ4F16;
    case Quant::kQ4F32_1: return WeightFormat::kQ4F32;
    case Quant::kQ0F16: return WeightFormat::kQ0F16;
    case Quant::kQ0F32: return WeightFormat::kQ0F32;
    case Quant::kQ3F16_1: return WeightFormat::kQ3F16;
  }
  return WeightFormat::kQ4F16;
}

kernels::LinearWeights GpuMatrix::view() const {
  kernels::LinearWeights v;
  for (const auto& b : w) v.w_chunks.push_back(&b);
  for (const auto& b : s) v.s_chunks.push_back(&b);
  v.chunk_rows = rows;
  v.N = n;
  v.K = k;
  v.format = format;
  v.bias = bias ? &bias : nullptr;
  return v;
}

uint64_t GpuMatrix::bytes() const {
  uint64_t t = 0;
  for (const auto& b : w) t += b.size();
  for (const auto& b : s) t += b.size();
  return t;
}

Result<std::unique_ptr<GpuModel>> uploadModel(gpu::Context& ctx, const ModelFolder& folder, const UploadOptions& opts) {
  const ModelConfig& c = folder.config();
  auto m = std::make_unique<GpuModel>();
  m->config = c;
#ifdef EWGPU_WEB
  const bool copy = true;  // shards are Blobs there: read only the slice (ModelFolder::readRange)
#else
  const bool copy = opts.copy_through_host || envFlag("EWGPU_UPLOAD_COPY", false);
#endif
#ifdef EWGPU_WEB
  const bool ring = false;  // the browser writes from Blob reads (defer)
#else
  const bool ring = opts.ring && envFlag("EWGPU_UPLOAD_RING", true) && !opts.defer && !copy;
#endif
  Uploader up(ctx, folder, opts, copy, ring);
  // The ring's copying threads fault the shards' pages in themselves, several at once.
  const bool read_ahead =
      opts.read_ahead && envFlag("EWGPU_UPLOAD_READ_AHEAD", true) && !opts.defer && !copy && !ring;
  ReadAhead ahead(folder, read_ahead);
  const uint32_t H = c.hidden;
  const ModelNames names = modelNames(c);
  const bool layer_norm = c.norm == NormKind::kLayer;
  // A norm's weight (and its LayerNorm bias); nothing for a name the architecture leaves empty.
  auto norm = [&](const std::string& name, gpu::Buffer& w, gpu::Buffer* b) -> Status {
    if (name.empty()) return {};
    EWGPU_ASSIGN(w, up.vector(name));
    if (layer_norm && b) EWGPU_ASSIGN(*b, up.vector(normBiasName(name)));
    return {};
  };
  EWGPU_ASSIGN(m->embed, up.matrix({{names.embed, (uint32_t)c.vocab}}, H));
  if (!names.lm_head.empty())
    EWGPU_ASSIGN(m->lm_head, up.matrix({{names.lm_head, (uint32_t)c.vocab}}, H,
                                       names.lm_head_bias ? names.lm_head + ".bias" : ""));
  EWGPU_TRY(norm(names.final_norm, m->final_norm, &m->final_norm_b));
  if (!names.ple_shards.empty()) {  // gemma4's per-layer embedding
    const std::vector<int> shard_layers = gemma4PleShardLayers(c);
    for (size_t s = 0; s < names.ple_shards.size(); ++s) {
      GpuMatrix shard;
      const uint32_t cols = (uint32_t)(shard_layers[s] * c.ple_dim);
      EWGPU_ASSIGN(shard, up.matrix({{names.ple_shards[s], (uint32_t)c.ple_vocab}}, cols));
      m->ple_shards.push_back(std::move(shard));
    }
    EWGPU_ASSIGN(m->ple_projection, up.matrix({{names.ple_projection, (uint32_t)(c.n_layers * c.ple_dim)}}, H));
    EWGPU_ASSIGN(m->ple_projection_norm, up.vector(names.ple_projection_norm));
  }
  const bool gated = c.mlp == MlpKind::kSwiGlu || c.mlp == MlpKind::kGeGlu;
  for (int i = 0; i < c.n_layers; ++i) {
    GpuLayer L;
    const std::string p = "model.layers." + std::to_string(i) + ".";
    const LayerNames n = layerNames(c, i);
    L.full_attention = c.isFullAttention(i);
    const uint32_t D = c.headDimOf(i), I = c.intermediateOf(i);
    EWGPU_TRY(norm(n.input_norm, L.input_norm, &L.input_norm_b));
    EWGPU_TRY(norm(n.ffn_norm, L.post_norm, &L.post_norm_b));
    EWGPU_TRY(norm(n.post_attn_norm, L.attn_out_norm, nullptr));
    EWGPU_TRY(norm(n.post_ffn_norm, L.mlp_out_norm, nullptr));
    if (L.full_attention) {
      uint32_t q_rows = (c.arch == Arch::kQwen3_5 ? 2 : 1) * c.n_heads * D, kv_rows = (uint32_t)c.kvHeadsOf(i) * D;
      std::vector<Part> parts;
      if (n.qkv.size() == 1) parts = {{n.qkv[0], q_rows + 2 * kv_rows}};
      else if (c.isKvShared(i)) parts = {{n.qkv[0], q_rows}};  // gemma4: k/v come from the source layer's cache
      else parts = {{n.qkv[0], q_rows}, {n.qkv[1], kv_rows}, {n.qkv[2], kv_rows}};
      EWGPU_ASSIGN(L.qkv, up.matrix(parts, H, n.qkv_bias && n.qkv.size() == 1 ? n.qkv[0] + ".bias" : ""));
      EWGPU_ASSIGN(L.o, up.matrix({{n.o, H}}, (uint32_t)c.n_heads * D, n.o_bias ? n.o + ".bias" : ""));
      std::vector<float> qk(2 * D, 1.0f);
      if (c.qk_norm) {
        auto qn = loadVectorF32(folder, n.q_norm);
        auto kn = loadVectorF32(folder, n.k_norm);
        if (!qn) return std::move(qn).error();
        if (!kn) return std::move(kn).error();
        std::memcpy(qk.data(), qn->data(), D * 4);
        std::memcpy(qk.data() + D, kn->data(), D * 4);
      }
      EWGPU_ASSIGN(L.qk_norm, up.floats(qk, n.o + ".qk_norm"));
      if (c.qk_norm_full) {
        auto qn = loadVectorF32(folder, n.q_norm);
        auto kn = loadVectorF32(folder, n.k_norm);
        if (!qn) return std::move(qn).error();
        if (!kn) return std::move(kn).error();
        std::vector<float> both = std::move(*qn);
        both.insert(both.end(), kn->begin(), kn->end());
        EWGPU_ASSIGN(L.qk_norm_full, up.floats(both, n.o + ".qk_norm_full"));
      }
    } else {
      const std::string la = p + "linear_attn.";
      const uint32_t nv = c.lin_v_heads, vd = c.lin_v_dim;
      EWGPU_ASSIGN(L.in_proj, up.matrix({{la + "in_proj_qkv", (uint32_t)c.linearConvDim()},
                                         {la + "in_proj_z", nv * vd},
                                         {la + "in_proj_b", nv},
                                         {la + "in_proj_a", nv}},
                                        H));
      EWGPU_ASSIGN(L.out_proj, up.matrix({{la + "out_proj", H}}, nv * vd));
      EWGPU_ASSIGN(L.conv_w, up.vector(la + "conv1d_weight"));
      EWGPU_ASSIGN(L.a_log, up.vector(la + "A_log"));
      EWGPU_ASSIGN(L.dt_bias, up.vector(la + "dt_bias"));
      EWGPU_ASSIGN(L.gdn_norm, up.vector(la + "norm.weight"));
    }
    EWGPU_ASSIGN(L.gate_up, up.matrix({{n.up, (gated ? 2 : 1) * I}}, H, n.up_bias ? n.up + ".bias" : ""));
    EWGPU_ASSIGN(L.down, up.matrix({{n.down, H}}, I, n.down_bias ? n.down + ".bias" : ""));
    if (!n.ple_gate.empty()) {
      EWGPU_ASSIGN(L.ple_gate, up.matrix({{n.ple_gate, (uint32_t)c.ple_dim}}, H));
      EWGPU_ASSIGN(L.ple_proj, up.matrix({{n.ple_proj, H}}, (uint32_t)c.ple_dim));
      EWGPU_ASSIGN(L.ple_norm, up.vector(n.ple_norm));
    }
    if (!n.layer_scalar.empty()) EWGPU_ASSIGN(L.layer_scalar, up.vector(n.layer_scalar));
    m->layers.push_back(std::move(L));
  }
  m->weight_bytes = up.bytes();
  ahead.stop();
  if (ring) {
    uint32_t threads = opts.copy_threads;
    if (const char* e = std::getenv("EWGPU_UPLOAD_THREADS")) threads = (uint32_t)std::max(1, std::atoi(e));
    if (!threads) threads = std::clamp<uint32_t>(std::thread::hardware_concurrency(), 1, 4);
    m->copies = std::make_unique<WeightCopies>(ctx, std::move(up.ranges()), threads);
    if (opts.stats) opts.stats->copy_threads = m->copies->threads();
    if (!opts.overlap) {
      double copy_ms = 0;
      EWGPU_TRY(m->finishUpload(&copy_ms));
      up.write_ms += copy_ms;
    }
  }
  const auto t_wait = Clock::now();
  EWGPU_TRY(ctx.finish());  // uploads done, errors (out of memory) surfaced here
  if (opts.stats) {
    opts.stats->read_ms = read_ahead ? ahead.ms() : up.read_ms;
    opts.stats->read_bytes = read_ahead ? ahead.bytes() : 0;
    opts.stats->alloc_ms = up.alloc_ms;
    opts.stats->write_ms = up.write_ms;
    opts.stats->wait_ms = msSince(t_wait);
  }
  return m;
}

}  // namespace ewgpu
