// apps/gguf/main.cpp: ds4-gguf, the GGUF tool. Flag parsing and dispatch only; each subcommand
// lives in its own file (info.cpp, ...).
#include <CLI/CLI.hpp>
#include <cstdio>

#include "apps/gguf/commands.h"

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
  return 2;
}
