#!/usr/bin/env bash
# Fetches the pinned Debian packages whose text the default model is trained on, unpacks them into a work
# folder (nothing is installed), and writes the corpus: OUT/train.jsonl, OUT/heldout.jsonl, OUT/sources.json.
# Usage: tools/default_model/prepare_data.sh [OUT_DIR]   (default build/default-model-data)
# Needs apt-get (Debian 12), dpkg-deb and python3. The versions below are those the committed model used;
# apt-get download fails if the mirror no longer carries one, and the script then stops.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-build/default-model-data}"
mkdir -p "$out/debs" "$out/root"
out="$(cd "$out" && pwd)"

packages=(
  "bible-kjv=4.38"                    # the `bible` program that decodes the text below
  "bible-kjv-text=4.38"               # King James Version (public domain text; packaging GPL-2+)
  "fortunes=1:1.99.1-7.3"             # fortune-mod cookie files (BSD)
  "fortunes-min=1:1.99.1-7.3"
  "debian-reference-en=2.100"         # Debian Reference, plain-text edition (GPL-2+)
  "python3.11-doc=3.11.2-6+deb12u9"   # Python docs reST sources: tutorial, FAQ, HOWTOs (PSF licence)
  "wordnet-base=1:3.0-37"             # WordNet 3.0 glosses (WordNet 3.0 licence, permissive)
)

cd "$out/debs"
for p in "${packages[@]}"; do
  name="${p%%=*}"
  ls "${name}"_*.deb >/dev/null 2>&1 || apt-get download "$p"
done
for f in *.deb; do dpkg-deb -x "$f" "$out/root"; done
# Record exactly what was used: package, version, md5 of the .deb.
python3 - "$out" <<'PY'
import hashlib, json, subprocess, sys, pathlib
out = pathlib.Path(sys.argv[1])
rows = []
for deb in sorted((out / "debs").glob("*.deb")):
    f = lambda k: subprocess.check_output(["dpkg-deb", "-f", str(deb), k], text=True).strip()
    rows.append({"package": f("Package"), "version": f("Version"),
                 "md5": hashlib.md5(deb.read_bytes()).hexdigest()})
(out / "packages.json").write_text(json.dumps(rows, indent=1) + "\n")
PY
python3 "$here/prepare_data.py" "$out/root" "$out"
