#!/usr/bin/env python3
"""Transformers reference logits for tiny random llama / mistral / qwen2 / qwen3 models (CPU-reference fixtures).

The companion of qwen35_transformers_reference.py (whose helpers it imports: byte-level tokenizer, MLC read-back,
the converter's rounding, logits capture). Per architecture: a tiny HF model (vocab 256, hidden 64, intermediate 128,
2 layers, heads 4/2 of 16; llama untied with llama3 rope scaling whose three frequency regions all occur; mistral
untied; qwen2 with q/k/v biases, tied; qwen3 with q/k norms, tied), 1-D parameters + N(0, 0.3), 2-D N(0, 0.5/sqrt(in)).
Needs torch 2.11 + transformers 5.17 except --verify-emulation (numpy only).

Flow used for the committed fixtures (the GPU machine has no ewgpu build):
  GPU machine: python3 tools/llama_family_transformers_reference.py --out $OUT/fx --export-hf $OUT/hf
               (transformers runs on the converter's rounding emulated in numpy; writes <arch>/<quant>/reference.json)
  here:        ewgpu convert hf/<arch> tests/fixtures/<arch>_tiny/<quant> --quant <quant> --tokenizer hf/<arch>/tokenizer.json
               python3 tools/llama_family_transformers_reference.py --verify-emulation hf --mlc-root tests/fixtures
               then copy fx/<arch>/<quant>/reference.json into tests/fixtures/<arch>_tiny/<quant>/.
"""

import argparse
import importlib.util
import math
import sys
from pathlib import Path

import numpy as np

_spec = importlib.util.spec_from_file_location("q35", Path(__file__).with_name("qwen35_transformers_reference.py"))
q35 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(q35)

D = dict(vocab=256, hidden=64, intermediate=128, layers=2, heads=4, kv_heads=2, head_dim=16)
LLAMA3 = {"rope_type": "llama3", "rope_theta": 10000.0, "factor": 8.0, "low_freq_factor": 1.0,
          "high_freq_factor": 4.0, "original_max_position_embeddings": 64}
ARCHS = {  # classes, tie, qkv bias, q/k norm, rope parameters
    "llama": dict(classes=("LlamaConfig", "LlamaForCausalLM"), tie=False, bias=False, qk_norm=False, rope=LLAMA3),
    "mistral": dict(classes=("MistralConfig", "MistralForCausalLM"), tie=False, bias=False, qk_norm=False,
                    rope={"rope_type": "default", "rope_theta": 1e6}),
    "qwen2": dict(classes=("Qwen2Config", "Qwen2ForCausalLM"), tie=True, bias=True, qk_norm=False,
                  rope={"rope_type": "default", "rope_theta": 1e6}),
    "qwen3": dict(classes=("Qwen3Config", "Qwen3ForCausalLM"), tie=True, bias=False, qk_norm=True,
                  rope={"rope_type": "default", "rope_theta": 1e6}),
}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--archs", default="llama,mistral,qwen2,qwen3")
    p.add_argument("--quants", default="q0f32,q4f16_1")
    p.add_argument("--out", help="reference.json files go to OUT/<arch>/<quant>/")
    p.add_argument("--export-hf", metavar="DIR", help="also save each HF model + tokenizer.json to DIR/<arch>/")
    p.add_argument("--verify-emulation", metavar="HF_DIR",
                   help="numpy only: check that MLC_ROOT/<arch>_tiny/<quant>/ holds the emulated rounding of "
                        "HF_DIR/<arch>/")
    p.add_argument("--mlc-root", default=str(q35.REPO_ROOT / "tests" / "fixtures"))
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    if not args.verify_emulation and not args.out:
        p.error("give --out (GPU machine) or --verify-emulation")
    return args


