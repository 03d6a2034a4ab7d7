#!/usr/bin/env python3
"""Trains the default model: a byte-level BPE tokenizer and a small Qwen3-shaped model on the corpus that
prepare_data.sh writes, then computes the expected values the engine's end-to-end test checks.

Usage: train.py DATA_DIR OUT_DIR [--minutes M] [--steps N]
  DATA_DIR: train.jsonl and heldout.jsonl from prepare_data.sh
  OUT_DIR:  config.json + model.safetensors (float16, a HF checkpoint), tokenizer.json, reference.json,
            samples.txt, train.log

Needs torch, transformers and tokenizers (ran with torch 2.11, transformers 5.x on one H200). Seeds are fixed;
the result is reproducible up to the nondeterminism of CUDA kernels. Training keeps the weights of the step with
the lowest held-out loss. The saved weights are rounded to float16, and every expected value in reference.json is
computed in float32 from those rounded weights, so the MLC folders `ewgpu convert` makes from the checkpoint
(q0f16 exactly; q4f16_1 through the same quantizer as src/model/quantize.cpp, re-implemented below) hold the
weights the values were computed with.
"""
import argparse
import json
import math
import os
import pathlib
import random
import re
import time

import numpy as np
import torch
import torch.nn.functional as F
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import Qwen3Config, Qwen3ForCausalLM

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]  # ids 0, 1, 2 (chatml's stop id is 2)
EOS = 0
SEQ = 512
PROMPTS = ["Once upon a time", "In the beginning", "The meaning of life is", "Python is a", "The Debian system"]
CHAT_QUESTIONS = ["What does \"river\" mean?", "Tell me something Mark Twain said.", "What is Python?"]
SYSTEM = "You are a helpful assistant."


def log(msg, f=[None]):
    print(msg, flush=True)
    if f[0] is None:
        f[0] = open(os.path.join(ARGS.out, "train.log"), "a")
    f[0].write(msg + "\n")
    f[0].flush()


def load(path):
    return [json.loads(l) for l in open(path, encoding="utf-8") if l.strip()]


def train_tokenizer(docs, vocab):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab, min_frequency=2, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    special = re.compile("|".join(re.escape(s) for s in SPECIALS))
    tok.train_from_iterator((special.sub("", d["text"]) for d in docs), trainer=trainer)
    for i, s in enumerate(SPECIALS):
        assert tok.token_to_id(s) == i, s
    return tok


def stream(tok, docs):
    ids = []
    for e in tok.encode_batch([d["text"] for d in docs]):
        ids.extend(e.ids)
        ids.append(EOS)
    return torch.tensor(ids, dtype=torch.long)


