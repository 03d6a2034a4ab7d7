#!/usr/bin/env python3
"""Builds the default model's corpus from unpacked Debian packages (see prepare_data.sh).

Usage: prepare_data.py ROOT OUT
  ROOT: the folder the .debs were unpacked into (holds usr/lib/bible.data, usr/share/games/fortunes, ...)
  OUT:  writes train.jsonl, heldout.jsonl (one {"source", "kind", "text"} per line) and sources.json

Documents: a Bible chapter, a fortune cookie, a section of the Debian Reference or of a Python doc page, and
question/answer pairs in the chatml form the model's conversation template uses (WordNet glosses, Python FAQ
entries, Bible verses by reference, quotes by author). A document is held out when crc32(text) % 50 == 0, so
the split depends only on the text, never on order or on a random generator. Standard library only.
"""
import json
import pathlib
import random
import re
import subprocess
import sys
import zlib
import gzip

SYSTEM = "You are a helpful assistant."


def chat(question, answer):
    return (f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\n{question}<|im_end|>\n"
            f"<|im_start|>assistant\n{answer}<|im_end|>\n")


def clean(s):
    s = s.replace("\r", "").replace("\t", "    ")
    s = re.sub(r"[ ]+\n", "\n", s)
    return re.sub(r"\n{3,}", "\n\n", s).strip()


# ---------------------------------------------------------------- Bible (KJV): one document per chapter
def bible(root):
    txt = subprocess.check_output([str(root / "usr/bin/bible"), "-p", str(root / "usr/lib"), "-l0",
                                   "gen1:1-rev22:21"], text=True)
    docs, verses = [], []
    chapter, lines = None, []
    for line in txt.split("\n"):
        m = re.match(r"^(\S.*\S) (\d+)$", line)
        if m and not line.startswith(" "):
            if chapter:
                docs.append((chapter, lines))
            chapter, lines = line.strip(), []
            continue
        m = re.match(r"^\s+(\d+) (.*)$", line)
        if m and chapter:
            lines.append((int(m.group(1)), m.group(2).strip()))
    if chapter:
        docs.append((chapter, lines))
    out = []
    for chapter, vs in docs:
        out.append(("bible", "text", chapter + "\n\n" + " ".join(v for _, v in vs)))
        for n, v in vs:
            verses.append((f"{chapter}:{n}", v))
    return out, verses


# ---------------------------------------------------------------- fortunes: one document per cookie
def read_text(p):
    b = p.read_bytes()
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return b.decode("latin-1")


def fortunes(root):
    d = root / "usr/share/games/fortunes"
    names = sorted({p.name[:-3] if p.name.endswith(".u8") else p.name for p in d.iterdir()
                    if not p.name.endswith(".dat") and p.is_file()})
    out, quotes = [], []
    for name in names:
        if name in ("ascii-art",):
            continue
        p = d / (name + ".u8") if (d / (name + ".u8")).exists() else d / name
        for cookie in read_text(p).split("\n%\n"):
            c = clean(cookie.strip("%\n"))
            if len(c) < 20:
                continue
            out.append(("fortunes", "text", c))
            m = re.match(r"^(.*\S)\s*\n\s*-- ([A-Z][A-Za-z.' ]{2,40})(,.*)?$", c, re.S)
            if m and len(m.group(1)) < 400:
                quotes.append((m.group(2).strip(), clean(m.group(1))))
    return out, quotes


# ---------------------------------------------------------------- Debian Reference: one document per section
def debian_reference(root):
    txt = gzip.open(root / "usr/share/debian-reference/debian-reference.en.txt.gz", "rt").read()
    txt = txt.replace("\u00a0", " ")
    # Sections start with a numbered heading at the start of a line: "1.2.3. Title".
    parts = re.split(r"\n(?=\d+(?:\.\d+)*\. [A-Z])", txt)
    out = []
    for part in parts:
        # Unwrap the 4-space-indented paragraphs; keep command lines ("# ...", "$ ...") as they are.
        paras = []
        for para in part.split("\n\n"):
            lines = [l.strip() for l in para.split("\n") if l.strip()]
            if not lines:
                continue
            paras.append("\n".join(lines) if lines[0][:2] in ("# ", "$ ") else " ".join(lines))
        c = clean("\n\n".join(paras))
        # Skip the table of contents and sections that are mostly tables or command listings.
        if (len(c) < 200 or c.count("....") > 3 or c.count("|") > 10 or
                len(re.findall(r"\d+\.\d+\.\d+\. ", c)) > 4):
            continue
        letters = sum(ch.isalpha() or ch == " " for ch in c)
        if letters < 0.8 * len(c):
            continue
        out.append(("debian-reference", "text", c[:6000]))
    return out


