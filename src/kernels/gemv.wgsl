// Decode GEMV: y[b, n] = epilogue( Σ_k W[n, k] · x̂[b, k] ) for BATCH activation rows (one per sequence), every
// MLC weight format (QFMT, see docs/kernels.md), with optional fused prologue/epilogue so one dispatch covers
// "RMSNorm → projection" or "projection → residual add" or "gate/up projection → SwiGLU":
//   NORM:  x̂ = x · rsqrt(mean(x²) + EPS) · norm_w   (each workgroup recomputes the row's RMS: x is small)
//   EPI 0: y = acc (+ bias)   EPI 1: y += acc (+ bias)   EPI 2 / 5: rows r and r + N/2 → y[r] = silu(g) · u /
//   gelu_tanh(g) · u   EPI 3 / 4: y = gelu(acc + bias), erf / tanh (activation.wgsl)
// TPR threads share a row. For q4 formats consecutive lanes take consecutive u32 words (8 weights each): one load
// instruction of a thread group reads 4·TPR contiguous weight bytes and 32·TPR contiguous x bytes (lanes reading
// 128-byte x spans, one group each, touched 32 cache lines per instruction and held the kernel at ~20% of the
// H200's bandwidth). Other formats take a 32-element group per lane. The row's partial sums are reduced with
// subgroup shuffles when SG_REDUCE (TPR ≤ subgroup size) or through workgroup memory.
// Grid: ceil(rows / (WG / TPR / KSPLIT · RPT)) workgroups, folded into x/y dimensions when above 65535.
//#enable subgroups
//#include activation
//#include q4_group
//#include q8_quarter

override QFMT: u32 = 0u;        // 0 q4f16_1, 1 q4f32_1, 2 q0f16, 3 q0f32, 4 q3f16_1
override N: u32 = 1u;           // weight rows in this buffer (chunk)
override K: u32 = 32u;          // input features
override BATCH: u32 = 1u;       // activation rows, ≤ 8
override EPI: u32 = 0u;
override NORM: bool = false;
override HAS_BIAS: bool = false;
override EPS: f32 = 1e-6;
override ROW_OFFSET: u32 = 0u;  // first output column written by this chunk
override Y_STRIDE: u32 = 1u;    // floats per batch row of y
override X_STRIDE: u32 = K;     // floats per batch row of x (multiple of 4)
override TPR: u32 = 32u;        // threads per row (power of two)
override WG: u32 = 256u;
override SG_REDUCE: bool = false;
override RPT: u32 = 1u;         // rows per thread group: the x values of a group are loaded once for RPT rows
override KSPLIT: u32 = 1u;      // thread groups (of TPR lanes) sharing the same rows, each over 1/KSPLIT of K
// q4, BATCH 1: x · norm_w staged in workgroup memory once per workgroup (a padding vec4 after every 8 keeps a
// lane-per-group read free of bank conflicts) and lanes take a whole 32-weight group (16-byte weight loads).
override XSH: bool = false;
override XSH_LEN: u32 = 1u;     // vec4s of xsh: K / 4 + K / 32 with XSH
// q4, BATCH 1, 4 or 8 rows per thread group: x̂ = x · norm_w quantized to int8 in workgroup memory, one scale per
// 32-element group (symmetric: max |x̂| / 127), and each 8-weight word meets it in two dot4I8Packed (the codes'
// low and high nibbles against x packed in that order). The f32 decode costs ~25 lane instructions per 8 weights
// and bounds the GEMV on the H200 (with the decode removed lm_head ran at 3.9 instead of 2.1 TB/s); an int8 digit
// costs ~3 (two masks, two dot products). Q8_DIGITS 2 adds a second digit per element, the rounding residual × 254,
// so x̂ is held to ~1/64516 of its group's max (16-bit fixed point): one digit alone put a tiny Qwen3.5's logits 9%
// of max |logit| away from transformers (its GDN layers amplify the rounding), two keep them within 2.1e-4.
override Q8: bool = false;
override Q8_GROUPS: u32 = 1u;   // K / 32 with Q8
override QSG: bool = false;     // Q8: x̂ quantized a quarter group per thread with shuffles (subgroups of ≥ 4)
override Q8_DIGITS: u32 = 2u;   // 1 or 2
// Q8 fast path with RPT 4: the weight words and scales of each thread's first group are loaded before the
// prologue, so their memory latency overlaps x's load, its quantization and the prologue's barriers (a load after
// a barrier cannot be moved above it).
override PREFETCH: bool = true;

