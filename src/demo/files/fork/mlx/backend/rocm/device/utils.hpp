// HIP compatibility for the ROCm backend. With a HIP compiler this is the HIP
// runtime; with a host compiler the device qualifiers are empty and the
// runtime calls are host stand-ins, so the backend still compiles.
#pragma once

#include <cstdlib>

#ifdef __HIP__
#include <hip/hip_runtime.h>
#else
#define __host__
#define __device__
#define __global__

using hipError_t = int;
constexpr hipError_t hipSuccess = 0;

inline hipError_t hipMalloc(void** ptr, size_t size) {
  *ptr = std::malloc(size);
  return *ptr != nullptr ? hipSuccess : 2;
}

inline hipError_t hipFree(void* ptr) {
  std::free(ptr);
  return hipSuccess;
}

inline hipError_t hipGetDeviceCount(int* count) {
  *count = 0;
  return hipSuccess;
}

inline hipError_t hipDeviceSynchronize() {
  return hipSuccess;
}
#endif

// Grid sizes: how many blocks of size b cover n elements.
__host__ __device__ inline int ceil_div(int n, int b) {
  return (n + b - 1) / b;
}
