#!/usr/bin/env python3
"""Transformers reference logits for tiny random models of the families beyond llama / qwen (CPU-reference and
GPU fixtures): gemma, gemma2, gemma3_text, phi3, olmo2, stablelm, gpt_neox, phi (phi-msft), ministral3.

The companion of llama_family_transformers_reference.py (same flow, same helpers from
qwen35_transformers_reference.py: byte-level tokenizer, the converter's rounding emulated in numpy, logits capture).
Per architecture a tiny HF model (vocab 256, hidden 64, intermediate 128, 2 layers, heads 4/2 of 16; gpt_neox 4/4),
1-D parameters + N(0, 0.3), 2-D N(0, 0.5/sqrt(in)), with every path of the family exercised by the 150-token prompt:
gemma2's and gemma3's sliding windows (24 positions) shorter than the prompt, gemma2's soft-caps small enough to
bite (attention 2, logits 1.5), gemma3's two RoPE bases, phi3's LongRoPE short factors with an attention factor
(original 256 > prompt, max 1024: transformers switches the whole sequence to the long factors once it outgrows
the original length, which a KV cache cannot follow, so the fixtures stay below it), partial rotary for phi3 (0.75),
stablelm / gpt_neox (0.25) and phi (0.5), ministral3's YaRN (factor 4 over 64 original positions) and its
position-dependent query scale (llama_4_scaling_beta 0.1: steps at positions 64 and 128).

Flow (the GPU machine has torch 2.11 + transformers 5.17; the converter runs here):
  GPU machine: python3 tools/families_transformers_reference.py --out $OUT/fx --export-hf $OUT/hf
  here:        ewgpu convert hf/<arch> tests/fixtures/<arch>_tiny/<quant> --quant <quant> --tokenizer hf/<arch>/tokenizer.json
               then copy fx/<arch>/<quant>/reference.json into tests/fixtures/<arch>_tiny/<quant>/.
The fixture tests (tests/runtime/fixture_test.cpp, tests/reference/transformers_fixture_test.cpp) compare the GPU
engine and the CPU reference with these logits: a converter mapping error shows there as a logit mismatch.
"""

import argparse
import importlib.util
import sys
from pathlib import Path

import numpy as np

_spec = importlib.util.spec_from_file_location("llama_family",
                                               Path(__file__).with_name("llama_family_transformers_reference.py"))
llama_family = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(llama_family)
q35 = llama_family.q35

D = dict(vocab=256, hidden=64, intermediate=128, layers=2, heads=4, kv_heads=2, head_dim=16)
WINDOW = 24

# Norms stored as 1 + w by the converters (gemma's zero-centred RMSNorm).
GEMMA_OFFSET_NORMS = ("input_layernorm.weight", "post_attention_layernorm.weight", "pre_feedforward_layernorm.weight",
                      "post_feedforward_layernorm.weight", "self_attn.q_norm.weight", "self_attn.k_norm.weight")


def common(**extra):
    kw = dict(vocab_size=D["vocab"], hidden_size=D["hidden"], intermediate_size=D["intermediate"],
              num_hidden_layers=D["layers"], num_attention_heads=D["heads"], num_key_value_heads=D["kv_heads"],
              max_position_embeddings=1024)
    kw.update(extra)
    return kw


def arch_specs():
    """arch -> (config class, model class, config kwargs, offset-norm suffixes)."""
    longrope = {"rope_type": "longrope", "rope_theta": 10000.0,
                "short_factor": [1.0 + 0.5 * i for i in range(6)], "long_factor": [2.0 + 0.5 * i for i in range(6)],
                "original_max_position_embeddings": 256}
    return {
        "gemma": ("GemmaConfig", "GemmaForCausalLM",
                  common(head_dim=D["head_dim"], hidden_activation="gelu_pytorch_tanh", rms_norm_eps=1e-6,
                         rope_parameters={"rope_type": "default", "rope_theta": 10000.0}), GEMMA_OFFSET_NORMS),
        "gemma2": ("Gemma2Config", "Gemma2ForCausalLM",
                   common(head_dim=D["head_dim"], hidden_activation="gelu_pytorch_tanh", rms_norm_eps=1e-6,
                          query_pre_attn_scalar=24, sliding_window=WINDOW, attn_logit_softcapping=2.0,
                          final_logit_softcapping=1.5, layer_types=["sliding_attention", "full_attention"],
                          rope_parameters={"rope_type": "default", "rope_theta": 10000.0}), GEMMA_OFFSET_NORMS),
        "gemma3_text": ("Gemma3TextConfig", "Gemma3ForCausalLM",
                        common(head_dim=D["head_dim"], hidden_activation="gelu_pytorch_tanh", rms_norm_eps=1e-6,
                               query_pre_attn_scalar=24, sliding_window=WINDOW,
                               layer_types=["sliding_attention", "full_attention"],
                               rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                                                "full_attention": {"rope_type": "default", "rope_theta": 1e6}}),
                        GEMMA_OFFSET_NORMS),
        "phi3": ("Phi3Config", "Phi3ForCausalLM",
                 common(rms_norm_eps=1e-5, partial_rotary_factor=0.75, tie_word_embeddings=False, pad_token_id=0,
                        bos_token_id=1, eos_token_id=2, original_max_position_embeddings=256,
                        rope_parameters=longrope), ()),
        "olmo2": ("Olmo2Config", "Olmo2ForCausalLM",
                  common(rms_norm_eps=1e-6, tie_word_embeddings=False,
                         rope_parameters={"rope_type": "default", "rope_theta": 500000.0}), ()),
        "stablelm": ("StableLmConfig", "StableLmForCausalLM",
                     common(layer_norm_eps=1e-5, use_qkv_bias=True, tie_word_embeddings=False,
                            rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                             "partial_rotary_factor": 0.25}, partial_rotary_factor=0.25), ()),
        "gpt_neox": ("GPTNeoXConfig", "GPTNeoXForCausalLM",
                     dict(vocab_size=D["vocab"], hidden_size=D["hidden"], intermediate_size=D["intermediate"],
                          num_hidden_layers=D["layers"], num_attention_heads=D["heads"], max_position_embeddings=1024,
                          layer_norm_eps=1e-5, hidden_act="gelu", use_parallel_residual=True, tie_word_embeddings=False,
                          rotary_pct=0.25, rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                                            "partial_rotary_factor": 0.25}), ()),
        "phi": ("PhiConfig", "PhiForCausalLM",
                common(layer_norm_eps=1e-5, hidden_act="gelu_new", partial_rotary_factor=0.5,
                       tie_word_embeddings=False,
                       rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5}),
                ()),
        "ministral3": ("Ministral3Config", "Ministral3ForCausalLM",
                       common(head_dim=D["head_dim"], rms_norm_eps=1e-5, tie_word_embeddings=False,
                              rope_parameters={"rope_type": "yarn", "rope_theta": 1e6, "factor": 4.0,
                                               "original_max_position_embeddings": 64, "beta_fast": 32.0,
                                               "beta_slow": 1.0, "mscale": 1.0, "mscale_all_dim": 1.0,
                                               "llama_4_scaling_beta": 0.1}), ()),
    }


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--archs", default=",".join(arch_specs()))
    p.add_argument("--quants", default="q0f32,q4f16_1")
    p.add_argument("--out", required=True, help="reference.json files go to OUT/<arch>/<quant>/")
    p.add_argument("--export-hf", metavar="DIR", help="also save each HF model + tokenizer.json to DIR/<arch>/")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args()


