// Snippet (//#include gemm_epilogue): the prefill GEMMs' output of one token's 4 sums (gemm.wgsl, gemm_q8_tile.wgsl),
// from the including kernel's EPI, N, HAS_BIAS, ROW_OFFSET and Y_STRIDE overrides and its y and bias bindings, with
// activation.wgsl's epilogues. Plain (EPI 0, 1, 3, 4): the sums of weight rows n0 .. n0 + 3 of this buffer, bias
// bias[ROW_OFFSET + n]. Gated (EPI 2, 5): gate(o), gate(o + 1), up(o), up(o + 1) give outputs o and o + 1, bias
// bias[r] for weight row r. Rows and outputs past the matrix are skipped.

fn writeOut(t: u32, col: u32, v: f32) {
  let idx = t * Y_STRIDE + ROW_OFFSET + col;
  if (EPI == 1u) {
    y[idx] = y[idx] + v;
  } else {
    y[idx] = v;
  }
}

fn storeSums(t: u32, v: vec4<f32>, n0: u32, o: u32) {
  if (epiGated(EPI)) {
    let h = N / 2u;
    for (var j = 0u; j < 2u; j++) {
      if (o + j < h) {
        var gate = v[j];
        var up = v[j + 2u];
        if (HAS_BIAS) {
          gate += bias[o + j];
          up += bias[h + o + j];
        }
        writeOut(t, o + j, actGate(EPI, gate) * up);
      }
    }
  } else {
    for (var j = 0u; j < 4u; j++) {
      let n = n0 + j;
      if (n < N) {
        var r = v[j];
        if (HAS_BIAS) { r += bias[ROW_OFFSET + n]; }
        writeOut(t, n, actPlain(EPI, r));
      }
    }
  }
}