const MAXB: u32 = 8u;
const MAXACC: u32 = 32u;        // 2 (SwiGLU halves) × RPT × BATCH ≤ 32

@group(0) @binding(0) var<storage, read> w: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> s: array<u32>;
@group(0) @binding(2) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
@group(0) @binding(4) var<storage, read> norm_w: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> bias: array<f32>;

//#if L2NEXT
// The next projection's weights, pulled into the L2 by L2_WG workgroups appended to the grid (ids from L2_MAIN on)
// while the others compute this one: a one-row decode step is a chain of small dependent dispatches, each waiting on
// its first weight loads from memory, and the next one's then come from the L2. One 16-byte load per 32-byte sector
// (the L2's fill unit), 8 in flight per thread; the loaded words go to y's last 256 floats (from L2_SINK), which
// hold no output and which nothing reads, so the loads cannot be dropped. Two bindings more: 8 in all.
override L2_MAIN: u32 = 1u;     // workgroups of this projection (the grid's first ones)
override L2_WG: u32 = 0u;       // workgroups that touch the next one's weights
override L2_W: u32 = 0u;        // vec4s of l2w (its codes) to touch
override L2_S: u32 = 0u;        // vec4s of l2s (its scales) to touch
override L2_SINK: u32 = 0u;     // first of y's 256 spare floats
@group(0) @binding(6) var<storage, read> l2w: array<vec4<u32>>;
@group(0) @binding(7) var<storage, read> l2s: array<vec4<u32>>;

fn touchSectors(t: u32, n: u32, words: u32, scales: bool) -> vec4<u32> {
  var a = vec4<u32>(0u);
  for (var v0 = 2u * t; v0 < words; v0 += 16u * n) {
    var r: array<vec4<u32>, 8>;
    for (var j = 0u; j < 8u; j++) {
      let v = min(v0 + 2u * n * j, words - 1u);
      if (scales) { r[j] = l2s[v]; } else { r[j] = l2w[v]; }
    }
    for (var j = 0u; j < 8u; j++) { a ^= r[j]; }
  }
  return a;
}

fn touchNext(t: u32) {
  let n = L2_WG * WG;
  let a = touchSectors(t, n, L2_W, false) ^ touchSectors(t, n, L2_S, true);
  y[L2_SINK + t % 256u] = bitcast<f32>(a.x ^ a.y ^ a.z ^ a.w);
}
//#endif

var<workgroup> red: array<f32, WG>;
var<workgroup> rinv: array<f32, MAXB>;
var<workgroup> red2: array<f32, 16>;
var<workgroup> part: array<f32, (WG / TPR) * MAXACC>;  // per thread group partial sums (KSPLIT > 1)
var<workgroup> xsh: array<vec4<f32>, XSH_LEN>;
// Group g's digit e: words 2g, 2g+1 of xq + e · 2 · Q8_GROUPS (32 int8 in nibble order) and zero point
// xz[g + e · Q8_GROUPS] = 7 · Σ of its values; xd[g] is the scale of digit 0 (digit 1's is xd[g] / 254).
var<workgroup> xq: array<vec4<u32>, 2u * Q8_GROUPS * Q8_DIGITS>;
var<workgroup> xd: array<f32, Q8_GROUPS>;
var<workgroup> xz: array<i32, Q8_GROUPS * Q8_DIGITS>;

fn groupSize() -> u32 { return select(32u, 40u, QFMT == 4u); }
fn groupsPerRow() -> u32 { return (K + groupSize() - 1u) / groupSize(); }