# ---------------------------------------------------------------- Python docs (reST): sections + FAQ pairs
def rst_to_text(s):
    s = re.sub(r":[a-z:]+:`~?([^`<]*?)(?:\s*<[^>]*>)?`", r"\1", s)   # :ref:`text <target>` -> text
    s = re.sub(r"`([^`<]+?)\s*<[^>]+>`_+", r"\1", s)                   # `text <url>`_ -> text
    s = re.sub(r"``([^`]+)``", r"\1", s)
    s = re.sub(r"\*\*([^*]+)\*\*", r"\1", s)
    out, skip = [], False
    for line in s.split("\n"):
        if re.match(r"^\.\. ", line):
            skip = True            # a directive and its indented body
            continue
        if skip and (line.startswith("   ") or not line.strip()):
            continue
        skip = False
        if re.match(r"^([=\-~^*#\"'`+])\1{3,}\s*$", line):
            continue               # heading underline
        out.append(line)
    return clean("\n".join(out))


def python_docs(root):
    base = root / "usr/share/doc/python3.11/html/_sources"
    out, faq = [], []
    files = sorted(list((base / "tutorial").glob("*.rst.txt")) + list((base / "howto").glob("*.rst.txt")) +
                   list((base / "faq").glob("*.rst.txt")))
    for f in files:
        raw = f.read_text(encoding="utf-8", errors="replace")
        # Split before each heading (a line followed by an underline of the same length or more).
        pieces = re.split(r"\n(?=[^\n]+\n[=\-~^*#]{4,}\n)", raw)
        for piece in pieces:
            m = re.match(r"^([^\n]+)\n[=\-~^*#]{4,}\n(.*)$", piece, re.S)
            title, body = (m.group(1).strip(), m.group(2)) if m else ("", piece)
            text = rst_to_text(body)
            if len(text) < 150:
                continue
            if f.parent.name == "faq" and title.endswith("?"):
                answer = text.split("\n\n")
                answer = "\n\n".join(answer[:2])
                if 40 < len(answer) < 1500 and ">>>" not in answer:
                    faq.append((title, answer))
            out.append(("python-docs", "text", (title + "\n\n" + text if title else text)[:6000]))
    return out, faq


# ---------------------------------------------------------------- WordNet glosses as questions
def wordnet(root):
    pairs = []
    pos_name = {"noun": "noun", "verb": "verb", "adj": "adjective", "adv": "adverb"}
    for pos in ("noun", "verb", "adj", "adv"):
        seen = set()
        for line in (root / f"usr/share/wordnet/data.{pos}").read_text(encoding="latin-1").split("\n"):
            if not line or line.startswith(" ") or "|" not in line:
                continue
            head, gloss = line.split("|", 1)
            f = head.split()
            word = f[4].replace("_", " ")
            if not re.fullmatch(r"[a-z][a-z ]{2,24}", word) or word in seen:
                continue
            seen.add(word)                       # the first (most frequent) sense only
            parts = [g.strip() for g in gloss.strip().split(";")]
            definition = parts[0]
            examples = [p.strip('" ') for p in parts[1:] if p.startswith('"')]
            if len(definition) < 8:
                continue
            a = f"\"{word}\" is {'an' if pos in ('adj', 'adv') else 'a'} {pos_name[pos]}. It means {definition}."
            if examples:
                a += f" For example: \"{examples[0]}\"."
            pairs.append((f"What does \"{word}\" mean?", a))
    return pairs


def main():
    root, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    rng = random.Random(14)
    docs = []
    b, verses = bible(root)
    docs += b
    fo, quotes = fortunes(root)
    docs += fo
    docs += debian_reference(root)
    py, faq = python_docs(root)
    docs += py
    qa = [("wordnet-qa", q, a) for q, a in rng.sample(wordnet(root), 12000)]
    qa += [("python-faq-qa", q, a) for q, a in faq]
    qa += [("bible-qa", f"What does {ref} say?", v) for ref, v in rng.sample(verses, 4000)]
    qa += [("quote-qa", f"Tell me something {who} said.", q) for who, q in quotes]
    docs += [(src, "chat", chat(q, a)) for src, q, a in qa]

    seen, train, held = set(), [], []
    for src, kind, text in docs:
        if text in seen:
            continue
        seen.add(text)
        row = json.dumps({"source": src, "kind": kind, "text": text}, ensure_ascii=False)
        (held if zlib.crc32(text.encode("utf-8")) % 50 == 0 else train).append(row)
    (out / "train.jsonl").write_text("\n".join(train) + "\n", encoding="utf-8")
    (out / "heldout.jsonl").write_text("\n".join(held) + "\n", encoding="utf-8")
    stats = {}
    for rows, split in ((train, "train"), (held, "heldout")):
        for r in rows:
            j = json.loads(r)
            s = stats.setdefault(j["source"], {"train_docs": 0, "train_bytes": 0, "heldout_docs": 0,
                                               "heldout_bytes": 0})
            s[split + "_docs"] += 1
            s[split + "_bytes"] += len(j["text"].encode("utf-8"))
    pk = out / "packages.json"
    summary = {"packages": json.loads(pk.read_text()) if pk.exists() else [], "sources": stats}
    (out / "sources.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(stats, indent=1))


if __name__ == "__main__":
    main()
