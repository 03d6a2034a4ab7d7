// Snippet (//#include attention_gate): Qwen3.5's output gate. o (dims 4c .. 4c+3 of query head h, token i) times
// sigmoid of the gate rows, which sit after each head's query rows in the projection output `qkv`
// ([tokens, 2·HQ·D + 2·HKV·D], per head [query D | gate D]).
fn applyGate(o: vec4<f32>, i: u32, h: u32, c: u32) -> vec4<f32> {
  let width = 2u * HQ * D + 2u * HKV * D;
  let gi = i * width + h * 2u * D + D + 4u * c;
  let gt = vec4<f32>(qkv[gi], qkv[gi + 1u], qkv[gi + 2u], qkv[gi + 3u]);
  return o / (vec4<f32>(1.0) + exp(-gt));
}