// x̂[b, 4v .. 4v+3]
fn xv(b: u32, v: u32) -> vec4<f32> {
  let xi = x[b * (X_STRIDE / 4u) + v];
  if (NORM) { return xi * rinv[b] * norm_w[v]; }
  return xi;
}

fn xs(b: u32, k: u32) -> f32 { return xv(b, k >> 2u)[k & 3u]; }

// int4 codes to f32 without int-to-float conversions: a code c · 16^j OR-ed into the mantissa of 2^23 is exactly
// 2^23 + c · 16^j as f32, and one subtraction of 2^23 + 7 · 16^j leaves (c - 7) · 16^j. `word` holds the codes of
// 8 consecutive weights, weight j at bits 4j; nibLo / nibHi return those of weights 0..3 / 4..7 in place (one shift
// per word: nibble 4 fits the mantissa as it is, 5..7 move down by 20 bits), so they are (c - 7) divided by
// prescale(0) / prescale(1), and the x values they meet carry that factor (powers of two: the products are exact).
// On the H200 this is 4% faster than f32(c) - 7 per code (Llama-3.2-1B GEMV 0.592 vs 0.617 ms per step).
const MAGIC: u32 = 0x4B000000u;
const TWO23: f32 = 8388608.0;

fn nibLo(word: u32) -> vec4<f32> {
  let c = vec4<u32>(word) & vec4<u32>(0xFu, 0xF0u, 0xF00u, 0xF000u);
  return bitcast<vec4<f32>>(c | vec4<u32>(MAGIC)) - (vec4<f32>(TWO23) + vec4<f32>(7.0, 112.0, 1792.0, 28672.0));
}

fn nibHi(word: u32) -> vec4<f32> {
  let t = word >> 20u;
  let c = vec4<u32>(word, t, t, t) & vec4<u32>(0xF0000u, 0xFu, 0xF0u, 0xF00u);
  return bitcast<vec4<f32>>(c | vec4<u32>(MAGIC)) - (vec4<f32>(TWO23) + vec4<f32>(458752.0, 7.0, 112.0, 1792.0));
}

fn prescale(half: u32) -> vec4<f32> {
  return select(vec4<f32>(1.0, 0.0625, 0.00390625, 0.000244140625),
                vec4<f32>(0.0000152587890625, 1.0, 0.0625, 0.00390625), half == 1u);
}

// One q4 word (8 weights: elements 8·wi .. 8·wi+7 of row `row`) against prescaled x̂ in two registers:
// Σ (code - 7) · x · scale.
fn dotWord(row: u32, wi: u32, xa: vec4<f32>, xb: vec4<f32>) -> f32 {
  let i = row * (K / 8u) + wi;
  let word = w[i >> 2u][i & 3u];
  return (dot(nibLo(word), xa) + dot(nibHi(word), xb)) * scaleOf(row, wi >> 2u);
}

// One q4 group (32 weights: elements 32·g .. 32·g+31 of row `row`) against x in eight registers.
fn dotGroup(row: u32, g: u32, x0: vec4<f32>, x1: vec4<f32>, x2: vec4<f32>, x3: vec4<f32>, x4: vec4<f32>,
            x5: vec4<f32>, x6: vec4<f32>, x7: vec4<f32>) -> f32 {
  let wv = w[row * groupsPerRow() + g];
  let t = dot(nibLo(wv.x), x0) + dot(nibHi(wv.x), x1) + dot(nibLo(wv.y), x2) + dot(nibHi(wv.y), x3) +
          dot(nibLo(wv.z), x4) + dot(nibHi(wv.z), x5) + dot(nibLo(wv.w), x6) + dot(nibHi(wv.w), x7);
  return t * scaleOf(row, g);
}

