// apps/gguf/main.cpp: ds4-gguf, the GGUF tool. Flag parsing and dispatch only; each subcommand
// lives in its own file (info.cpp, ...).
#include <CLI/CLI.hpp>
#include <cstdio>

#include "apps/gguf/commands.h"
#include "model/inventory.h"
#include "tools/convert/convert.h"

int main(int argc, char** argv) {
  using namespace ds4::apps::gguf_tool;
  CLI::App app{"ds4-gguf: inspect and produce DeepSeek V4 GGUF files"};
  app.require_subcommand(1);

  InfoOptions info;
  CLI::App* info_cmd =
      app.add_subcommand("info", "print header, metadata and tensor table of a GGUF file");
  info_cmd->add_option("file", info.path, "GGUF file")->required();
  info_cmd
      ->add_option("--max-array-items", info.max_array_items,
                   "array items shown before abbreviating")
      ->check(CLI::Range(0, 1 << 20));

  VocabOptions vocab;
  CLI::App* vocab_cmd = app.add_subcommand(
      "vocab", "build a vocabulary-only GGUF from a Hugging Face tokenizer.json");
  vocab_cmd->add_option("tokenizer_json", vocab.tokenizer_json, "tokenizer.json")->required();
  vocab_cmd->add_option("-o,--output", vocab.output, "output GGUF")->required();
  vocab_cmd->add_option("--n-vocab", vocab.n_vocab, "vocabulary size")
      ->check(CLI::Range(256, 1 << 24));

  TokenizeOptions tokenize;
  CLI::App* tokenize_cmd =
      app.add_subcommand("tokenize", "tokenize standard input with a GGUF's vocabulary");
  tokenize_cmd->add_option("file", tokenize.path, "model or vocabulary GGUF")->required();
  tokenize_cmd
      ->add_option("--chat", tokenize.chat, "render stdin as one user turn first (none|high|max)")
      ->check(CLI::IsMember({"none", "high", "max"}));
  bool ids_only = false;  // the default; accepted for symmetry with --pieces
  auto* ids_flag = tokenize_cmd->add_flag("--ids", ids_only, "print token ids (default)");
  tokenize_cmd->add_flag("--pieces", tokenize.pieces, "print vocabulary pieces")
      ->excludes(ids_flag);
  tokenize_cmd->add_flag("--text", tokenize.text_only,
                         "do not recognise special tokens in the input");

  CheckOptions check;
  CLI::App* check_cmd =
      app.add_subcommand("check", "validate a model GGUF against its shape; lists every problem");
  check_cmd->add_option("file", check.path, "model GGUF")->required();

  SynthCmdOptions synth;
  CLI::App* synth_cmd =
      app.add_subcommand("synth", "write a random-weight model in the published layout");
  synth_cmd->add_option("--shape", synth.shape, "flash, pro, tiny or small")->capture_default_str();
  synth_cmd->add_option("--quant", synth.quant, "f32, f16, q8, q2 or q4")->capture_default_str();
  synth_cmd->add_option("--seed", synth.seed, "weights seed")->capture_default_str();
  synth_cmd
      ->add_option("--vocab", synth.vocab,
                   "vocabulary GGUF (ds4-gguf vocab) for the tokenizer keys")
      ->required();
  auto* synth_out = synth_cmd->add_option("-o,--output", synth.output, "output GGUF");
  auto* synth_hf =
      synth_cmd->add_option("--hf-dir", synth.hf_dir,
                            "write the f32 weights as a Hugging Face checkpoint directory instead");
  synth_out->excludes(synth_hf);
  synth_cmd->require_option(1, 0);
  synth_cmd->add_flag("--mtp", synth.mtp, "write the optional MTP file's tensors");
  synth_cmd->add_flag("--decisive-routing", synth.decisive_routing,
                      "selection biases in wide tiers: every engine picks the same experts");
  synth_cmd->add_flag("--decisive", synth.decisive,
                      "decisive routing, indexer (scores all 0) and sampling (head rows are "
                      "embedding rows: the next token's logit stands out)");
  synth_cmd
      ->add_option("--branch-shift", synth.branch_shift,
                   "scale the sublayers' output projections by 2^-N (default: 0, or "
                   "the decisive law's with --decisive)")
      ->check(CLI::Range(0, 16));
  synth_cmd
      ->add_option("--n-layer", synth.n_layer,
                   "only the shape's first N layers, declared as a test shape (a Flash-wide file "
                   "that fits a smaller GPU)")
      ->check(CLI::Range(1, 128));
  synth_cmd->add_option("-t,--threads", synth.threads, "threads (0: all cores)")
      ->check(CLI::Range(0, 4096));

  TrafficOptions traffic;
  CLI::App* traffic_cmd = app.add_subcommand(
      "traffic", "bytes one decoded token reads (weights and KV) for a shape and recipe");
  traffic_cmd->add_option("--shape", traffic.shape, "flash, pro, tiny or small")
      ->capture_default_str();
  traffic_cmd->add_option("--quant", traffic.quant, "f32, f16, q8, q2 or q4")
      ->capture_default_str();
  traffic_cmd->add_option("--ctx", traffic.contexts, "context sizes for the KV-side reads")
      ->delimiter(',')
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  traffic_cmd->add_option("--gbps", traffic.gbps, "memory bandwidth (GB/s) for a roofline column")
      ->check(CLI::NonNegativeNumber);

  SplitCmdOptions split;
  CLI::App* split_cmd = app.add_subcommand(
      "split", "write the slice of a model file that one distributed process holds");
  split_cmd->add_option("file", split.input, "model GGUF (or a slice file holding the layers)")
      ->required();
  split_cmd
      ->add_option("--layers", split.layers,
                   "A:B (layers A to B) or A:output (A to the last layer and the output head)")
      ->required();
  split_cmd->add_option("-o,--output", split.output, "output slice GGUF")->required();

  QuantizeCmdOptions quant;
  CLI::App* quant_cmd = app.add_subcommand(
      "quantize", "re-encode a model file's float routed experts to a published recipe");
  quant_cmd->add_option("file", quant.input, "model GGUF with F32, F16 or BF16 routed experts")
      ->required();
  quant_cmd->add_option("-o,--output", quant.output, "output GGUF")->required();
  quant_cmd
      ->add_option("--quant", quant.quant,
                   "q2 (IQ2_XXS gate/up, Q2_K down), q4 (Q4_K) or q8 (Q8_0): the experts only")
      ->capture_default_str();
  quant_cmd->add_option("--imatrix", quant.imatrix,
                        "importance matrix (ds4-gguf imatrix): weigh each column's error");
  quant_cmd->add_option("--q4-last", quant.q4_last, "with q2: the last N layers' experts at q4")
      ->check(CLI::Range(0, 1 << 20));
  quant_cmd->add_option("-t,--threads", quant.threads, "threads (0: all cores)")
      ->check(CLI::Range(0, 4096));
  quant_cmd->add_flag("--progress", quant.progress, "one line per expert tensor on stderr");

  SpliceCmdOptions splice;
  CLI::App* splice_cmd = app.add_subcommand(
      "splice", "one model file from slice files, or from layers of files of one shape");
  splice_cmd
      ->add_option(
          "files", splice.inputs,
          "model or slice GGUFs of one shape; each tensor comes from the last that holds it")
      ->required();
  splice_cmd->add_option("-o,--output", splice.output, "output GGUF")->required();

  QualityCmdOptions quality;
  CLI::App* quality_cmd =
      app.add_subcommand("quality", "score a model file against recorded (official) continuations");
  quality_cmd->add_option("file", quality.model, "model GGUF")->required();
  quality_cmd
      ->add_option("--vectors", quality.vectors,
                   "continuations in the official vector format (official.vec)")
      ->required();
  quality_cmd->add_option("--csv", quality.csv, "also write the table as CSV");
  quality_cmd->add_option("--record", quality.record,
                          "record the model's own greedy continuations of the cases here instead");
  quality_cmd->add_option("--steps", quality.steps, "--record: tokens per case (0: the case's)")
      ->check(CLI::Range(0, 1 << 16));
  quality_cmd->add_option("--top", quality.top, "--record: alternatives per step")
      ->check(CLI::Range(1, 1024));
  quality_cmd->add_option("-t,--threads", quality.threads, "threads (0: all cores)")
      ->check(CLI::Range(0, 4096));

  ImatrixCmdOptions imx;
  CLI::App* imx_cmd = app.add_subcommand(
      "imatrix", "accumulate the routed experts' importance matrix over a calibration corpus");
  imx_cmd->add_option("file", imx.model, "model GGUF");
  imx_cmd->add_option("--backend", imx.backend, "cpu or cuda")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  imx_cmd->add_option("--text", imx.text, "calibration text files (cut into --chunk tokens)");
  imx_cmd->add_option("--chat", imx.chat,
                      "JSONL files of chat prompts ({\"messages\": [...]} or {\"prompt\": ...})");
  imx_cmd->add_option("--merge", imx.merge, "instead: add these importance matrices together");
  imx_cmd
      ->add_option("-o,--output", imx.output,
                   "importance matrix GGUF (an existing one of the same run is resumed)")
      ->required();
  imx_cmd->add_option("--chunk", imx.chunk, "tokens per calibration chunk")
      ->check(CLI::Range(2, 1 << 20))
      ->capture_default_str();
  imx_cmd->add_option("--save-every", imx.save_every, "chunks between saves")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  imx_cmd
      ->add_option("--max-chunks", imx.max_chunks,
                   "stop after this many chunks in all (a later run resumes)")
      ->check(CLI::Range(0, 1 << 30));
  imx_cmd->add_option("-t,--threads", imx.threads, "threads (0: all cores)")
      ->check(CLI::Range(0, 4096));
  imx_cmd->add_flag("--progress", imx.progress, "one line per chunk on stderr");

  ds4::convert::ConvertOptions conv;
  std::string conv_quant = "q2";
  CLI::App* convert_cmd = app.add_subcommand(
      "convert", "convert a Hugging Face or official DeepSeek V4 checkpoint to GGUF");
  convert_cmd
      ->add_option("src_dir", conv.src_dir, "checkpoint directory (config.json + safetensors)")
      ->required();
  convert_cmd->add_option("-o,--output", conv.output, "output GGUF")->required();
  convert_cmd->add_option("--quant", conv_quant, "f32, f16, q8, q2 or q4")->capture_default_str();
  convert_cmd->add_option("--vocab", conv.vocab_gguf,
                          "take tokenizer keys from this GGUF (default: tokenizer.json)");
  convert_cmd->add_option("--imatrix", conv.imatrix,
                          "importance matrix (ds4-gguf imatrix) for the routed experts' encoders");
  convert_cmd->add_option("-t,--threads", conv.threads, "threads (0: all cores)")
      ->check(CLI::Range(0, 4096));
  convert_cmd->add_flag("--progress", conv.progress, "one line per tensor on stderr");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // One line, exit code 2, as for every usage error.
    std::fprintf(stderr, "ds4-gguf: %s (see ds4-gguf --help)\n", e.what());
    return 2;
  }
  if (info_cmd->parsed()) return run_info(info);
  if (vocab_cmd->parsed()) return run_vocab(vocab);
  if (check_cmd->parsed()) return run_check(check);
  if (synth_cmd->parsed()) return run_synth(synth);
  if (traffic_cmd->parsed()) return run_traffic(traffic);
  if (split_cmd->parsed()) return run_split(split);
  if (quant_cmd->parsed()) return run_quantize(quant);
  if (splice_cmd->parsed()) return run_splice(splice);
  if (quality_cmd->parsed()) return run_quality(quality);
  if (imx_cmd->parsed()) return run_imatrix(imx);
  if (convert_cmd->parsed()) {
    const auto recipe = recipe_arg("convert", conv_quant);
    if (!recipe) return 2;
    conv.recipe = *recipe;
    return ds4::convert::run_convert(conv);
  }
  if (tokenize_cmd->parsed()) return run_tokenize(tokenize);
  return 2;
}
