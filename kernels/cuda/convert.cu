// float → double conversion on the device (the SYRK accumulation path).
#include "kernels/cuda/cuda_kernels.h"

namespace adaptd::kernels::gpu {
namespace {

__global__ void FloatToDoubleKernel(const float* in, double* out, size_t count) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    out[i] = static_cast<double>(in[i]);
  }
}

}  // namespace

cudaError_t LaunchFloatToDouble(const float* in, double* out, size_t count, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  constexpr int kThreads = 256;
  const size_t blocks = (count + kThreads - 1) / kThreads;
  FloatToDoubleKernel<<<static_cast<unsigned>(blocks < 65535 ? blocks : 65535), kThreads, 0,
                        stream>>>(in, out, count);
  return cudaGetLastError();
}

}  // namespace adaptd::kernels::gpu