// Four rows (r, r+1, r+2, r+3 clamped to `last`) of one group, x from xsh.
fn rows4Group(r: u32, last: u32, g: u32) -> vec4<f32> {
  let sb = g * 9u;
  let x0 = xsh[sb];
  let x1 = xsh[sb + 1u];
  let x2 = xsh[sb + 2u];
  let x3 = xsh[sb + 3u];
  let x4 = xsh[sb + 4u];
  let x5 = xsh[sb + 5u];
  let x6 = xsh[sb + 6u];
  let x7 = xsh[sb + 7u];
  return vec4<f32>(dotGroup(min(r, last), g, x0, x1, x2, x3, x4, x5, x6, x7),
                   dotGroup(min(r + 1u, last), g, x0, x1, x2, x3, x4, x5, x6, x7),
                   dotGroup(min(r + 2u, last), g, x0, x1, x2, x3, x4, x5, x6, x7),
                   dotGroup(min(r + 3u, last), g, x0, x1, x2, x3, x4, x5, x6, x7));
}

// Quantizes group g of x̂ (BATCH 1) into xq / xd / xz; returns Σ x² over the group (for the RMS).
fn quantizeGroup(g: u32) -> f32 {
  var v: array<vec4<f32>, 8>;
  var ss = 0.0;
  var amax = 0.0;
  for (var j = 0u; j < 8u; j++) {
    let xi = x[8u * g + j];
    ss += dot(xi, xi);
    v[j] = select(xi, xi * norm_w[8u * g + j], NORM);
    let a = abs(v[j]);
    amax = max(amax, max(max(a.x, a.y), max(a.z, a.w)));
  }
  let inv = select(0.0, 127.0 / amax, amax > 0.0);
  xd[g] = amax / 127.0;
  for (var e = 0u; e < Q8_DIGITS; e++) {
    var words: array<u32, 8>;
    var sum = 0;
    for (var m = 0u; m < 4u; m++) {  // word m of the group: elements 8m .. 8m+7 = v[2m], v[2m+1]
      let s0 = v[2u * m] * inv;
      let s1 = v[2u * m + 1u] * inv;
      // digit 0: round(x̂ / step); digit 1: round(residual · 254), |residual| ≤ 1/2
      let a = vec4<i32>(select(round(s0), round((s0 - round(s0)) * 254.0), e == 1u));
      let c = vec4<i32>(select(round(s1), round((s1 - round(s1)) * 254.0), e == 1u));
      words[2u * m] = pack4xI8(vec4<i32>(a.x, a.z, c.x, c.z));       // meets the low nibbles: weights 0, 2, 4, 6
      words[2u * m + 1u] = pack4xI8(vec4<i32>(a.y, a.w, c.y, c.w));  // the high nibbles: weights 1, 3, 5, 7
      sum += a.x + a.y + a.z + a.w + c.x + c.y + c.z + c.w;
    }
    let o = e * 2u * Q8_GROUPS;
    xq[o + 2u * g] = vec4<u32>(words[0], words[1], words[2], words[3]);
    xq[o + 2u * g + 1u] = vec4<u32>(words[4], words[5], words[6], words[7]);
    xz[g + e * Q8_GROUPS] = 7 * sum;
  }
  return ss;
}

//#if SUBGROUPS
// QSG: quarter c of x̂ (elements 8c .. 8c + 7, quarter c % 4 of group c / 4), the group's max and digit sums shared
// by shuffles among its 4 threads; the same expressions as quantizeGroup. Returns Σ x² over the quarter (0 when not
// `valid`, a clamped repeat of the last quarter that writes nothing).
fn quantizeQuarter(c: u32, valid: bool) -> f32 {
  let g = c / 4u;
  let m = c % 4u;
  let x0 = x[2u * c];
  let x1 = x[2u * c + 1u];
  let ss = select(0.0, dot(x0, x0) + dot(x1, x1), valid);
  let v0 = select(x0, x0 * norm_w[2u * c], NORM);
  let v1 = select(x1, x1 * norm_w[2u * c + 1u], NORM);
  let amax = quarterMax(v0, v1);
  let inv = select(0.0, 127.0 / amax, amax > 0.0);
  if (valid && m == 0u) { xd[g] = amax / 127.0; }
  for (var e = 0u; e < Q8_DIGITS; e++) {
    let qd = quarterDigits(v0, v1, inv, e);
    if (valid) {  // words 2m and 2m + 1 of the group: components 2 (m % 2) and + 1 of vec4 m / 2
      let at = e * 2u * Q8_GROUPS + 2u * g + m / 2u;
      xq[at][2u * (m % 2u)] = qd.lo;
      xq[at][2u * (m % 2u) + 1u] = qd.hi;
      if (m == 0u) { xz[g + e * Q8_GROUPS] = 7 * qd.sum; }
    }
  }
  return ss;
}
//#endif

