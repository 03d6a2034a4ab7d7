// JS side of `ewgpu bench tokenizer`: encode speed of @lenml/tokenizers (the transformers.js tokenizer
// WebLLM-style apps run in the browser) on the same chunks the C++ side encodes.
//
// usage: node bench/tokenizer_bench.mjs CHUNKS.json model [model ...]
// CHUNKS.json is a JSON array of strings. Prints one JSON line per model:
//   {"model": ..., "mb_per_s": ..., "ids": <ids per pass>, "bytes": <UTF-8 bytes per pass>, "passes": n}
// One untimed warm-up pass, then timed passes until at least one second has elapsed.
import fs from "node:fs";
import { loadReference, requireNodeModules } from "../tests/tokenizer/reference_ids.mjs";

const [chunksFile, ...models] = process.argv.slice(2);
if (!chunksFile || models.length === 0) {
  console.error("usage: node tokenizer_bench.mjs CHUNKS.json model [model ...]");
  process.exit(2);
}
requireNodeModules();
const chunks = JSON.parse(fs.readFileSync(chunksFile, "utf8"));
const bytes = chunks.reduce((n, c) => n + Buffer.byteLength(c, "utf8"), 0);

for (const model of models) {
  const tok = await loadReference(model);
  const pass = () => {
    let ids = 0;
    for (const c of chunks) ids += tok.encode(c, { add_special_tokens: false }).length;
    return ids;
  };
  const ids = pass();
  let passes = 0;
  const t0 = process.hrtime.bigint();
  let elapsed = 0;
  do {
    pass();
    ++passes;
    elapsed = Number(process.hrtime.bigint() - t0) / 1e9;
  } while (elapsed < 1.0);
  console.log(JSON.stringify({ model, mb_per_s: (bytes * passes) / elapsed / 1e6, ids, bytes, passes }));
}
