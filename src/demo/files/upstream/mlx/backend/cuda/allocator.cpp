// Array memory on CUDA is managed memory, visible to the host and the device.
#include <cuda_runtime.h>

#include "mlx/allocator.h"

namespace mlx::core::allocator {

namespace {

class CudaAllocator : public Allocator {
 public:
  Buffer malloc(size_t size) override {
    void* ptr = nullptr;
    if (cudaMallocManaged(&ptr, size) != cudaSuccess) {
      ptr = nullptr;
    }
    return Buffer(ptr);
  }

  void free(Buffer buffer) override {
    cudaFree(buffer.ptr());
  }
};

} // namespace

Allocator& allocator() {
  static CudaAllocator cuda;
  return cuda;
}

} // namespace mlx::core::allocator
