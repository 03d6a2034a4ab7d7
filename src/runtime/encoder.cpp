// The GPU encoder (see encoder.h): weight upload, op construction, packed-batch forward and readback.
#include "runtime/encoder.h"

#include <cmath>
#include <cstring>

#include "gpu/recorder.h"

namespace ewgpu {

using kernels::Epilogue;
using kernels::GemmOp;
using LayerNormOp = kernels::RmsNormOp;  // with Mode{.layer = true, .bias}

struct Encoder::Weights {
  struct Layer {
    GpuMatrix qkv, o, fc1, fc2;               // [3H, H], [H, H], [I, H], [H, I], each with its bias
    gpu::Buffer ln1_w, ln1_b, ln2_w, ln2_b;   // [H]: attention.output.LayerNorm, output.LayerNorm
  };
  gpu::Buffer word, pos, type;                // [V, H], [P, H], [types, H] f32
  gpu::Buffer emb_ln_w, emb_ln_b;             // [H]
  std::vector<Layer> layers;
};

struct Encoder::Ops {
  struct Layer {
    GemmOp qkv, o, fc1, fc2;
    LayerNormOp ln1, ln2;
  };
  kernels::EncoderEmbedOp embed;
  LayerNormOp emb_ln;
  std::vector<kernels::EncoderAttentionOp> attention;  // one per layer (same shape; bind groups are per buffer set)
  std::vector<Layer> layers;
};

namespace {

// q0f32 weights as plain f32 buffers (GpuMatrix with one chunk, the kQ0F32 layout GemmOp reads).
class EncoderUploader {
 public:
  EncoderUploader(gpu::Context& ctx, const ModelFolder& f) : ctx_(ctx), f_(f) {}

  Result<gpu::Buffer> floats(const std::vector<float>& v, const std::string& label) {
    const uint64_t bytes = (uint64_t)v.size() * 4;
    if (bytes > ctx_.limits().maxStorageBufferBindingSize)
      return makeError(ErrorCode::kOutOfMemory, label + " is larger than one storage binding",
                       {{"tensor", label}, {"bytes", bytes}, {"limit", ctx_.limits().maxStorageBufferBindingSize}});
    auto b = ctx_.createBuffer(bytes, gpu::BufferKind::kStorage, label);
    if (!b) return std::move(b).error();
    ctx_.write(*b, 0, v.data(), bytes);
    bytes_ += bytes;
    return b;
  }
  Result<gpu::Buffer> matrixBuffer(const std::string& module, int rows, int cols) {
    auto m = loadMatrixF32(f_, module, rows, cols);
    if (!m) return std::move(m).error();
    return floats(*m, module);
  }
  Result<gpu::Buffer> vector(const std::string& name) {
    auto v = loadVectorF32(f_, name);
    if (!v) return std::move(v).error();
    return floats(*v, name);
  }
  Result<GpuMatrix> linear(const std::string& module, int rows, int cols) {
    GpuMatrix m;
    m.format = kernels::WeightFormat::kQ0F32;
    m.n = (uint32_t)rows;
    m.k = (uint32_t)cols;
    auto w = matrixBuffer(module, rows, cols);
    if (!w) return std::move(w).error();
    m.w.push_back(std::move(*w));
    m.rows.push_back((uint32_t)rows);
    auto b = vector(module + ".bias");
    if (!b) return std::move(b).error();
    m.bias = std::move(*b);
    return m;
  }
  uint64_t bytes() const { return bytes_; }

