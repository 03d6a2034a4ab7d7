// Host side of the encoder (BERT) kernels: EncoderEmbedOp (encoder_embed.wgsl: word + position + token-type rows of
// a packed batch) and EncoderAttentionOp (encoder_attention.wgsl: bidirectional attention within each packed
// sequence). create() checks sizes, compiles and binds once; record(tokens) only dispatches. The token count T
// reaches the GPU through meta[0]; the per-token table `toks` [max_tokens, 4] u32 holds (id, position, sequence
// start, sequence length) and is written by the host before each submission.
#pragma once

#include <cstdint>

#include "base/error.h"
#include "gpu/context.h"
#include "gpu/recorder.h"

namespace ewgpu::kernels {

class EncoderEmbedOp {
 public:
  // word [V, H], pos [P, H], ttype [>=1, H] f32; out [max_tokens, H] f32; toks [max_tokens, 4] u32; meta[0] = T.
  static Result<EncoderEmbedOp> create(gpu::Context& ctx, const gpu::Buffer& toks, const gpu::Buffer& word,
                                       const gpu::Buffer& pos, const gpu::Buffer& ttype, const gpu::Buffer& out,
                                       const gpu::Buffer& meta, uint32_t H, uint32_t max_tokens);
  void record(gpu::Recorder& rec, uint32_t tokens) const;

 private:
  const gpu::Kernel* kernel_ = nullptr;
  gpu::BindGroup bind_group_;
  uint32_t max_tokens_ = 0;
};

class EncoderAttentionOp {
 public:
  // qkv [max_tokens, 3 * heads * head_dim] f32 (rows q | k | v); out [max_tokens, heads * head_dim] f32.
  static Result<EncoderAttentionOp> create(gpu::Context& ctx, const gpu::Buffer& toks, const gpu::Buffer& qkv,
                                           const gpu::Buffer& out, const gpu::Buffer& meta, uint32_t heads,
                                           uint32_t head_dim, uint32_t max_tokens);
  void record(gpu::Recorder& rec, uint32_t tokens) const;

 private:
  const gpu::Kernel* kernel_ = nullptr;
  gpu::BindGroup bind_group_;
  uint32_t max_tokens_ = 0, heads_ = 0;
};

}  // namespace ewgpu::kernels
