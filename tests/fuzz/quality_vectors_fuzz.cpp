// libFuzzer target for the official logprob vector format (tools/quality/vectors.h), the file
// `ds4-gguf quality --vectors` reads. Seeds: tests/fuzz/quality_vectors_seeds (the layout of the
// official set, a recorded set). Checked for every input (ASan/UBSan instrumented):
//   - parsing never crashes, hangs or reads out of bounds, and never allocates past the limits;
//   - what parses, written back and parsed again, is the same cases (ids, contexts, prompt files,
//     token bytes, logprobs to the last bit): the writer and the reader agree.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "tools/quality/vectors.h"

namespace {

void require(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto cases = ds4::quality::parse_vectors(text);
  if (!cases.is_ok()) return 0;
  const auto again = ds4::quality::parse_vectors(ds4::quality::write_vectors(*cases));
  require(again.is_ok());
  require(again->size() == cases->size());
  for (size_t i = 0; i < cases->size(); ++i) {
    const auto& a = (*cases)[i];
    const auto& b = (*again)[i];
    require(a.id == b.id && a.ctx == b.ctx && a.prompt_file == b.prompt_file);
    require(a.steps.size() == b.steps.size());
    for (size_t k = 0; k < a.steps.size(); ++k) {
      require(a.steps[k].selected == b.steps[k].selected);
      require(a.steps[k].top == b.steps[k].top);
    }
  }
  return 0;
}
