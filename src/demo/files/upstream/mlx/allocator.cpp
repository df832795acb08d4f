#include "mlx/allocator.h"

namespace mlx::core::allocator {

Buffer malloc(size_t size) {
  return allocator().malloc(size);
}

void free(Buffer buffer) {
  allocator().free(buffer);
}

} // namespace mlx::core::allocator
