// tools/model_io/model_io.cpp: see model_io.h.
#include "tools/model_io/model_io.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

namespace ds4::model_io {

Result<model::FileCheck> check_main_model(const gguf::Reader& file, const std::string& path,
                                          std::string_view tool) {
  model::FileCheck check = model::check_model_file(file);
  if (check.mtp) {
    return Status::invalid_model("'%s' is an MTP draft file: %.*s works on main model files",
                                 path.c_str(), static_cast<int>(tool.size()), tool.data());
  }
  if (!check.problems.empty()) {
    return Status::invalid_model(
        "'%s' is not a valid DeepSeek V4 model file: %s (ds4-gguf check lists every problem)",
        path.c_str(), check.problems.front().c_str());
  }
  return check;
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  return std::filesystem::equivalent(a, b, ec) && !ec;
}

Status copy_tensor(const gguf::Reader& file, const gguf::TensorInfo& t, gguf::Writer& out,
                   size_t index) {
  constexpr uint64_t kPiece = uint64_t{64} << 20;
  const std::span<const uint8_t> data = file.tensor_data(t);
  for (uint64_t at = 0; at < data.size(); at += kPiece) {
    const std::span<const uint8_t> piece =
        data.subspan(at, std::min<uint64_t>(kPiece, data.size() - at));
    DS4_TRY(out.write_tensor_data(index, piece, at));
    file.release(piece);
  }
  return Status::ok();
}

}  // namespace ds4::model_io
