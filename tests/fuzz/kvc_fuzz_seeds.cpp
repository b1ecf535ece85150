// Writes valid KVC files (version 2, with their checksum footers) into DIR as the kvc_fuzz corpus:
// without and with a tool-id map, and with the transcript flags set; and one version-1 file (the
// same bytes without the footer), which must keep failing.
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "kv/kvc_file.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: kvc_fuzz_seeds DIR\n");
    return 2;
  }
  ds4::kv::KvcHeader h;
  h.reason = ds4::kv::SaveReason::kCold;
  h.tokens = 12;
  h.n_ctx = 4096;
  h.created = h.last_used = 1764576000;
  const std::vector<uint8_t> payload = {'D', 'S', 'V', '4', 2, 0, 0, 0};
  const std::vector<ds4::kv::ToolMapEntry> map = {{"call_1", "<dsml/>"}, {"c2", "x"}};
  const std::string text = "<｜begin▁of▁sentence｜>seed text";
  std::vector<std::vector<uint8_t>> seeds = {ds4::kv::encode_kvc(h, text, payload, {}),
                                             ds4::kv::encode_kvc(h, text, payload, map)};
  h.flags = ds4::kv::kKvcResponsesTextFlag | ds4::kv::kKvcThinkingTextFlag;
  h.quant_bits = 4;
  seeds.push_back(ds4::kv::encode_kvc(h, "", payload, map));
  std::vector<uint8_t> v1 = seeds[0];
  v1.resize(v1.size() - ds4::kv::kKvcFooterBytes);
  v1[3] = 1;
  seeds.push_back(v1);
  for (size_t i = 0; i < seeds.size(); ++i) {
    std::ofstream f(std::string(argv[1]) + "/seed" + std::to_string(i) + ".kv", std::ios::binary);
    f.write(reinterpret_cast<const char*>(seeds[i].data()),
            static_cast<std::streamsize>(seeds[i].size()));
  }
  return 0;
}