// Σ (code - 7) · x̂ over a group's words `wv` in units of the digit-0 step (exact in i32: |·| < 2^24), times the
// weight scale `sc`. q = xq[2g], xq[2g+1] (digit 0), then the same for digit 1; z = the digits' zero points.
fn dotWordsQ8(wv: vec4<u32>, sc: f32, q: array<vec4<u32>, 4>, z: vec2<i32>) -> f32 {
  let lo = wv & vec4<u32>(0x0F0F0F0Fu);
  let hi = (wv >> vec4<u32>(4u)) & vec4<u32>(0x0F0F0F0Fu);
  var t = dot32(lo, hi, q[0], q[1]) - z.x;
  if (Q8_DIGITS == 2u) { t = t * 254 + dot32(lo, hi, q[2], q[3]) - z.y; }
  return f32(t) * sc;
}

// Group g of x̂'s digits and zero points from workgroup memory.
fn xqGroup(g: u32) -> array<vec4<u32>, 4> {
  var q: array<vec4<u32>, 4>;
  q[0] = xq[2u * g];
  q[1] = xq[2u * g + 1u];
  if (Q8_DIGITS == 2u) {
    q[2] = xq[2u * Q8_GROUPS + 2u * g];
    q[3] = xq[2u * Q8_GROUPS + 2u * g + 1u];
  }
  return q;
}
fn xzGroup(g: u32) -> vec2<i32> { return vec2<i32>(xz[g], select(0, xz[Q8_GROUPS + g], Q8_DIGITS == 2u)); }

// The words and scales of rows r .. r+3 (clamped to `last`) in group g.
struct Words4 { w0: vec4<u32>, w1: vec4<u32>, w2: vec4<u32>, w3: vec4<u32>, sc: vec4<f32> }
fn loadWords4(r: u32, last: u32, g: u32) -> Words4 {
  let gpr = groupsPerRow();
  let r0 = min(r, last);
  let r1 = min(r + 1u, last);
  let r2 = min(r + 2u, last);
  let r3 = min(r + 3u, last);
  return Words4(w[r0 * gpr + g], w[r1 * gpr + g], w[r2 * gpr + g], w[r3 * gpr + g],
                vec4<f32>(scaleOf(r0, g), scaleOf(r1, g), scaleOf(r2, g), scaleOf(r3, g)));
}

// Four rows' words of group g (loadWords4, or loaded ahead: PREFETCH) against the int8 x̂, in units of the
// group's digit-0 step.
fn rows4WordsQ8(p: Words4, g: u32) -> vec4<f32> {
  let q = xqGroup(g);
  let z = xzGroup(g);
  return vec4<f32>(dotWordsQ8(p.w0, p.sc.x, q, z), dotWordsQ8(p.w1, p.sc.y, q, z), dotWordsQ8(p.w2, p.sc.z, q, z),
                   dotWordsQ8(p.w3, p.sc.w, q, z));
}

// Four rows (clamped to `last`) of group g against the int8 x̂.
fn rows4GroupQ8(r: u32, last: u32, g: u32) -> vec4<f32> {
  return rows4WordsQ8(loadWords4(r, last, g), g);
}

// Four rows of one word, x in registers.
fn rows4Word(r: u32, last: u32, wi: u32, xa: vec4<f32>, xb: vec4<f32>) -> vec4<f32> {
  return vec4<f32>(dotWord(min(r, last), wi, xa, xb), dotWord(min(r + 1u, last), wi, xa, xb),
                   dotWord(min(r + 2u, last), wi, xa, xb), dotWord(min(r + 3u, last), wi, xa, xb));
}

