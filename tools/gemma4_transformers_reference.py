#!/usr/bin/env python3
"""Transformers reference logits for a tiny random Gemma 4 text model (gemma4 CPU-reference fixtures).

The sibling of families_transformers_reference.py (same helpers: byte-level tokenizer, the converter's rounding
emulated in numpy, logits capture, reference.json). Gemma 4 needs its own script because the converter folds two
scales into stored tensors (the main embedding times sqrt(hidden), the per-layer embedding times
sqrt(hidden_size_per_layer_input); docs/mlc-architectures.md "gemma4") and because `layer_scalar` is a buffer,
not a parameter.

The tiny model (vocab 256, hidden 64, intermediate 128, 5 layers sliding, sliding, full, sliding, full; heads 2/1;
head_dim 16 on sliding layers, global_head_dim 32 on full ones; hidden_size_per_layer_input 32; the last 2 layers
share the KV of layers 1 (sliding) and 2 (full) and have double-wide MLPs; sliding window 24 < the 150-token
prompt; final soft-cap 1.5; full layers' proportional RoPE with partial_rotary_factor 0.25, theta 1e6) exercises
every part of the forward. hidden_size_per_layer_input is 32 (not smaller) so that every quantized matrix has
whole groups of 32. 1-D parameters + N(0, 0.3), 2-D N(0, 0.5/sqrt(in)), layer_scalar 0.5 + U(0, 1).

Flow (the GPU machine has torch 2.11 + transformers 5.17; the converter runs here):
  GPU machine: python3 tools/gemma4_transformers_reference.py --out $OUT/fx --export-hf $OUT/hf
  here:        ewgpu convert hf/gemma4 tests/fixtures/gemma4_tiny/<quant> --quant <quant> --tokenizer hf/gemma4/tokenizer.json
               then copy fx/gemma4/<quant>/reference.json into tests/fixtures/gemma4_tiny/<quant>/.
"""

import argparse
import importlib.util
import math
import sys
from pathlib import Path

import numpy as np

_spec = importlib.util.spec_from_file_location("llama_family",
                                               Path(__file__).with_name("llama_family_transformers_reference.py"))
llama_family = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(llama_family)
q35 = llama_family.q35

G = dict(vocab=256, hidden=64, intermediate=128, layers=5, heads=2, kv_heads=1, head_dim=16, global_head_dim=32,
         hpl=32, window=24, shared=2, softcap=1.5)
LAYER_TYPES = ["sliding_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention"]


def config_kwargs():
    return dict(vocab_size=G["vocab"], hidden_size=G["hidden"], intermediate_size=G["intermediate"],
                num_hidden_layers=G["layers"], num_attention_heads=G["heads"], num_key_value_heads=G["kv_heads"],
                head_dim=G["head_dim"], global_head_dim=G["global_head_dim"], hidden_activation="gelu_pytorch_tanh",
                max_position_embeddings=1024, rms_norm_eps=1e-6, sliding_window=G["window"],
                layer_types=list(LAYER_TYPES), final_logit_softcapping=G["softcap"],
                vocab_size_per_layer_input=G["vocab"], hidden_size_per_layer_input=G["hpl"],
                num_kv_shared_layers=G["shared"], use_double_wide_mlp=True, attention_k_eq_v=False,
                enable_moe_block=False, tie_word_embeddings=True,
                rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                                 "full_attention": {"rope_type": "proportional", "rope_theta": 1e6,
                                                    "partial_rotary_factor": 0.25}})


def build_model(torch, transformers, seed):
    cfg = transformers.Gemma4TextConfig(**config_kwargs())
    model = llama_family.random_model(torch, cfg, transformers.Gemma4ForCausalLM, seed)
    gen = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for layer in model.model.layers:
            layer.layer_scalar.copy_(0.5 + torch.rand(layer.layer_scalar.shape, generator=gen))
    print(f"gemma4: {sum(p.numel() for p in model.parameters())} parameters; layer_types {cfg.layer_types}; "
          f"rope {cfg.rope_parameters}")
    print("gemma4: tensors", [(n, tuple(t.shape)) for n, t in model.state_dict().items()])
    return model


def emulate_stored(original, quant):
    """HF name -> the value a folder of `quant` holds, read back at transformers' scale: the two embeddings are
    stored pre-multiplied (sqrt(hidden), sqrt(hpl)), so they are rounded at that scale and divided back."""
    model_round = q35.f16_round if "f16" in quant else q35.bf16_round
    scale_round = q35.f16_round if quant == "q4f16_1" else q35.bf16_round
    folded = {"model.embed_tokens.weight": math.sqrt(G["hidden"]),
              "model.embed_tokens_per_layer.weight": math.sqrt(G["hpl"])}
    out = {}
    for name, w in original.items():
        s = folded.get(name, 1.0)
        w = (np.asarray(w, dtype=np.float64) * s).astype(np.float32)
        if w.ndim == 2 and quant.startswith("q4"):
            w = q35.q4_roundtrip(w, scale_round)
        else:
            w = model_round(w)
        out[name] = (w.astype(np.float64) / s).astype(np.float32)
    return out


def hidden_states(torch, model, prompt):
    ids = torch.tensor([prompt], dtype=torch.long)
    out = model(input_ids=ids, use_cache=False, output_hidden_states=True)
    return np.stack([h[0].double().numpy() for h in out.hidden_states])  # [L + 1, T, H]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quants", default="q0f32,q4f16_1")
    p.add_argument("--out", required=True, help="reference.json files go to OUT/gemma4/<quant>/")
    p.add_argument("--export-hf", metavar="DIR", help="also save the HF model + tokenizer.json to DIR/gemma4/")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    import torch
    import transformers
    print(f"torch {torch.__version__}, transformers {transformers.__version__}")
    torch.set_grad_enabled(False)
    prompt = np.random.default_rng(args.seed).integers(0, G["vocab"], size=150).tolist()
    n_prefill = 130
    model = build_model(torch, transformers, args.seed)
    original = {n: t.detach().clone().numpy() for n, t in model.state_dict().items()
                if n != "lm_head.weight" and t.dtype == torch.float32}
    full, decode, prefill = q35.run_logits(torch, model, prompt, n_prefill)
    q35.report_consistency(full, decode, prefill, n_prefill, "gemma4 original")
    if args.export_hf:
        out = Path(args.export_hf) / "gemma4"
        model.save_pretrained(str(out))
        q35.write_tokenizer(out / "tokenizer.json")
    params = dict(model.state_dict())
    for quant in [q for q in args.quants.split(",") if q]:
        state = emulate_stored(original, quant)
        with torch.no_grad():
            for name, w in state.items():
                params[name].copy_(torch.from_numpy(w))
        full, decode, prefill = q35.run_logits(torch, model, prompt, n_prefill)
        scale, d_decode = q35.report_consistency(full, decode, prefill, n_prefill, f"gemma4/{quant}")
        if d_decode > 1e-4 * scale:
            print(f"WARNING gemma4/{quant}: transformers' decode disagrees with its full forward ({d_decode:.3g})")
        llama_family.write_reference(Path(args.out) / "gemma4" / quant, "gemma4", quant, prompt, n_prefill, full,
                                     decode, torch, transformers, args.seed,
                                     note="transformers fp32 on CPU on the converter's rounding of the weights "
                                          "(gemma4 script)")
        np.save(Path(args.out) / "gemma4" / quant / "hidden_states.npy", hidden_states(torch, model, prompt))
    return 0


if __name__ == "__main__":
    sys.exit(main())
