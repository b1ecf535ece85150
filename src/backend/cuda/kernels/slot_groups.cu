// src/backend/cuda/kernels/slot_groups.cu: the slots of an expert-stack product grouped by expert
// (launch_group_slots, contract in matmul_planar.cuh): per-expert counts, their prefix offsets
// (one thread: an expert stack has a few hundred matrices) and a scatter of the slot ids.
#include <algorithm>
#include <climits>
#include <cstdint>

#include "backend/cuda/check.h"
#include "backend/cuda/kernels/launch.cuh"
#include "backend/cuda/kernels/matmul_planar.cuh"
#include "base/check.h"

namespace ds4::backend::cuda {
namespace {

__global__ void count_slots_kernel(const int32_t* experts, int n_slots, int n_mat,
                                   int32_t* counts) {
  kernel_begin();
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= n_slots) return;
  const int e = experts[j];
  if (e < 0 || e >= n_mat) __trap();
  atomicAdd(&counts[e], 1);
}

__global__ void slot_offsets_kernel(const int32_t* counts, int n_mat, int32_t* first,
                                    int32_t* group_first, int32_t* wide_first, int32_t* cursor) {
  kernel_begin();
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  int at = 0, groups = 0, wide = 0;
  for (int e = 0; e < n_mat; ++e) {
    first[e] = at;
    cursor[e] = at;
    group_first[e] = groups;
    wide_first[e] = wide;
    at += counts[e];
    groups += (counts[e] + kPlanarGroupSlots - 1) / kPlanarGroupSlots;
    wide += (counts[e] + kImmaSlots - 1) / kImmaSlots;
  }
  first[n_mat] = at;
  group_first[n_mat] = groups;
  wide_first[n_mat] = wide;
}

__global__ void scatter_slots_kernel(const int32_t* experts, int n_slots, int32_t* cursor,
                                     int32_t* order) {
  kernel_begin();
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= n_slots) return;
  order[atomicAdd(&cursor[experts[j]], 1)] = j;  // order within an expert does not matter
}

}  // namespace

int64_t slot_groups_bytes(int64_t n_slots, int n_matrices) {
  return static_cast<int64_t>(sizeof(int32_t)) * (5 * (int64_t{n_matrices} + 1) + n_slots);
}

SlotGroups launch_group_slots(const int32_t* experts, int64_t n_slots, int n_matrices,
                              void* scratch, cudaStream_t stream) {
  DS4_CHECK_MSG(n_slots > 0 && n_slots <= INT_MAX && n_matrices > 0 && experts != nullptr &&
                    scratch != nullptr,
                "group slots: %lld slots, %d matrices", static_cast<long long>(n_slots),
                n_matrices);
  auto* counts = static_cast<int32_t*>(scratch);
  int32_t* first = counts + (n_matrices + 1);
  int32_t* group_first = first + (n_matrices + 1);
  int32_t* wide_first = group_first + (n_matrices + 1);
  int32_t* cursor = wide_first + (n_matrices + 1);
  int32_t* order = cursor + (n_matrices + 1);
  const int n = static_cast<int>(n_slots);
  constexpr int kT = 256;
  DS4_CUDA_CHECK(cudaMemsetAsync(counts, 0, sizeof(int32_t) * (n_matrices + 1), stream));
  launch(count_slots_kernel, (n + kT - 1) / kT, kT, 0, stream, experts, n, n_matrices, counts);
  DS4_CUDA_CHECK_LAUNCH();
  launch(slot_offsets_kernel, 1, 32, 0, stream, counts, n_matrices, first, group_first, wide_first,
         cursor);
  DS4_CUDA_CHECK_LAUNCH();
  launch(scatter_slots_kernel, (n + kT - 1) / kT, kT, 0, stream, experts, n, cursor, order);
  DS4_CUDA_CHECK_LAUNCH();
  SlotGroups g;
  g.order = order;
  g.first = first;
  g.group_first = group_first;
  g.wide_first = wide_first;
  g.max_groups = static_cast<int>((n_slots + kPlanarGroupSlots - 1) / kPlanarGroupSlots +
                                  std::min<int64_t>(n_matrices, n_slots));
  g.max_wide_groups = static_cast<int>((n_slots + kImmaSlots - 1) / kImmaSlots +
                                       std::min<int64_t>(n_matrices, n_slots));
  return g;
}

}  // namespace ds4::backend::cuda