// Σ over quantization group g of row `row`: W[row, k] · x̂[b, k], for every batch row, added into acc[off + b].
fn accumulateGroup(row: u32, g: u32, acc: ptr<function, array<f32, MAXACC>>, off: u32) {
  if (QFMT == 2u) {
    for (var q = 0u; q < 4u; q++) {
      let wv = w[row * (K / 8u) + g * 4u + q];  // 8 halves = x elements g*32 + 8q .. +7
      let w0 = vec4<f32>(unpack2x16float(wv.x), unpack2x16float(wv.y));
      let w1 = vec4<f32>(unpack2x16float(wv.z), unpack2x16float(wv.w));
      for (var b = 0u; b < BATCH; b++) {
        (*acc)[off + b] += dot(w0, xv(b, g * 8u + 2u * q)) + dot(w1, xv(b, g * 8u + 2u * q + 1u));
      }
    }
  } else if (QFMT == 3u) {
    for (var q = 0u; q < 8u; q++) {
      let wv = bitcast<vec4<f32>>(w[row * (K / 4u) + g * 8u + q]);
      for (var b = 0u; b < BATCH; b++) { (*acc)[off + b] += dot(wv, xv(b, g * 8u + q)); }
    }
  } else {
    let wv = w[row * groupsPerRow() + g];  // 4 words × 10 int3 codes
    let sc = scaleOf(row, g);
    for (var b = 0u; b < BATCH; b++) {
      var t = 0.0;
      for (var i = 0u; i < 4u; i++) {
        for (var c = 0u; c < 10u; c++) {
          let k = g * 40u + i * 10u + c;
          if (k < K) { t += (f32((wv[i] >> (3u * c)) & 7u) - 3.0) * xs(b, k); }
        }
      }
      (*acc)[off + b] += t * sc;
    }
  }
}

fn reduceLanes(v: f32, lid: u32) -> f32 {
  var r = v;
//#if SUBGROUPS
  if (SG_REDUCE) {
    for (var m = TPR / 2u; m > 0u; m = m / 2u) { r += subgroupShuffleXor(r, m); }
    return r;
  }
//#endif
  red[lid] = r;
  workgroupBarrier();
  for (var st = TPR / 2u; st > 0u; st = st / 2u) {
    if ((lid % TPR) < st) { red[lid] += red[lid + st]; }
    workgroupBarrier();
  }
  r = red[lid - (lid % TPR)];
  workgroupBarrier();
  return r;
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) lidv: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let lid = lidv.x;
//#if L2NEXT
  if (wid.x >= L2_MAIN) {  // one of the appended workgroups (the grid is one row of workgroups then)
    touchNext((wid.x - L2_MAIN) * WG + lid);
    return;
  }
