// src/backend/cuda/kernels/launch.cuh: how the backend starts its kernels. Every kernel is started
// by launch() as a programmatic dependent launch (Hopper's griddepcontrol): the GPU may schedule a
// kernel's CTAs while the kernel before it on the stream is still running, so the next kernel is
// resident when the previous one ends instead of being launched then (a decoded token is ~1,700
// kernels of 2-20 us each, on CUDA graphs).
//
// The contract, for every kernel started by launch():
//   * it calls await_predecessor() before it reads anything an earlier kernel wrote and before it
//     writes any global memory (the wait returns once the previous kernel on the stream has ended
//     and its writes are visible; that kernel waited for its own predecessor, so the order of the
//     whole stream holds);
//   * what it does before the wait touches only data no kernel of the step writes (weights,
//     constant tables) and its own shared memory: a weight-bound kernel issues its first weight
//     loads there, so they are in flight while the previous kernel finishes;
//   * it calls allow_successor() after the wait (kernel_begin() does both): the next kernel's CTAs
//     may then take free SM resources. Triggered after the wait, at most two kernels of a stream
//     are resident at a time.
// On the H200 (Flash q2, ds4-bench) this left a one-row decode step unchanged and shortened
// batched decode steps of 4 to 16 sessions by about a tenth. Before sm_90 both calls
// compile to nothing and the stream orders kernels as usual. A launch after a copy, a memset or a
// cuBLAS kernel is ordered as usual; cuBLAS's own kernels are not bound by the contract.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <utility>

namespace ds4::backend::cuda {

__device__ __forceinline__ void await_predecessor() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void allow_successor() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// The first statement of a kernel with nothing to do before its inputs are ready.
__device__ __forceinline__ void kernel_begin() {
  await_predecessor();
  allow_successor();
}

// Asks the L2 cache for [p, p + bytes): one prefetch per 128-byte line, the lines spread over the
// CTA's threads. For the weights a kernel reads, before its wait.
__device__ __forceinline__ void prefetch_l2(const void* p, int64_t bytes) {
  const char* c = static_cast<const char*>(p);
  for (int64_t off = int64_t{threadIdx.x} * 128; off < bytes; off += int64_t{blockDim.x} * 128)
    asm volatile("prefetch.global.L2 [%0];" ::"l"(c + off));
}

// kernel<<<grid, block, smem, stream>>>(args...), as a programmatic dependent launch. The
// arguments convert to the kernel's parameter types as in a triple-chevron launch. Errors are
// reported by the caller's DS4_CUDA_CHECK_LAUNCH (cudaGetLastError), as for <<< >>>.
template <typename... Params, typename... Args>
void launch(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
            Args&&... args) {
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  config.attrs = attr;
  config.numAttrs = 1;
  (void)cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
}

}  // namespace ds4::backend::cuda
