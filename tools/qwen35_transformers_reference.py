#!/usr/bin/env python3
"""Transformers reference logits for a tiny random Qwen3.5 model, as fixtures for the C++ CPU reference.

Runs only where python3 has torch (2.11) and transformers (5.17); not part of CI. Steps:

 1. Build a tiny Qwen3_5TextConfig (docs: /work/shared/docs/qwen3_5-architecture.md §10): vocab 256, hidden 64,
    intermediate 128, 4 layers [linear, linear, linear, full], 4/2 heads of 32, GDN key heads 2 / value heads 4
    (grouped value attention) of 16, conv 4, tied embeddings, partial rotary 0.25. fp32, on the CPU.
 2. Random weights, made sensitive: every 1-D parameter gets + N(0, 0.3) (so a w vs 1+w mix-up shows), 2-D weights
    N(0, 0.5/sqrt(in)), conv N(0, 0.5), A_log = log U(0.01, 1) (decays that keep a memory across chunks).
 3. save_pretrained, then the project's converter writes MLC folders: `ewgpu convert HF OUT --quant Q --tokenizer T`
    with a byte-level tokenizer.json generated here (256 byte tokens, no merges).
 4. The MLC tensors are read back with numpy (tensor-cache.json + shards; bf16-encoded float32, float16, q4 NK
    groups of 32: mlc-format.md §1.6, §2) and loaded into the HF model (names mapped back, fused tensors split,
    the +1 of the zero-centred norms removed). So the reference is "transformers on exactly the stored weights"
    for both q0f32 (bf16-rounded) and q4f16_1 (dequantized). The read-back is also checked against the original
    weights (rounding-sized differences only), which catches a converter mapping error.
 5. Logits for a 150-token prompt (one forward) and for token-by-token decode of the last 20 tokens with the cache
    (after a prefill of the first 130); writes tests/fixtures/qwen3_5_tiny/<quant>/ = MLC folder + reference.json.

--check-only builds the model from step 2 and prints max |full - decode| of transformers itself (no converter).

Usage:  python3 tools/qwen35_transformers_reference.py --ewgpu build/apps/ewgpu/ewgpu
        python3 tools/qwen35_transformers_reference.py --check-only
"""

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
LAYER_TYPES = ["linear_attention", "linear_attention", "linear_attention", "full_attention"]
DIMS = dict(vocab=256, hidden=64, intermediate=128, heads=4, kv_heads=2, head_dim=32, lin_k_heads=2,
            lin_v_heads=4, lin_k_dim=16, lin_v_dim=16, conv=4, partial=0.25)
# Stored norms that hold 1 + w in MLC folders (mlc-format.md §3.4); linear_attn.norm is stored as is.
OFFSET_NORM_SUFFIXES = ("input_layernorm.weight", "post_attention_layernorm.weight", "self_attn.q_norm.weight",
                        "self_attn.k_norm.weight")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ewgpu", help="path of the ewgpu binary (its `convert` subcommand writes the MLC folders)")
    p.add_argument("--out", default=str(REPO_ROOT / "tests" / "fixtures" / "qwen3_5_tiny"),
                   help="fixture root; <out>/<quant>/ is replaced")
    p.add_argument("--quants", default="q0f32,q4f16_1")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rope-theta", type=float, default=1e4)
    p.add_argument("--prompt-len", type=int, default=150)
    p.add_argument("--decode-len", type=int, default=20)
    p.add_argument("--export-hf", metavar="DIR",
                   help="only save the HF model and tokenizer.json to DIR (to convert elsewhere)")
    p.add_argument("--mlc-root", metavar="DIR",
                   help="use already converted folders DIR/<quant>/ instead of running --ewgpu; only "
                        "reference.json is written, to --out/<quant>/")
    p.add_argument("--emulate", action="store_true",
                   help="no converter: run transformers on the converter's rounding emulated in numpy and write "
                        "only reference.json (use with --export-hf, then convert and --verify-emulation)")
    p.add_argument("--verify-emulation", metavar="HF_DIR",
                   help="numpy only: check that --mlc-root/<quant>/ holds exactly the emulated rounding of HF_DIR")
    p.add_argument("--keep-temp", action="store_true", help="keep the HF and MLC temp folders")
    p.add_argument("--check-only", action="store_true",
                   help="only print max |full - decode| logits of transformers on the random model")
    args = p.parse_args()
    if not (args.check_only or args.export_hf or args.mlc_root or args.ewgpu or args.emulate):
        p.error("give --ewgpu (convert here), --mlc-root (converted elsewhere), --emulate, --export-hf or --check-only")
    if args.verify_emulation and not args.mlc_root:
        p.error("--verify-emulation needs --mlc-root")
    if not 0 < args.decode_len < args.prompt_len:
        p.error("need 0 < --decode-len < --prompt-len")
    return args