def build_model(transformers, torch, arch, seed):
    cfg_name, model_name, kw, _ = arch_specs()[arch]
    Config, Model = getattr(transformers, cfg_name), getattr(transformers, model_name)
    cfg = Config(**kw)
    model = llama_family.random_model(torch, cfg, Model, seed)
    print(f"{arch}: {sum(p.numel() for p in model.parameters())} parameters; config "
          f"{ {k: v for k, v in cfg.to_dict().items() if 'rope' in k or 'window' in k or 'layer_types' in k or 'softcap' in k} }")
    print(f"{arch}: parameters {[n for n, _ in model.named_parameters()][:14]} ...")
    return model


def emulate_stored(original, quant, offset_norms):
    """HF name -> the value a folder of `quant` holds, as transformers reads it back (1 + w norms: round(w + 1) - 1)."""
    model_round = q35.f16_round if "f16" in quant else q35.bf16_round
    scale_round = q35.f16_round if quant == "q4f16_1" else q35.bf16_round
    out = {}
    for name, w in original.items():
        w = np.asarray(w, dtype=np.float32)
        if w.ndim == 2 and quant.startswith("q4"):
            out[name] = q35.q4_roundtrip(w, scale_round)
        elif name.endswith(("mlp.dense_h_to_4h.bias", "mlp.dense_4h_to_h.bias")):  # gpt_neox: float32, bf16-encoded
            out[name] = q35.bf16_round(w)
        elif offset_norms and (name.endswith(offset_norms) or name.endswith("model.norm.weight")):
            out[name] = model_round(w + np.float32(1)) - np.float32(1)
        else:
            out[name] = model_round(w)
    return out


def run_arch(torch, transformers, arch, args, prompt, n_prefill):
    offset_norms = arch_specs()[arch][3]
    model = build_model(transformers, torch, arch, args.seed)
    original = {n: p.detach().clone().numpy() for n, p in model.named_parameters()}
    full, decode, prefill = q35.run_logits(torch, model, prompt, n_prefill)
    q35.report_consistency(full, decode, prefill, n_prefill, f"{arch} original")
    if args.export_hf:
        out = Path(args.export_hf) / arch
        model.save_pretrained(str(out))
        q35.write_tokenizer(out / "tokenizer.json")
    for quant in [q for q in args.quants.split(",") if q]:
        state = emulate_stored(original, quant, offset_norms)
        with torch.no_grad():
            for name, p in model.named_parameters():
                p.copy_(torch.from_numpy(state[name]))
        full, decode, prefill = q35.run_logits(torch, model, prompt, n_prefill)
        scale, d_decode = q35.report_consistency(full, decode, prefill, n_prefill, f"{arch}/{quant}")
        if d_decode > 1e-4 * scale:
            print(f"WARNING {arch}/{quant}: transformers' decode disagrees with its full forward ({d_decode:.3g})")
        llama_family.write_reference(Path(args.out) / arch / quant, arch, quant, prompt, n_prefill, full, decode,
                                     torch, transformers, args.seed,
                                     note="transformers fp32 on CPU on the converter's rounding of the weights "
                                          "(families script)")


def main():
    args = parse_args()
    import torch
    import transformers
    print(f"torch {torch.__version__}, transformers {transformers.__version__}")
    torch.set_grad_enabled(False)
    prompt = np.random.default_rng(args.seed).integers(0, D["vocab"], size=150).tolist()
    failed = []
    for arch in [a for a in args.archs.split(",") if a]:
        try:
            run_arch(torch, transformers, arch, args, prompt, 130)
        except Exception as e:  # report and go on: one family's failure must not hide the others'
            import traceback
            traceback.print_exc()
            failed.append(f"{arch}: {type(e).__name__}: {e}")
    for f in failed:
        print("FAILED", f)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