 private:
  gpu::Context& ctx_;
  const ModelFolder& f_;
  uint64_t bytes_ = 0;
};

}  // namespace

Encoder::Encoder(gpu::Context& ctx) : ctx_(ctx) {}
Encoder::~Encoder() = default;

Result<std::unique_ptr<Encoder>> Encoder::create(gpu::Context& ctx, const ModelFolder& folder, EncoderOptions o) {
  const ModelConfig& c = folder.config();
  if (c.arch != Arch::kBert) return makeError(ErrorCode::kBadRequest, "Encoder needs an embedding (bert) model");
  std::unique_ptr<Encoder> e(new Encoder(ctx));
  e->config_ = c;
  const uint32_t H = c.hidden, I = c.intermediate, T = o.max_tokens ? o.max_tokens : (uint32_t)c.context_window;
  e->max_tokens_ = T;

  // Weights.
  EncoderUploader up(ctx, folder);
  e->w_ = std::make_unique<Weights>();
  Weights& w = *e->w_;
  EWGPU_ASSIGN(w.word, up.matrixBuffer("embeddings.word_embeddings", c.vocab, H));
  EWGPU_ASSIGN(w.pos, up.matrixBuffer("embeddings.position_embeddings", c.context_window, H));
  EWGPU_ASSIGN(w.type, up.matrixBuffer("embeddings.token_type_embeddings", c.type_vocab, H));
  EWGPU_ASSIGN(w.emb_ln_w, up.vector("embeddings.LayerNorm.weight"));
  EWGPU_ASSIGN(w.emb_ln_b, up.vector("embeddings.LayerNorm.bias"));
  for (int i = 0; i < c.n_layers; ++i) {
    const std::string p = "encoder.layer." + std::to_string(i) + ".";
    Weights::Layer L;
    EWGPU_ASSIGN(L.qkv, up.linear(p + "attention.self.qkv", 3 * H, H));
    EWGPU_ASSIGN(L.o, up.linear(p + "attention.output.dense", H, H));
    EWGPU_ASSIGN(L.ln1_w, up.vector(p + "attention.output.LayerNorm.weight"));
    EWGPU_ASSIGN(L.ln1_b, up.vector(p + "attention.output.LayerNorm.bias"));
    EWGPU_ASSIGN(L.fc1, up.linear(p + "intermediate.dense", I, H));
    EWGPU_ASSIGN(L.fc2, up.linear(p + "output.dense", H, I));
    EWGPU_ASSIGN(L.ln2_w, up.vector(p + "output.LayerNorm.weight"));
    EWGPU_ASSIGN(L.ln2_b, up.vector(p + "output.LayerNorm.bias"));
    w.layers.push_back(std::move(L));
  }
  e->weight_bytes_ = up.bytes();

  // Activations.
  auto buffer = [&](uint64_t bytes, const char* label) { return ctx.createBuffer(bytes, gpu::BufferKind::kStorage, label); };
  EWGPU_ASSIGN(e->toks_, buffer((uint64_t)T * 16, "encoder.toks"));
  EWGPU_ASSIGN(e->meta_, buffer(16, "encoder.meta"));
  EWGPU_ASSIGN(e->x_, buffer((uint64_t)T * H * 4, "encoder.x"));
  EWGPU_ASSIGN(e->a_, buffer((uint64_t)T * H * 4, "encoder.a"));
  EWGPU_ASSIGN(e->qkv_, buffer((uint64_t)T * 3 * H * 4, "encoder.qkv"));
  EWGPU_ASSIGN(e->att_, buffer((uint64_t)T * H * 4, "encoder.att"));
  EWGPU_ASSIGN(e->mid_, buffer((uint64_t)T * I * 4, "encoder.mid"));
  EWGPU_ASSIGN(e->readback_, gpu::Readback::create(ctx, (uint64_t)T * H * 4, "encoder.cls"));

  // Ops (pipelines compile here, never per batch).
  e->ops_ = std::make_unique<Ops>();
  Ops& ops = *e->ops_;
  const float eps = c.layer_norm_eps;
  EWGPU_ASSIGN(ops.embed, kernels::EncoderEmbedOp::create(ctx, e->toks_, w.word, w.pos, w.type, e->a_, e->meta_, H, T));
  auto ln = [&](const gpu::Buffer& x, const gpu::Buffer& weight, const gpu::Buffer& bias, const gpu::Buffer& out) {
    return LayerNormOp::create(ctx, x, weight, out, e->meta_, H, eps, T, LayerNormOp::Mode{true, &bias, false});
  };
  EWGPU_ASSIGN(ops.emb_ln, ln(e->a_, w.emb_ln_w, w.emb_ln_b, e->x_));
  for (const Weights::Layer& L : w.layers) {
    Ops::Layer O;
    EWGPU_ASSIGN(O.qkv, GemmOp::create(ctx, L.qkv.view(), e->x_, e->qkv_, e->meta_, Epilogue::kStore, T));
    auto att = kernels::EncoderAttentionOp::create(ctx, e->toks_, e->qkv_, e->att_, e->meta_, c.n_heads, c.head_dim, T);
    if (!att) return std::move(att).error();
    ops.attention.push_back(std::move(*att));
    EWGPU_ASSIGN(O.o, GemmOp::create(ctx, L.o.view(), e->att_, e->x_, e->meta_, Epilogue::kResidualAdd, T));
    EWGPU_ASSIGN(O.ln1, ln(e->x_, L.ln1_w, L.ln1_b, e->a_));
    EWGPU_ASSIGN(O.fc1, GemmOp::create(ctx, L.fc1.view(), e->a_, e->mid_, e->meta_, Epilogue::kGelu, T));
    EWGPU_ASSIGN(O.fc2, GemmOp::create(ctx, L.fc2.view(), e->mid_, e->a_, e->meta_, Epilogue::kResidualAdd, T));
    EWGPU_ASSIGN(O.ln2, ln(e->a_, L.ln2_w, L.ln2_b, e->x_));
    ops.layers.push_back(std::move(O));
  }
  EWGPU_TRY(ctx.finish());
  return e;
}

void Encoder::recordForward(gpu::Recorder& rec, uint32_t T) const {
  const Ops& ops = *ops_;
  ops.embed.record(rec, T);
  ops.emb_ln.record(rec, T);  // a -> x
  for (size_t i = 0; i < ops.layers.size(); ++i) {
    const Ops::Layer& O = ops.layers[i];
    O.qkv.record(rec, T);              // x -> qkv
    ops.attention[i].record(rec, T);   // qkv -> att
    O.o.record(rec, T);                // x += att Wo^T + bo
    O.ln1.record(rec, T);              // x -> a
    O.fc1.record(rec, T);              // a -> mid = gelu(a W1^T + b1)
    O.fc2.record(rec, T);              // a += mid W2^T + b2
    O.ln2.record(rec, T);              // a -> x
  }
}

Status Encoder::submit(std::span<const std::vector<int32_t>> seqs) {
  if (readback_.pending()) return makeError(ErrorCode::kInternal, "encoder: a batch is already in flight");
  if (seqs.empty()) return makeError(ErrorCode::kBadRequest, "encoder: no sequences", {{"field", "input"}});
  std::vector<uint32_t> toks;
  uint32_t T = 0;
  for (size_t s = 0; s < seqs.size(); ++s) {
    const auto& q = seqs[s];
    if (q.empty() || q.size() > maxSequence())
      return makeError(ErrorCode::kBadRequest, "encoder: a sequence must hold 1.." + std::to_string(maxSequence()) + " tokens",
                       {{"field", "input"}, {"index", s}, {"tokens", q.size()}});
    if (T + q.size() > max_tokens_)
      return makeError(ErrorCode::kBadRequest, "encoder: the batch exceeds " + std::to_string(max_tokens_) + " tokens",
                       {{"field", "input"}});
    for (size_t i = 0; i < q.size(); ++i) {
      if (q[i] < 0 || q[i] >= config_.vocab)
        return makeError(ErrorCode::kBadRequest, "encoder: token id outside the vocabulary",
                         {{"field", "input"}, {"index", s}, {"id", q[i]}, {"vocab_size", config_.vocab}});
      toks.insert(toks.end(), {(uint32_t)q[i], (uint32_t)i, T, (uint32_t)q.size()});
    }
    T += (uint32_t)q.size();
  }
  const uint32_t meta[4] = {T, 0, 0, 0};
  ctx_.write(meta_, 0, meta, sizeof meta);
  ctx_.write(toks_, 0, toks.data(), toks.size() * 4);
  gpu::Recorder rec(ctx_);
  recordForward(rec, T);
  const uint64_t row = (uint64_t)config_.hidden * 4;
  uint64_t start = 0;
  for (size_t s = 0; s < seqs.size(); ++s) {
    readback_.record(rec, x_, start * row, row, s * row);
    start += seqs[s].size();
  }
  EWGPU_TRY(rec.submit());
  readback_.requestMap(ctx_);
  submitted_ = (uint32_t)seqs.size();
  return {};
}

Result<std::vector<std::vector<float>>> Encoder::collect() {
  const uint32_t n = submitted_;
  submitted_ = 0;  // collected, read or failed: the next submit starts afresh
  EWGPU_TRY(readback_.status());
  const size_t H = config_.hidden;
  std::vector<std::vector<float>> out(n, std::vector<float>(H));
  std::span<const uint8_t> d = readback_.data();
  for (size_t s = 0; s < n; ++s) std::memcpy(out[s].data(), d.data() + s * H * 4, H * 4);
  readback_.unmap();
  return out;
}

Result<std::vector<std::vector<float>>> Encoder::run(std::span<const std::vector<int32_t>> seqs, bool normalize) {
  EncodeJob job(std::vector<std::vector<int32_t>>(seqs.begin(), seqs.end()), normalize);
  while (!job.advance(*this)) EWGPU_TRY(readback_.wait(ctx_));
  return job.take();
}

bool EncodeJob::advance(Encoder& e) {
  if (finished_) return true;
  auto fail = [this](Error err) {
    error_ = std::move(err);
    finished_ = true;
    return true;
  };
  if (e.submitted()) {
    if (e.pending()) return false;  // the readback has not landed
    auto part = e.collect();
    if (!part) return fail(std::move(part).error());
    for (auto& v : *part) out_.push_back(std::move(v));
  }
  if (next_ < seqs_.size()) {  // the next packed batch: as many whole sequences as fit (always at least one)
    size_t end = next_, tokens = 0;
    while (end < seqs_.size() && (end == next_ || tokens + seqs_[end].size() <= e.maxTokens()))
      tokens += seqs_[end++].size();
    Status st = e.submit(std::span<const std::vector<int32_t>>(seqs_).subspan(next_, end - next_));
    if (!st) return fail(std::move(st).error());
    next_ = end;
    return false;
  }
  if (normalize_)
    for (auto& v : out_) {
      double ss = 0;
      for (float x : v) ss += (double)x * x;
      const double n = std::sqrt(ss);
      if (n > 1e-12)
        for (float& x : v) x = (float)(x / n);
    }
  finished_ = true;
  return true;
}

Result<std::vector<std::vector<float>>> EncodeJob::take() {
  if (!finished_) return makeError(ErrorCode::kInternal, "encoder: the job has not finished");
  if (error_) return *error_;
  return std::move(out_);
}

Result<std::vector<float>> Encoder::hiddenStates(std::span<const int32_t> tokens) {
  if (readback_.pending()) return makeError(ErrorCode::kInternal, "encoder: a batch is already in flight");
  // submit()'s checks for one sequence, then the whole x read back instead of the [CLS] row.
  std::vector<uint32_t> toks;
  const uint32_t n = (uint32_t)tokens.size();
  if (n == 0 || n > std::min(maxSequence(), max_tokens_))
    return makeError(ErrorCode::kBadRequest, "encoder: bad sequence length", {{"field", "input"}});
  for (uint32_t i = 0; i < n; ++i) {
    if (tokens[i] < 0 || tokens[i] >= config_.vocab)
      return makeError(ErrorCode::kBadRequest, "encoder: token id outside the vocabulary", {{"field", "input"}});
    toks.insert(toks.end(), {(uint32_t)tokens[i], i, 0u, n});
  }
  const uint32_t meta[4] = {n, 0, 0, 0};
  ctx_.write(meta_, 0, meta, sizeof meta);
  ctx_.write(toks_, 0, toks.data(), toks.size() * 4);
  gpu::Recorder rec(ctx_);
  recordForward(rec, n);
  const uint64_t bytes = (uint64_t)n * config_.hidden * 4;
  readback_.record(rec, x_, 0, bytes, 0);
  EWGPU_TRY(rec.submit());
  readback_.requestMap(ctx_);
  EWGPU_TRY(readback_.wait(ctx_));
  std::vector<float> out(bytes / 4);
  std::memcpy(out.data(), readback_.data().data(), bytes);
  readback_.unmap();
  return out;
}

}  // namespace ewgpu