def random_model(torch, cfg, Model, seed):
    """An fp32 eager-attention model of `cfg` with sensitive random weights: 1-D + N(0, 0.3), 2-D N(0, 0.5/sqrt(in))."""
    cfg._attn_implementation = "eager"
    torch.manual_seed(seed)
    model = Model(cfg).float().eval()
    with torch.no_grad():
        for _, p in model.named_parameters():
            if p.ndim == 1:
                p.add_(torch.randn_like(p) * 0.3)
            else:
                p.normal_(0.0, 0.5 / math.sqrt(p.shape[1]))
    return model


def build_model(transformers, torch, arch, seed):
    spec = ARCHS[arch]
    Config, Model = (getattr(transformers, name) for name in spec["classes"])
    kw = dict(vocab_size=D["vocab"], hidden_size=D["hidden"], intermediate_size=D["intermediate"],
              num_hidden_layers=D["layers"], num_attention_heads=D["heads"], num_key_value_heads=D["kv_heads"],
              rms_norm_eps=1e-6, hidden_act="silu", max_position_embeddings=1024,
              tie_word_embeddings=spec["tie"], rope_parameters=dict(spec["rope"]))
    if arch != "qwen2":  # qwen2 derives head_dim = hidden / heads (= 16 here)
        kw["head_dim"] = D["head_dim"]
    if arch == "qwen3":
        kw["attention_bias"] = False
    model = random_model(torch, Config(**kw), Model, seed)
    names = [n for n, _ in model.named_parameters()]
    assert ("lm_head.weight" in names) == (not spec["tie"]), names
    assert any(n.endswith("q_proj.bias") for n in names) == spec["bias"], names
    assert any(n.endswith("q_norm.weight") for n in names) == spec["qk_norm"], names
    print(f"{arch}: {sum(p.numel() for p in model.parameters())} parameters, rope {cfg.rope_parameters}")
    return model


def emulate_stored(original, quant):
    """HF name -> the value a folder of `quant` holds (no +1 norms in these families)."""
    model_round = q35.f16_round if "f16" in quant else q35.bf16_round
    scale_round = q35.f16_round if quant == "q4f16_1" else q35.bf16_round
    out = {}
    for name, w in original.items():
        w = np.asarray(w, dtype=np.float32)
        out[name] = q35.q4_roundtrip(w, scale_round) if (w.ndim == 2 and quant.startswith("q4")) else model_round(w)
    return out


def mlc_modules(arch, hf):
    """MLC name -> logical f32 value, built from HF-named values (fused qkv and gate_up rows, mlc-format.md §3)."""
    qkv = "self_attn.qkv_proj" if arch in ("llama", "mistral") else "self_attn.c_attn"
    out = {"model.embed_tokens": hf["model.embed_tokens.weight"], "model.norm.weight": hf["model.norm.weight"]}
    if "lm_head.weight" in hf:
        out["lm_head"] = hf["lm_head.weight"]
    for i in range(D["layers"]):
        p = f"model.layers.{i}."
        a = p + "self_attn."
        out[p + qkv] = np.concatenate([hf[a + "q_proj.weight"], hf[a + "k_proj.weight"], hf[a + "v_proj.weight"]])
        if a + "q_proj.bias" in hf:
            out[p + qkv + ".bias"] = np.concatenate([hf[a + "q_proj.bias"], hf[a + "k_proj.bias"], hf[a + "v_proj.bias"]])
        for name in ("o_proj", "mlp.down_proj"):
            module = a + name if name == "o_proj" else p + name
            out[module] = hf[module + ".weight"]
        out[p + "mlp.gate_up_proj"] = np.concatenate([hf[p + "mlp.gate_proj.weight"], hf[p + "mlp.up_proj.weight"]])
        for name in ("input_layernorm.weight", "post_attention_layernorm.weight", "self_attn.q_norm.weight",
                     "self_attn.k_norm.weight"):
            if p + name in hf:
                out[p + name] = hf[p + name]
    return out


