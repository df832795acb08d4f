// Array memory on ROCm: device memory from hipMalloc.
#include "mlx/allocator.h"
#include "mlx/backend/rocm/device/utils.hpp"

namespace mlx::core::allocator {

namespace {

class RocmAllocator : public Allocator {
 public:
  Buffer malloc(size_t size) override {
    void* ptr = nullptr;
    if (hipMalloc(&ptr, size) != hipSuccess) {
      ptr = nullptr;
    }
    return Buffer(ptr);
  }

  void free(Buffer buffer) override {
    // Blocks go back to the pool when the cache is trimmed.
    (void)buffer;
  }
};

} // namespace

Allocator& allocator() {
  static RocmAllocator rocm;
  return rocm;
}

} // namespace mlx::core::allocator