def fail(msg):
    print(f"error: {msg}", file=sys.stderr)
    sys.exit(1)


# ---- tokenizer ------------------------------------------------------------------------------------------------

def byte_level_char(b):
    """The ByteLevel alphabet: printable bytes map to themselves, the other 68 in order to U+0100 onwards."""
    def printable(x):
        return 0x21 <= x <= 0x7E or 0xA1 <= x <= 0xAC or 0xAE <= x <= 0xFF
    if printable(b):
        return chr(b)
    return chr(0x100 + sum(1 for x in range(b) if not printable(x)))


def write_tokenizer(path):
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}
    tok = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": [], "normalizer": None,
        "pre_tokenizer": byte_level, "post_processor": None, "decoder": byte_level,
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": {byte_level_char(b): b for b in range(256)}, "merges": []},
    }
    assert len(tok["model"]["vocab"]) == 256
    with open(path, "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False)


# ---- the HF model ---------------------------------------------------------------------------------------------

def import_transformers():
    try:
        import torch
        import transformers
    except ImportError as e:
        fail(f"needs torch and transformers ({e})")
    try:
        from transformers import Qwen3_5ForCausalLM, Qwen3_5TextConfig
    except ImportError:
        from transformers.models.qwen3_5 import Qwen3_5ForCausalLM, Qwen3_5TextConfig
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, numpy {np.__version__}")
    if not transformers.__version__.startswith("5.17"):
        print("warning: written against transformers 5.17; continuing")
    if not torch.__version__.startswith("2.11"):
        print("warning: written against torch 2.11; continuing")
    return torch, transformers, Qwen3_5ForCausalLM, Qwen3_5TextConfig


def build_config(Qwen3_5TextConfig, rope_theta):
    d = DIMS
    cfg = Qwen3_5TextConfig(
        vocab_size=d["vocab"], hidden_size=d["hidden"], intermediate_size=d["intermediate"],
        num_hidden_layers=len(LAYER_TYPES), layer_types=list(LAYER_TYPES),
        num_attention_heads=d["heads"], num_key_value_heads=d["kv_heads"], head_dim=d["head_dim"],
        linear_num_key_heads=d["lin_k_heads"], linear_num_value_heads=d["lin_v_heads"],
        linear_key_head_dim=d["lin_k_dim"], linear_value_head_dim=d["lin_v_dim"], linear_conv_kernel_dim=d["conv"],
        tie_word_embeddings=True, rms_norm_eps=1e-6, hidden_act="silu", attention_bias=False,
        max_position_embeddings=1024,
        rope_parameters={"rope_type": "default", "rope_theta": rope_theta, "partial_rotary_factor": d["partial"],
                         "mrope_section": [2, 1, 1], "mrope_interleaved": True},
    )
    rp = cfg.rope_parameters
    assert rp["rope_theta"] == rope_theta and rp.get("partial_rotary_factor") == d["partial"], rp
    assert list(cfg.layer_types) == LAYER_TYPES, cfg.layer_types
    try:
        cfg._attn_implementation = "eager"  # plain softmax attention, fp32
    except Exception as e:  # noqa: BLE001 - only a preference
        print(f"note: could not select eager attention ({e})")
    return cfg


def build_model(torch, Qwen3_5ForCausalLM, cfg, seed):
    torch.manual_seed(seed)
    model = Qwen3_5ForCausalLM(cfg).float().eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.ndim == 1:
                p.add_(torch.randn_like(p) * 0.3)
            elif p.ndim == 2:
                p.normal_(0.0, 0.5 / math.sqrt(p.shape[1]))
            else:
                p.normal_(0.0, 0.5)
        for layer in model.model.layers:
            if hasattr(layer, "linear_attn"):
                la = layer.linear_attn
                la.A_log.copy_(torch.empty_like(la.A_log).uniform_(0.01, 1.0).log())
    rotary = getattr(model.model, "rotary_emb", None)
    if rotary is not None:
        assert rotary.inv_freq.numel() == int(DIMS["head_dim"] * DIMS["partial"]) // 2, rotary.inv_freq.shape
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr(), "lm_head not tied"
    n = sum(p.numel() for p in model.parameters())
    print(f"model: {n} parameters, layer types {list(cfg.layer_types)}, "
          f"inv_freq {None if rotary is None else rotary.inv_freq.tolist()}")
    return model


def run_logits(torch, model, prompt, n_prefill):
    """(full [T, V], decode [T - n_prefill, V], prefill [n_prefill, V]) as float64 numpy arrays."""
    ids = torch.tensor([prompt], dtype=torch.long)
    T = len(prompt)
    with torch.no_grad():
        full = model(input_ids=ids, use_cache=False).logits[0]
        assert tuple(full.shape) == (T, DIMS["vocab"]), full.shape
        out = model(input_ids=ids[:, :n_prefill], use_cache=True)
        prefill = out.logits[0]
        cache = out.past_key_values
        assert cache is not None, "no cache returned"
        print(f"cache: {type(cache).__name__}, seq length {cache.get_seq_length()}")
        rows = []
        for t in range(n_prefill, T):
            out = model(input_ids=ids[:, t:t + 1], past_key_values=cache, use_cache=True)
            cache = out.past_key_values
            assert tuple(out.logits.shape) == (1, 1, DIMS["vocab"]), out.logits.shape
            rows.append(out.logits[0, -1])
        assert cache.get_seq_length() == T, cache.get_seq_length()
    decode = torch.stack(rows)
    return full.double().numpy(), decode.double().numpy(), prefill.double().numpy()


def report_consistency(full, decode, prefill, n_prefill, label):
    scale = float(np.abs(full).max())
    d_decode = float(np.abs(full[n_prefill:] - decode).max())
    d_prefill = float(np.abs(full[:n_prefill] - prefill).max())
    print(f"[{label}] max|logit| {scale:.4g}; max|full - decode| {d_decode:.3g}; "
          f"max|full - prefill| {d_prefill:.3g}")
    return scale, d_decode


# ---- MLC folder read-back -------------------------------------------------------------------------------------

def read_mlc_tensors(folder):
    """name -> numpy array (float32 for float records, uint32 for packed codes), decoded per mlc-format.md §1.6."""
    with open(os.path.join(folder, "tensor-cache.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    tensors = {}
    for shard in manifest["records"]:
        with open(os.path.join(folder, shard["dataPath"]), "rb") as f:
            data = f.read()
        assert len(data) == shard["nbytes"], (shard["dataPath"], len(data), shard["nbytes"])
        for rec in shard["records"]:
            raw = data[rec["byteOffset"]:rec["byteOffset"] + rec["nbytes"]]
            shape, dtype = tuple(rec["shape"]), rec["dtype"]
            if dtype == "float32" and rec.get("format") == "f32-to-bf16":
                arr = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
            elif dtype == "float32":
                arr = np.frombuffer(raw, dtype="<f4")
            elif dtype == "float16":
                arr = np.frombuffer(raw, dtype="<f2").astype(np.float32)
            elif dtype == "bfloat16":
                arr = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
            elif dtype == "uint32":
                arr = np.frombuffer(raw, dtype="<u4")
            else:
                fail(f"unexpected dtype {dtype} for {rec['name']}")
            assert arr.size == math.prod(shape), (rec["name"], arr.size, shape)
            tensors[rec["name"]] = arr.reshape(shape).copy()
    return tensors


def dequant_q4_nk(q_weight, q_scale, rows, cols):
    """int4 codes, 8 per uint32 (element 0 in the low nibble), groups of 32 along the input axis: (q - 7) * s."""
    assert q_weight.shape[0] == rows and q_scale.shape[0] == rows
    codes = np.stack([(q_weight >> np.uint32(4 * e)) & np.uint32(15) for e in range(8)], axis=-1)
    codes = codes.reshape(rows, -1)[:, :cols].astype(np.float32)
    scales = np.repeat(q_scale.astype(np.float32), 32, axis=1)[:, :cols]
    return (codes - np.float32(7)) * scales


class MlcWeights:
    def __init__(self, tensors):
        self.t = tensors
        self.used = set()
        self.quantized = set()  # HF names that came from q4 matrices

    def matrix(self, module, rows, cols):
        if module + ".weight" in self.t:
            self.used.add(module + ".weight")
            w = self.t[module + ".weight"].astype(np.float32)
            assert w.shape == (rows, cols), (module, w.shape, rows, cols)
            return w, False
        qw, qs = self.t[module + ".q_weight"], self.t[module + ".q_scale"]
        self.used.update([module + ".q_weight", module + ".q_scale"])
        return dequant_q4_nk(qw, qs, rows, cols), True

    def vector(self, name):
        self.used.add(name)
        return self.t[name].astype(np.float32)


def mlc_to_hf_state(tensors):
    """HF parameter name -> float32 array, and the set of names that came from quantized matrices."""
    d = DIMS
    H, I, D = d["hidden"], d["intermediate"], d["head_dim"]
    nh, nkv = d["heads"], d["kv_heads"]
    hk, hv, dk, dv, ks = d["lin_k_heads"], d["lin_v_heads"], d["lin_k_dim"], d["lin_v_dim"], d["conv"]
    C = 2 * hk * dk + hv * dv
    m = MlcWeights(tensors)
    hf, quantized = {}, set()

    def put(name, value, from_q4=False):
        hf[name] = np.ascontiguousarray(value, dtype=np.float32)
        if from_q4:
            quantized.add(name)

    emb, q = m.matrix("model.embed_tokens", d["vocab"], H)
    put("model.embed_tokens.weight", emb, q)
    put("model.norm.weight", m.vector("model.norm.weight") - np.float32(1))
    assert "lm_head.weight" not in tensors and "lm_head.q_weight" not in tensors, "tied model has an lm_head"
    for i, kind in enumerate(LAYER_TYPES):
        p = f"model.layers.{i}."
        for norm in ("input_layernorm.weight", "post_attention_layernorm.weight"):
            put(p + norm, m.vector(p + norm) - np.float32(1))
        gu, q = m.matrix(p + "mlp.gate_up_proj", 2 * I, H)
        put(p + "mlp.gate_proj.weight", gu[:I], q)
        put(p + "mlp.up_proj.weight", gu[I:], q)
        w, q = m.matrix(p + "mlp.down_proj", H, I)
        put(p + "mlp.down_proj.weight", w, q)
        if kind == "full_attention":
            sa = p + "self_attn."
            q_rows = 2 * nh * D  # per head: D query rows then D gate rows, the HF q_proj layout as is
            w, q = m.matrix(sa + "c_attn", q_rows + 2 * nkv * D, H)
            put(sa + "q_proj.weight", w[:q_rows], q)
            put(sa + "k_proj.weight", w[q_rows:q_rows + nkv * D], q)
            put(sa + "v_proj.weight", w[q_rows + nkv * D:], q)
            w, q = m.matrix(sa + "o_proj", H, nh * D)
            put(sa + "o_proj.weight", w, q)
            put(sa + "q_norm.weight", m.vector(sa + "q_norm.weight") - np.float32(1))
            put(sa + "k_norm.weight", m.vector(sa + "k_norm.weight") - np.float32(1))
        else:
            la = p + "linear_attn."
            for module, rows, cols in (("in_proj_qkv", C, H), ("in_proj_z", hv * dv, H), ("in_proj_a", hv, H),
                                       ("in_proj_b", hv, H), ("out_proj", H, hv * dv)):
                w, q = m.matrix(la + module, rows, cols)
                put(la + module + ".weight", w, q)
            put(la + "conv1d.weight", m.vector(la + "conv1d_weight").reshape(C, 1, ks))
            put(la + "A_log", m.vector(la + "A_log"))
            put(la + "dt_bias", m.vector(la + "dt_bias"))
            put(la + "norm.weight", m.vector(la + "norm.weight"))
    unused = set(tensors) - m.used
    assert not unused, f"MLC tensors not mapped back: {sorted(unused)}"
    return hf, quantized


def check_and_load(torch, model, hf, quantized, original, quant):
    """Copies the read-back weights into the model after checking they differ from the originals by rounding only."""
    params = dict(model.named_parameters())
    if "lm_head.weight" in params and "lm_head.weight" not in hf:  # tied: whichever name the tie kept
        hf["lm_head.weight"] = hf["model.embed_tokens.weight"]
        original.setdefault("lm_head.weight", original.get("model.embed_tokens.weight"))
    missing, extra = set(params) - set(hf), set(hf) - set(params)
    assert not missing and not extra, f"missing {sorted(missing)}, extra {sorted(extra)}"
    worst = 0.0
    for name, p in params.items():
        new, old = hf[name], original[name]
        assert new.shape == tuple(p.shape), (name, new.shape, tuple(p.shape))
        rel = 0.09 if name in quantized else 2.0 ** -8  # q4: half a step of max|w|/7; bf16/f16: 2^-9 relative
        offset = 1.0 if name.endswith(OFFSET_NORM_SUFFIXES) or name == "model.norm.weight" else 0.0
        tol = rel * (float(np.abs(old).max()) + offset)
        diff = float(np.abs(new - old).max())
        worst = max(worst, diff / max(tol, 1e-30))
        if diff > tol:
            fail(f"{quant}: {name} read back differs from the original by {diff:.4g} > {tol:.4g}: "
                 "the converter's mapping (or this script's inverse) is wrong")
    print(f"[{quant}] read-back weights within rounding of the originals (worst {worst:.2f} of tolerance)")
    with torch.no_grad():
        for name, p in params.items():
            p.copy_(torch.from_numpy(hf[name]))
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()


# ---- the converter's rounding, emulated (for a GPU machine without the ewgpu binary) -----------------------------
# --emulate applies the stored-precision rounding of writeMlcFolder to the original weights (bf16 / f16 round to
# nearest even; q4 groups of 32 with scale = round(max|w| / 7) and codes round-half-away(w / scale + 7) clamped to
# 0..14), so transformers runs on the values the folder will hold. --verify-emulation (numpy only) then proves
# that a folder converted elsewhere from the --export-hf output holds exactly those values.

def bf16_round(a):
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    return u.astype(np.uint32).view(np.float32)


def f16_round(a):
    return np.asarray(a, dtype=np.float32).astype(np.float16).astype(np.float32)


def q4_roundtrip(w, round_scale):
    rows, cols = w.shape
    assert cols % 32 == 0, w.shape
    g = np.asarray(w, dtype=np.float32).reshape(rows, cols // 32, 32)
    scale = round_scale(np.abs(g).max(axis=-1, keepdims=True) / np.float32(7))
    safe = np.where(scale > 0, scale, np.float32(1))
    x = g / safe + np.float32(7)
    q = np.where(x >= 0, np.floor(x + np.float32(0.5)), -np.floor(-x + np.float32(0.5)))
    q = np.where(scale > 0, np.clip(q, 0, 14), np.float32(7)).astype(np.float32)
    return ((q - np.float32(7)) * scale).astype(np.float32).reshape(rows, cols)


def emulate_stored(original, quant):
    """HF name -> the value the reference reads back from a folder of `quant`, and the names quantized to q4."""
    q4 = quant.startswith("q4")
    model_round = f16_round if "f16" in quant else bf16_round
    scale_round = f16_round if quant == "q4f16_1" else bf16_round
    state, quantized = {}, set()
    for name, w in original.items():
        w = np.asarray(w, dtype=np.float32)
        if w.ndim == 2 and q4:
            state[name] = q4_roundtrip(w, scale_round)
            quantized.add(name)
        elif name.endswith((".A_log", ".dt_bias")):  # float32 parameters, stored bf16-encoded
            state[name] = bf16_round(w)
        elif name.endswith(OFFSET_NORM_SUFFIXES) or name == "model.norm.weight":
            state[name] = model_round(w + np.float32(1)) - np.float32(1)
        else:
            state[name] = model_round(w)
    return state, quantized


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", (name, info["dtype"])
        b, e = info["data_offsets"]
        out[name] = np.frombuffer(data[8 + n + b:8 + n + e], dtype="<f4").reshape(info["shape"]).copy()
    return out


def verify_emulation(hf_dir, mlc_root, quants):
    files = sorted(Path(hf_dir).glob("*.safetensors"))
    assert files, f"no safetensors in {hf_dir}"
    original = {}
    for f in files:
        original.update(read_safetensors(f))
    original.pop("lm_head.weight", None)  # tied to the embedding
    for quant in quants:
        expected, _ = emulate_stored(original, quant)
        stored, _ = mlc_to_hf_state(read_mlc_tensors(Path(mlc_root) / quant))
        assert set(stored) == set(expected), sorted(set(stored) ^ set(expected))
        worst = max(float(np.abs(stored[k] - expected[k]).max()) for k in stored)
        print(f"[{quant}] folder vs emulated rounding: max |diff| {worst:.3g} over {len(stored)} tensors")
        if worst != 0.0:
            fail(f"{quant}: the folder does not hold the emulated values; regenerate with --ewgpu instead")


# ---- conversion and fixtures ----------------------------------------------------------------------------------

def convert(ewgpu, hf_dir, out_dir, quant, tokenizer):
    cmd = [ewgpu, "convert", str(hf_dir), str(out_dir), "--quant", quant, "--tokenizer", str(tokenizer)]
    print("$ " + " ".join(cmd))
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.stdout.strip():
        print(r.stdout.strip())
    if r.returncode != 0:
        fail(f"converter failed ({r.returncode}): {r.stderr.strip()}")


def check_mlc_config(folder, quant, rope_theta):
    with open(os.path.join(folder, "mlc-chat-config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    mc = cfg["model_config"]
    d = DIMS
    expect = {"hidden_size": d["hidden"], "intermediate_size": d["intermediate"],
              "num_hidden_layers": len(LAYER_TYPES), "num_attention_heads": d["heads"],
              "num_key_value_heads": d["kv_heads"], "head_dim": d["head_dim"], "vocab_size": d["vocab"],
              "linear_num_key_heads": d["lin_k_heads"], "linear_num_value_heads": d["lin_v_heads"],
              "linear_key_head_dim": d["lin_k_dim"], "linear_value_head_dim": d["lin_v_dim"],
              "linear_conv_kernel_dim": d["conv"], "full_attention_interval": 4,
              "partial_rotary_factor": d["partial"], "rope_theta": rope_theta, "tie_word_embeddings": True}
    bad = {k: (mc.get(k), v) for k, v in expect.items() if mc.get(k) != v}
    if cfg.get("model_type") not in ("qwen3_5", "qwen3_5_text") or cfg.get("quantization") != quant or bad:
        fail(f"mlc-chat-config.json of {folder}: model_type {cfg.get('model_type')}, "
             f"quantization {cfg.get('quantization')}, mismatches (got, want) {bad}")


def rows_json(a):
    return [[float(f"{x:.9g}") for x in row] for row in np.asarray(a, dtype=np.float32)]


def write_fixture(out_root, quant, mlc_dir, prompt, n_prefill, full, decode, torch, transformers, rope_theta, seed,
                  weights_source):
    dest = Path(out_root) / quant
    if mlc_dir is not None:  # a fresh copy of the converted folder
        if dest.exists():
            shutil.rmtree(dest)
        shutil.copytree(mlc_dir, dest)
    dest.mkdir(parents=True, exist_ok=True)
    ref = {
        "prompt_ids": [int(t) for t in prompt],
        "n_prefill": n_prefill,
        "full_logits_last": rows_json(full[n_prefill:]),
        "decode_logits": rows_json(decode),
        "max_abs_logit": float(np.abs(full).max()),
        "quant": quant,
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "seed": seed,
        "rope_theta": rope_theta,
        "weights_source": weights_source,
        "note": "Qwen3_5ForCausalLM fp32 on CPU on the weights this MLC folder stores (dequantized); weights_source "
                "'emulated' means the converter's rounding was emulated and checked with --verify-emulation",
    }
    with open(dest / "reference.json", "w", encoding="utf-8") as f:
        json.dump(ref, f)
    size = sum(p.stat().st_size for p in dest.rglob("*") if p.is_file())
    print(f"[{quant}] wrote {dest} ({size / 1024:.0f} KiB)")
    if size > 1024 * 1024:
        print(f"warning: fixture {dest} is larger than 1 MiB")


def export_hf(model, out_dir):
    out_dir = Path(out_dir)
    model.save_pretrained(str(out_dir))
    write_tokenizer(out_dir / "tokenizer.json")
    print(f"wrote {out_dir} (config.json, safetensors, tokenizer.json); convert each quant with\n"
          f"  ewgpu convert {out_dir} tests/fixtures/qwen3_5_tiny/<quant> --quant <quant> "
          f"--tokenizer {out_dir / 'tokenizer.json'}\n"
          "then run this script again with --mlc-root tests/fixtures/qwen3_5_tiny")


def fixture_for_quant(ctx, quant, mlc_dir, copy_folder, emulated=None):
    torch, transformers, model, args = ctx["torch"], ctx["transformers"], ctx["model"], ctx["args"]
    if emulated is None:
        check_mlc_config(mlc_dir, quant, args.rope_theta)
        hf, quantized = mlc_to_hf_state(read_mlc_tensors(mlc_dir))
    else:
        hf, quantized = emulated
    check_and_load(torch, model, hf, quantized, ctx["original"], quant)
    full, decode, prefill = run_logits(torch, model, ctx["prompt"], ctx["n_prefill"])
    scale, d_decode = report_consistency(full, decode, prefill, ctx["n_prefill"], quant)
    if d_decode > 1e-4 * scale:
        fail(f"{quant}: transformers' own decode disagrees with its full forward ({d_decode:.3g})")
    write_fixture(args.out, quant, mlc_dir if copy_folder else None, ctx["prompt"], ctx["n_prefill"], full, decode,
                  torch, transformers, args.rope_theta, args.seed, "emulated" if emulated else "mlc-folder")


def main():
    args = parse_args()
    quants = [q.strip() for q in args.quants.split(",") if q.strip()]
    if args.verify_emulation:  # numpy only: no torch needed
        verify_emulation(args.verify_emulation, args.mlc_root, quants)
        return
    torch, transformers, Qwen3_5ForCausalLM, Qwen3_5TextConfig = import_transformers()
    torch.set_grad_enabled(False)
    cfg = build_config(Qwen3_5TextConfig, args.rope_theta)
    model = build_model(torch, Qwen3_5ForCausalLM, cfg, args.seed)
    prompt = np.random.default_rng(args.seed).integers(0, DIMS["vocab"], size=args.prompt_len).tolist()
    n_prefill = args.prompt_len - args.decode_len

    full, decode, prefill = run_logits(torch, model, prompt, n_prefill)
    report_consistency(full, decode, prefill, n_prefill, "original fp32 weights")
    if args.check_only:
        return
    if args.export_hf:
        export_hf(model, args.export_hf)
        if not args.emulate:
            return

    ctx = dict(torch=torch, transformers=transformers, model=model, args=args, prompt=prompt, n_prefill=n_prefill,
               original={n: p.detach().clone().numpy() for n, p in model.named_parameters()})
    if args.emulate:
        for quant in quants:
            state, quantized = emulate_stored(ctx["original"], quant)
            fixture_for_quant(ctx, quant, None, copy_folder=False, emulated=(state, quantized))
        return
    if args.mlc_root:  # folders converted elsewhere from --export-hf output
        for quant in quants:
            mlc_dir = Path(args.mlc_root) / quant
            if not (mlc_dir / "tensor-cache.json").exists():
                fail(f"{mlc_dir} is not an MLC folder")
            fixture_for_quant(ctx, quant, mlc_dir, copy_folder=False)
        return
    tmp = Path(tempfile.mkdtemp(prefix="qwen35_ref_"))
    try:
        hf_dir = tmp / "hf"
        export_hf(model, hf_dir)
        for quant in quants:
            mlc_dir = tmp / f"mlc_{quant}"
            convert(args.ewgpu, hf_dir, mlc_dir, quant, hf_dir / "tokenizer.json")
            fixture_for_quant(ctx, quant, mlc_dir, copy_folder=True)
    finally:
        if args.keep_temp:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