//#endif
  let groups = WG / TPR;            // thread groups in the workgroup
  let tg = lid / TPR;
  let ks = tg % KSPLIT;              // which slice of K this thread group sums
  let rows_per_wg = (groups / KSPLIT) * RPT;
  let logical_rows = select(N, N / 2u, epiGated(EPI));
  let base = (wid.x + wid.y * nwg.x) * rows_per_wg + (tg / KSPLIT) * RPT;
  let lane = lid % TPR;
  let fast = QFMT <= 1u && BATCH == 1u && (RPT == 4u || RPT == 8u);
  let pre = PREFETCH && Q8 && fast && RPT == 4u && base < logical_rows && ks * TPR + lane < groupsPerRow();
  var pa: Words4;
  var pu: Words4;
  if (pre) {
    pa = loadWords4(base, logical_rows - 1u, ks * TPR + lane);
    if (epiGated(EPI)) { pu = loadWords4(base + N / 2u, logical_rows - 1u + N / 2u, ks * TPR + lane); }
  }
  if (NORM || XSH || Q8) {
    for (var b = 0u; b < BATCH; b++) {
      var ss = 0.0;
      var quarters = false;
//#if SUBGROUPS
      if (Q8 && QSG) {  // uniform trip count: every thread reaches the shuffles
        for (var c0 = 0u; c0 < 4u * Q8_GROUPS; c0 += WG) {
          ss += quantizeQuarter(min(c0 + lid, 4u * Q8_GROUPS - 1u), c0 + lid < 4u * Q8_GROUPS);
        }
        quarters = true;
      }
//#endif
      for (var g = lid; Q8 && !quarters && g < Q8_GROUPS; g += WG) { ss += quantizeGroup(g); }
      for (var v = lid; !Q8 && v < K / 4u; v += WG) {
        let xi = x[b * (X_STRIDE / 4u) + v];
        ss += dot(xi, xi);
        if (XSH) { xsh[v + v / 8u] = select(xi, xi * norm_w[v], NORM) * prescale(v & 1u); }
      }
      if (NORM) {  // sum of squares in two barriers: 16 threads fold WG/16 values each, thread 0 the 16
        red[lid] = ss;
        workgroupBarrier();
        if (lid < 16u) {
          var t = 0.0;
          for (var j = 0u; j < WG / 16u; j++) { t += red[lid * (WG / 16u) + j]; }
          red2[lid] = t;
        }
        workgroupBarrier();
        if (lid == 0u) {
          var t = 0.0;
          for (var j = 0u; j < 16u; j++) { t += red2[j]; }
          rinv[b] = inverseSqrt(t / f32(K) + EPS);
        }
      }
      workgroupBarrier();
    }
  }
  var acc: array<f32, MAXACC>;
  for (var i = 0u; i < MAXACC; i++) { acc[i] = 0.0; }
  let up = RPT * BATCH;  // offset of the SwiGLU "up" accumulators
  // Fast path: q4, one activation row, 4 or 8 rows per thread group, vec4 accumulators (rows clamped, masked
  // at the end). With XSH the x values come from xsh without rinv, applied once at the end.
  if (fast && base < logical_rows) {
    let last = logical_rows - 1u;
    let h = select(0u, N / 2u, epiGated(EPI));
    var a4 = vec4<f32>(0.0);
    var b4 = vec4<f32>(0.0);
    var u4 = vec4<f32>(0.0);
    var v4 = vec4<f32>(0.0);
    if (Q8) {
      var g0 = ks * TPR + lane;
      if (pre) {
        let d = select(xd[g0], xd[g0] / 254.0, Q8_DIGITS == 2u);
        a4 += d * rows4WordsQ8(pa, g0);
        if (epiGated(EPI)) { u4 += d * rows4WordsQ8(pu, g0); }
        g0 += TPR * KSPLIT;
      }
      for (var g = g0; g < groupsPerRow(); g += TPR * KSPLIT) {
        let d = select(xd[g], xd[g] / 254.0, Q8_DIGITS == 2u);
        a4 += d * rows4GroupQ8(base, last, g);
        if (RPT == 8u) { b4 += d * rows4GroupQ8(base + 4u, last, g); }
        if (epiGated(EPI)) {
          u4 += d * rows4GroupQ8(base + h, last + h, g);
          if (RPT == 8u) { v4 += d * rows4GroupQ8(base + 4u + h, last + h, g); }
        }
      }
    } else if (XSH) {
      for (var g = ks * TPR + lane; g < groupsPerRow(); g += TPR * KSPLIT) {
        a4 += rows4Group(base, last, g);
        if (RPT == 8u) { b4 += rows4Group(base + 4u, last, g); }
        if (epiGated(EPI)) {
          u4 += rows4Group(base + h, last + h, g);
          if (RPT == 8u) { v4 += rows4Group(base + 4u + h, last + h, g); }
        }
      }
    } else {
      for (var wi = ks * TPR + lane; wi < K / 8u; wi += TPR * KSPLIT) {
        let xa = xv(0u, 2u * wi) * prescale(0u);
        let xb = xv(0u, 2u * wi + 1u) * prescale(1u);
        a4 += rows4Word(base, last, wi, xa, xb);
        if (RPT == 8u) { b4 += rows4Word(base + 4u, last, wi, xa, xb); }
        if (epiGated(EPI)) {
          u4 += rows4Word(base + h, last + h, wi, xa, xb);
          if (RPT == 8u) { v4 += rows4Word(base + 4u + h, last + h, wi, xa, xb); }
        }
      }
    }
    if (NORM && (Q8 || XSH)) {  // staged x̂ leaves out the row's 1/RMS: applied once here
      a4 *= rinv[0];
      b4 *= rinv[0];
      u4 *= rinv[0];
      v4 *= rinv[0];
    }
    // acc layout: rows 0..RPT-1, then the SwiGLU "up" rows at `up` = RPT.
    acc[0] = a4.x;
    acc[1] = a4.y;
    acc[2] = a4.z;
    acc[3] = a4.w;
    acc[4] = b4.x;
    acc[5] = b4.y;
    acc[6] = b4.z;
    acc[7] = b4.w;
    acc[up] = u4.x;
    acc[up + 1u] = u4.y;
    acc[up + 2u] = u4.z;
    acc[up + 3u] = u4.w;
    if (RPT == 8u) {
      acc[up + 4u] = v4.x;
      acc[up + 5u] = v4.y;
      acc[up + 6u] = v4.z;
      acc[up + 7u] = v4.w;
    }
  }
  if (!fast && base < logical_rows && QFMT <= 1u) {
    for (var wi = ks * TPR + lane; wi < K / 8u; wi += TPR * KSPLIT) {
      for (var b = 0u; b < BATCH; b++) {
        let xa = xv(b, 2u * wi) * prescale(0u);
        let xb = xv(b, 2u * wi + 1u) * prescale(1u);
        for (var r = 0u; r < RPT; r++) {
          if (base + r < logical_rows) {
            acc[r * BATCH + b] += dotWord(base + r, wi, xa, xb);
            if (epiGated(EPI)) { acc[up + r * BATCH + b] += dotWord(base + r + N / 2u, wi, xa, xb); }
          }
        }
      }
    }
  }
  if (!fast && base < logical_rows && QFMT > 1u) {
    for (var g = ks * TPR + lane; g < groupsPerRow(); g += TPR * KSPLIT) {
      for (var r = 0u; r < RPT; r++) {
        if (base + r < logical_rows) {
          accumulateGroup(base + r, g, &acc, r * BATCH);
          if (epiGated(EPI)) { accumulateGroup(base + r + N / 2u, g, &acc, up + r * BATCH); }
        }
      }
    }
  }
  // Reduce over the lanes of each thread group, then over the KSPLIT groups that share the rows.
  let n_acc = select(1u, 2u, epiGated(EPI)) * RPT * BATCH;
  for (var i = 0u; i < n_acc; i++) {
    let v = reduceLanes(acc[i], lid);
    if (lane == 0u) { part[tg * MAXACC + i] = v; }
  }
  workgroupBarrier();
  if (lane != 0u || ks != 0u) { return; }
  for (var i = 0u; i < n_acc; i++) {
    var t = 0.0;
    for (var j = 0u; j < KSPLIT; j++) { t += part[(tg + j) * MAXACC + i]; }
    acc[i] = t;
  }
  for (var r = 0u; r < RPT; r++) {
    let row = base + r;
    if (row >= logical_rows) { continue; }
    for (var b = 0u; b < BATCH; b++) {
      let a = acc[r * BATCH + b];
      let out = b * Y_STRIDE + ROW_OFFSET + row;
      if (epiGated(EPI)) {
        let u = acc[up + r * BATCH + b];
        y[out] = actGate(EPI, a) * u;
      } else {
        var v = a;
        if (HAS_BIAS) { v += bias[ROW_OFFSET + row]; }
        if (EPI == 1u) { v += y[out]; }
        y[out] = actPlain(EPI, v);
      }
    }
  }
}