# ------------------------------------------------------------------ q4f16_1 as src/model/quantize.cpp does it
def q4f16_1_roundtrip(w):
    """w: [out, in] float32. Groups of 32 along the input axis; scale = max|w| / 7 rounded to f16;
    code = clamp(floor(w / scale + 7 + 0.5), 0, 14); value = (code - 7) * scale (in f32)."""
    out, inp = w.shape
    g = w.reshape(out, inp // 32, 32)
    scale = (g.abs().amax(dim=-1, keepdim=True) / 7.0).half().float()
    safe = torch.where(scale == 0, torch.ones_like(scale), scale)
    code = torch.clamp(torch.floor(g / safe + 7.0 + 0.5), 0, 14)
    return ((code - 7.0) * scale).reshape(out, inp)


def quantized_copy(model):
    m = Qwen3ForCausalLM(model.config).float().cuda().eval()
    sd = {k: v.clone() for k, v in model.state_dict().items()}
    for k, v in sd.items():
        if v.dim() == 2:  # every linear weight and the (tied) embedding
            sd[k] = q4f16_1_roundtrip(v.float())
    m.load_state_dict(sd)
    m.tie_weights()
    return m


@torch.no_grad()
def nll_per_position(model, ids):
    """ids: [n] -> -log p(ids[t+1] | ids[:t+1]) for t < n-1, float64 list."""
    x = ids.unsqueeze(0).cuda()
    logits = model(input_ids=x).logits[0].float()
    lp = torch.log_softmax(logits[:-1].double(), dim=-1)
    return (-lp.gather(1, x[0, 1:].unsqueeze(1)).squeeze(1)).tolist()


@torch.no_grad()
def stream_ppl(model, ids):
    total, count = 0.0, 0
    for s in range(0, len(ids) - 1, SEQ):
        chunk = ids[s:s + SEQ + 1]
        if len(chunk) < 2:
            break
        nll = nll_per_position(model, chunk)
        total += sum(nll)
        count += len(nll)
    return math.exp(total / count), count


@torch.no_grad()
def greedy(model, ids, n):
    x = torch.tensor([ids], device="cuda")
    out, margins = [], []
    for _ in range(n):
        logits = model(input_ids=x).logits[0, -1].float()
        top = torch.topk(logits, 2)
        out.append(int(top.indices[0]))
        margins.append(float(top.values[0] - top.values[1]))
        x = torch.cat([x, top.indices[:1].view(1, 1)], dim=1)
    return out, margins


@torch.no_grad()
def sample(model, tok, ids, n, temperature=0.7, top_p=0.9, seed=1):
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.tensor([ids], device="cuda")
    for _ in range(n):
        logits = model(input_ids=x).logits[0, -1].float() / temperature
        p = torch.softmax(logits, -1)
        sp, si = torch.sort(p, descending=True)
        keep = torch.cumsum(sp, 0) - sp < top_p
        sp = sp * keep
        nxt = si[torch.multinomial(sp / sp.sum(), 1, generator=g)]
        if int(nxt) in (EOS, 2):
            break
        x = torch.cat([x, nxt.view(1, 1)], dim=1)
    return tok.decode(x[0, len(ids):].tolist(), skip_special_tokens=False)


def chat_prompt(q):
    return f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\n{q}<|im_end|>\n<|im_start|>assistant\n"


def save_checkpoint(model, tok, out):
    half = Qwen3ForCausalLM(model.config)
    half.load_state_dict({k: v.detach().half().float().cpu() for k, v in model.state_dict().items()})
    half = half.half()
    half.save_pretrained(out, safe_serialization=True)
    tok.save(os.path.join(out, "tokenizer.json"))


def main():
    t0 = time.time()
    random.seed(14)
    np.random.seed(14)
    torch.manual_seed(14)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    train_docs = load(os.path.join(ARGS.data, "train.jsonl"))
    held_docs = load(os.path.join(ARGS.data, "heldout.jsonl"))
    tok = train_tokenizer(train_docs, ARGS.vocab)
    tok.save(os.path.join(ARGS.out, "tokenizer.json"))
    random.Random(14).shuffle(train_docs)
    train_ids = stream(tok, train_docs).cuda()
    held_ids = stream(tok, held_docs)
    text_bytes = sum(len(d["text"].encode()) for d in train_docs)
    log(f"tokenizer: vocab {tok.get_vocab_size()}, train {len(train_ids)} tokens ({text_bytes / len(train_ids):.2f} "
        f"bytes/token), held-out {len(held_ids)} tokens, {time.time() - t0:.1f} s")

    cfg = Qwen3Config(vocab_size=ARGS.vocab, hidden_size=ARGS.hidden, intermediate_size=ARGS.intermediate,
                      num_hidden_layers=ARGS.layers, num_attention_heads=ARGS.heads, num_key_value_heads=ARGS.kv_heads,
                      head_dim=ARGS.hidden // ARGS.heads, max_position_embeddings=SEQ, rms_norm_eps=1e-6,
                      tie_word_embeddings=True, bos_token_id=EOS, eos_token_id=2, pad_token_id=EOS,
                      rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, attention_dropout=0.0)
    model = Qwen3ForCausalLM(cfg).cuda()
    nparams = sum(p.numel() for p in model.parameters())
    log(f"model: {nparams} parameters, config {json.dumps(cfg.to_dict(), default=str)}")

    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    nodecay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": ARGS.wd}, {"params": nodecay, "weight_decay": 0.0}],
                            lr=ARGS.lr, betas=(0.9, 0.95), fused=True)
    gen = torch.Generator(device="cuda").manual_seed(14)
    held_eval = held_ids[: (len(held_ids) // (SEQ + 1)) * (SEQ + 1)].view(-1, SEQ + 1)[:96].cuda()

    def lr_at(step):
        if step < ARGS.warmup:
            return ARGS.lr * (step + 1) / ARGS.warmup
        p = min(1.0, (step - ARGS.warmup) / max(1, ARGS.steps - ARGS.warmup))
        return ARGS.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * p)))

    @torch.no_grad()
    def held_loss():
        model.eval()
        tot = 0.0
        for i in range(0, len(held_eval), 32):
            b = held_eval[i:i + 32]
            with torch.autocast("cuda", dtype=torch.bfloat16):
                logits = model(input_ids=b[:, :-1]).logits
            tot += F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), b[:, 1:].reshape(-1),
                                   reduction="sum").item()
        model.train()
        return tot / held_eval[:, 1:].numel()

    best, best_state, best_step, stale = float("inf"), None, -1, 0
    t_train = time.time()
    model.train()
    step = 0
    for step in range(ARGS.steps):
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        off = torch.randint(0, len(train_ids) - SEQ - 1, (ARGS.batch,), device="cuda", generator=gen)
        b = train_ids[off.unsqueeze(1) + torch.arange(SEQ + 1, device="cuda")]
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(input_ids=b[:, :-1]).logits
        loss = F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), b[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        last = step == ARGS.steps - 1 or time.time() - t_train > ARGS.minutes * 60
        if step % ARGS.eval_every == 0 or last:
            hl = held_loss()
            elapsed = time.time() - t_train
            log(f"step {step} lr {lr_at(step):.2e} train {loss.item():.4f} held-out {hl:.4f} "
                f"(ppl {math.exp(hl):.2f}) {elapsed:.0f} s")
            if hl < best:
                best, best_step, stale = hl, step, 0
                best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
            else:
                stale += 1
            if step - ARGS.last_save >= ARGS.save_every and best_state is not None:
                ARGS.last_save = step
                cur = {k: v.detach().clone() for k, v in model.state_dict().items()}
                model.load_state_dict(best_state)
                save_checkpoint(model, tok, ARGS.out)
                model.load_state_dict(cur)
            if stale >= ARGS.patience:
                log(f"stopping: no held-out improvement in {stale} evaluations")
                break
        if last:
            break
    log(f"trained {step + 1} steps in {time.time() - t_train:.0f} s; best held-out loss {best:.4f} at step "
        f"{best_step}")
    model.load_state_dict(best_state)
    save_checkpoint(model, tok, ARGS.out)

    # ---------------------------------------------------------------- expected values, from the f16 weights
    fp = Qwen3ForCausalLM(cfg).float().cuda().eval()
    fp.load_state_dict({k: v.half().float() for k, v in best_state.items()})
    fp.tie_weights()
    q4 = quantized_copy(fp)
    ref = {"model": {"parameters": nparams, "steps": step + 1, "best_step": best_step,
                     "train_tokens": len(train_ids), "heldout_tokens": len(held_ids)}}
    for name, m in (("fp", fp), ("q4f16_1", q4)):
        ppl, n = stream_ppl(m, held_ids)
        ref[f"heldout_ppl_{name}"] = ppl
        log(f"held-out perplexity ({name}): {ppl:.4f} over {n} predictions")
    ref["heldout_predictions"] = n

    # The engine test's slices: the first held-out document of each source, its first 128 tokens.
    slices, seen = [], set()
    for d in held_docs:
        if d["source"] in seen or d["source"] in ("python-faq-qa",):
            continue
        ids = tok.encode(d["text"]).ids[:128]
        if len(ids) < 128:
            continue
        seen.add(d["source"])
        e = {"source": d["source"], "text": tok.decode(ids, skip_special_tokens=False), "ids": ids}
        for name, m in (("fp", fp), ("q4f16_1", q4)):
            nll = nll_per_position(m, torch.tensor(ids))
            e[f"nll_{name}"] = nll
        slices.append(e)
    for name in ("fp", "q4f16_1"):
        tot = sum(sum(e[f"nll_{name}"]) for e in slices)
        cnt = sum(len(e[f"nll_{name}"]) for e in slices)
        ref[f"slices_ppl_{name}"] = math.exp(tot / cnt)
        log(f"test slices perplexity ({name}): {ref[f'slices_ppl_{name}']:.4f} over {cnt} predictions")
    ref["slices"] = slices

    ref["greedy"] = []
    for p in PROMPTS + [chat_prompt(q) for q in CHAT_QUESTIONS]:
        ids = tok.encode(p).ids
        e = {"prompt": p, "prompt_ids": ids}
        for name, m in (("fp", fp), ("q4f16_1", q4)):
            out, margins = greedy(m, ids, 32)
            e[f"ids_{name}"], e[f"margins_{name}"] = out, margins
            e[f"text_{name}"] = tok.decode(out, skip_special_tokens=False)
        log(f"greedy {p!r}: fp {e['text_fp']!r} | q4 {e['text_q4f16_1']!r} | min margin fp "
            f"{min(e['margins_fp']):.4f}")
        ref["greedy"].append(e)
    with open(os.path.join(ARGS.out, "reference.json"), "w") as f:
        json.dump(ref, f)
    with open(os.path.join(ARGS.out, "samples.txt"), "w") as f:
        for p in PROMPTS + [chat_prompt(q) for q in CHAT_QUESTIONS]:
            for seed in (1, 2):
                for name, m in (("fp", fp), ("q4f16_1", q4)):
                    f.write(f"=== {name} seed {seed} {p!r}\n{sample(m, tok, tok.encode(p).ids, 80, seed=seed)}\n")
    log(f"done in {time.time() - t0:.0f} s")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("out")
    ap.add_argument("--minutes", type=float, default=5.5)
    ap.add_argument("--steps", type=int, default=1400)
    ap.add_argument("--batch", type=int, default=48)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--wd", type=float, default=0.1)
    ap.add_argument("--vocab", type=int, default=4096)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--intermediate", type=int, default=768)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--eval-every", type=int, default=250)
    ap.add_argument("--save-every", type=int, default=1000)
    ap.add_argument("--patience", type=int, default=6)
    ARGS = ap.parse_args()
    ARGS.last_save = 0
    os.makedirs(ARGS.out, exist_ok=True)
    main()
