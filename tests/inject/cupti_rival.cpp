// SPDX-License-Identifier: Apache-2.0
// A CUDA program that subscribes to CUPTI itself before it touches the GPU, as another profiler
// inside the job would. Only one CUPTI subscriber may exist, so under `zb profile` either it or
// the injection library is refused; either way the job must run as without zbkit (same output,
// same exit code) and zbkit may say so in one warning line. Run by scripts/gpu-check.sh (§6);
// on a machine without a GPU it exits 3 at its first allocation.
#include <cuda_runtime.h>
#include <cupti.h>
#include <nvtx3/nvToolsExt.h>

#include <cstdio>

namespace {

void CUPTIAPI OnCallback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

}  // namespace

int main() {
  CUpti_SubscriberHandle subscriber = nullptr;
  const bool subscribed =
      cuptiSubscribe(&subscriber, reinterpret_cast<CUpti_CallbackFunc>(OnCallback), nullptr) ==
      CUPTI_SUCCESS;
  if (subscribed) cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API);
  constexpr size_t kBytes = size_t{1} << 22;
  void* buffer = nullptr;
  if (cudaMalloc(&buffer, kBytes) != cudaSuccess) {
    std::printf("cupti_rival: no GPU\n");
    return 3;
  }
  for (int step = 0; step < 20; ++step) {
    nvtxRangePushA("F0.0.0");
    cudaMemset(buffer, step, kBytes);
    nvtxRangePop();
    nvtxRangePushA("B0.0.0");
    cudaMemset(buffer, step + 1, kBytes);
    nvtxRangePop();
    cudaDeviceSynchronize();
  }
  cudaFree(buffer);
  if (subscribed) cuptiUnsubscribe(subscriber);
  std::printf("cupti_rival: 20 steps\n");
  return 0;
}
