// Memory for array data. Each backend provides the allocator.
#pragma once

#include <cstddef>

namespace mlx::core::allocator {

// A block of memory handed out by an allocator.
class Buffer {
 public:
  explicit Buffer(void* ptr) : ptr_(ptr) {}

  void* ptr() {
    return ptr_;
  }
  const void* ptr() const {
    return ptr_;
  }

 private:
  void* ptr_;
};

class Allocator {
 public:
  virtual Buffer malloc(size_t size) = 0;
  virtual void free(Buffer buffer) = 0;
  virtual ~Allocator() = default;
};

// The allocator of the backend the library was built with.
Allocator& allocator();

Buffer malloc(size_t size);
void free(Buffer buffer);

} // namespace mlx::core::allocator
