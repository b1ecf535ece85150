// Prints a GGUF file's header as JSON, parsed by Hugging Face's @huggingface/gguf (an independent
// GGUF parser). Used by src/gguf/oracle_test.cpp to cross-check our writer and reader.
// Output: {"version", "tensor_data_offset", "metadata": {key: {"type", "value"}}, "tensors": [...]}
// BigInts are printed as decimal strings so no precision is lost.
import { gguf } from "@huggingface/gguf";

const path = process.argv[2];
if (!path) {
  console.error("usage: node gguf_dump.mjs FILE.gguf");
  process.exit(2);
}
const res = await gguf(path, { allowLocalFile: true, typedMetadata: true });
const replacer = (_k, v) => (typeof v === "bigint" ? v.toString() : v);
const meta = {};
for (const [k, v] of Object.entries(res.typedMetadata)) {
  if (k === "version" || k === "tensor_count" || k === "kv_count") continue;
  meta[k] = v;
}
const out = {
  version: res.metadata.version,
  tensor_data_offset: res.tensorDataOffset,
  metadata: meta,
  tensors: res.tensorInfos.map((t) => ({ name: t.name, shape: t.shape, dtype: t.dtype, offset: t.offset })),
};
process.stdout.write(JSON.stringify(out, replacer));
