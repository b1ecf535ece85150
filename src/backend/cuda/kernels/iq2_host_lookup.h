// src/backend/cuda/kernels/iq2_host_lookup.h: the IQ2_XXS tables of planar::Iq2Lookup on the host,
// for the host tests of the device formats (planar_formats_test, imma_formats_test): the CPU's
// codebook and the sign masks formed from its sign table by the devices' own iq2_sign_mask.
#pragma once

#include <array>
#include <cstdint>

#include "backend/cuda/kernels/planar_formats.cuh"
#include "quant/iq2_tables.h"

namespace ds4::backend::cuda::planar {

inline Iq2Lookup iq2_host_lookup() {
  static const std::array<uint64_t, quant::kIq2SignCount> masks = [] {
    std::array<uint64_t, quant::kIq2SignCount> m{};
    for (int i = 0; i < quant::kIq2SignCount; ++i)
      m[static_cast<size_t>(i)] = iq2_sign_mask(quant::kIq2Signs[i]);
    return m;
  }();
  return Iq2Lookup{quant::kIq2xxsGrid, masks.data()};
}

}  // namespace ds4::backend::cuda::planar
