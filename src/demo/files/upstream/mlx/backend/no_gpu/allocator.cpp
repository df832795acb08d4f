// Without a GPU, array memory comes from the C heap.
#include <cstdlib>

#include "mlx/allocator.h"

namespace mlx::core::allocator {

namespace {

class HeapAllocator : public Allocator {
 public:
  Buffer malloc(size_t size) override {
    return Buffer(std::malloc(size));
  }

  void free(Buffer buffer) override {
    std::free(buffer.ptr());
  }
};

} // namespace

Allocator& allocator() {
  static HeapAllocator heap;
  return heap;
}

} // namespace mlx::core::allocator