def verify_emulation(hf_root, mlc_root, archs, quants):
    for arch in archs:
        original = {}
        for f in sorted((Path(hf_root) / arch).glob("*.safetensors")):
            original.update(q35.read_safetensors(f))
        if ARCHS[arch]["tie"]:
            original.pop("lm_head.weight", None)
        for quant in quants:
            tensors = q35.read_mlc_tensors(Path(mlc_root) / f"{arch}_tiny" / quant)
            expected = mlc_modules(arch, emulate_stored(original, quant))
            used, worst = set(), 0.0
            for module, want in expected.items():
                if module + ".q_weight" in tensors:
                    got = q35.dequant_q4_nk(tensors[module + ".q_weight"], tensors[module + ".q_scale"], *want.shape)
                    used.update([module + ".q_weight", module + ".q_scale"])
                else:
                    key = module if module in tensors else module + ".weight"
                    got = tensors[key].astype(np.float32)
                    used.add(key)
                assert got.shape == want.shape, (module, got.shape, want.shape)
                worst = max(worst, float(np.abs(got - want).max()))
            unused = set(tensors) - used
            assert not unused, f"{arch}/{quant}: unexpected tensors {sorted(unused)}"
            print(f"[{arch}/{quant}] folder vs emulated rounding: max |diff| {worst:.3g} over {len(expected)} tensors")
            if worst != 0.0:
                q35.fail(f"{arch}/{quant}: the folder does not hold the emulated values")


def write_reference(path, arch, quant, prompt, n_prefill, full, decode, torch, transformers, seed,
                    note="transformers fp32 on CPU on the converter's rounding of the weights (checked with "
                         "--verify-emulation against the committed folder)"):
    import json
    path.mkdir(parents=True, exist_ok=True)
    ref = {"prompt_ids": [int(t) for t in prompt], "n_prefill": n_prefill,
           "full_logits_last": q35.rows_json(full[n_prefill:]), "decode_logits": q35.rows_json(decode),
           "max_abs_logit": float(np.abs(full).max()), "arch": arch, "quant": quant,
           "transformers": transformers.__version__, "torch": torch.__version__, "seed": seed,
           "weights_source": "emulated", "note": note}
    with open(path / "reference.json", "w", encoding="utf-8") as f:
        json.dump(ref, f)
    print(f"[{arch}/{quant}] wrote {path / 'reference.json'}")


def run_arch(torch, transformers, arch, args, prompt, n_prefill):
    model = build_model(transformers, torch, arch, args.seed)
    original = {n: p.detach().clone().numpy() for n, p in model.named_parameters()}
    full, decode, prefill = q35.run_logits(torch, model, prompt, n_prefill)
    q35.report_consistency(full, decode, prefill, n_prefill, f"{arch} original")
    if args.export_hf:
        out = Path(args.export_hf) / arch
        model.save_pretrained(str(out))
        q35.write_tokenizer(out / "tokenizer.json")
    for quant in [q for q in args.quants.split(",") if q]:
        state = emulate_stored(original, quant)
        with torch.no_grad():
            for name, p in model.named_parameters():
                p.copy_(torch.from_numpy(state[name]))
        full, decode, prefill = q35.run_logits(torch, model, prompt, n_prefill)
        scale, d_decode = q35.report_consistency(full, decode, prefill, n_prefill, f"{arch}/{quant}")
        if d_decode > 1e-4 * scale:
            q35.fail(f"{arch}/{quant}: transformers' decode disagrees with its full forward ({d_decode:.3g})")
        write_reference(Path(args.out) / arch / quant, arch, quant, prompt, n_prefill, full, decode, torch,
                        transformers, args.seed)


def main():
    args = parse_args()
    archs = [a for a in args.archs.split(",") if a]
    if args.verify_emulation:
        verify_emulation(args.verify_emulation, args.mlc_root, archs, [q for q in args.quants.split(",") if q])
        return
    import torch
    import transformers
    print(f"torch {torch.__version__}, transformers {transformers.__version__}")
    torch.set_grad_enabled(False)
    prompt = np.random.default_rng(args.seed).integers(0, D["vocab"], size=150).tolist()
    for arch in archs:
        run_arch(torch, transformers, arch, args, prompt, 130)


if __name__ == "__main__":
    sys.exit(main())
