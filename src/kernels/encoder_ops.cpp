// EncoderEmbedOp / EncoderAttentionOp (see encoder_ops.h).
#include "kernels/encoder_ops.h"

#include <cmath>

namespace ewgpu::kernels {

Result<EncoderEmbedOp> EncoderEmbedOp::create(gpu::Context& ctx, const gpu::Buffer& toks, const gpu::Buffer& word,
                                              const gpu::Buffer& pos, const gpu::Buffer& ttype, const gpu::Buffer& out,
                                              const gpu::Buffer& meta, uint32_t H, uint32_t max_tokens) {
  const uint64_t row = (uint64_t)H * 4;
  if (H == 0 || toks.size() < (uint64_t)max_tokens * 16 || out.size() < max_tokens * row || word.size() < row ||
      pos.size() < row || ttype.size() < row || meta.size() < 4)
    return makeError(ErrorCode::kBadRequest, "encoder_embed: buffer too small",
                     {{"H", H}, {"max_tokens", max_tokens}, {"out", out.size()}, {"toks", toks.size()}});
  if (max_tokens > ctx.limits().maxComputeWorkgroupsPerDimension)
    return makeError(ErrorCode::kBadRequest, "encoder_embed: max_tokens too large for one dispatch");
  EncoderEmbedOp op;
  auto k = ctx.kernel("encoder_embed", {{"H", H}});
  if (!k) return std::move(k).error();
  op.kernel_ = *k;
  auto bg = ctx.bindGroup(*op.kernel_, {{&toks}, {&word}, {&pos}, {&ttype}, {&out}, {&meta}});
  if (!bg) return std::move(bg).error();
  op.bind_group_ = std::move(*bg);
  op.max_tokens_ = max_tokens;
  return op;
}

void EncoderEmbedOp::record(gpu::Recorder& rec, uint32_t tokens) const {
  tokens = std::min(tokens, max_tokens_);
  if (tokens > 0) rec.dispatch(*kernel_, bind_group_, tokens);
}

Result<EncoderAttentionOp> EncoderAttentionOp::create(gpu::Context& ctx, const gpu::Buffer& toks,
                                                      const gpu::Buffer& qkv, const gpu::Buffer& out,
                                                      const gpu::Buffer& meta, uint32_t heads, uint32_t head_dim,
                                                      uint32_t max_tokens) {
  const uint64_t W = (uint64_t)heads * head_dim;
  if (heads == 0 || head_dim == 0 || head_dim > 256)
    return makeError(ErrorCode::kBadRequest, "encoder_attention: head_dim must be 1..256", {{"head_dim", head_dim}});
  if (toks.size() < (uint64_t)max_tokens * 16 || qkv.size() < max_tokens * 3 * W * 4 || out.size() < max_tokens * W * 4 ||
      meta.size() < 4)
    return makeError(ErrorCode::kBadRequest, "encoder_attention: buffer too small",
                     {{"qkv", qkv.size()}, {"out", out.size()}, {"max_tokens", max_tokens}});
  if ((uint64_t)max_tokens * heads > 64ull * ctx.limits().maxComputeWorkgroupsPerDimension)
    return makeError(ErrorCode::kBadRequest, "encoder_attention: too many tokens x heads for one dispatch");
  EncoderAttentionOp op;
  auto k = ctx.kernel("encoder_attention",
                      {{"D", head_dim}, {"HQ", heads}, {"SCALE", (float)(1.0 / std::sqrt((double)head_dim))}});
  if (!k) return std::move(k).error();
  op.kernel_ = *k;
  auto bg = ctx.bindGroup(*op.kernel_, {{&toks}, {&qkv}, {&out}, {&meta}});
  if (!bg) return std::move(bg).error();
  op.bind_group_ = std::move(*bg);
  op.max_tokens_ = max_tokens;
  op.heads_ = heads;
  return op;
}

void EncoderAttentionOp::record(gpu::Recorder& rec, uint32_t tokens) const {
  tokens = std::min(tokens, max_tokens_);
  if (tokens > 0) rec.dispatch(*kernel_, bind_group_, (tokens * heads_ + 63) / 64);
}

}  // namespace ewgpu::kernels
