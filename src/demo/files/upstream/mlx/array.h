// The lazy n-dimensional array: a shape, a type, and either data or the
// primitive and inputs that compute it.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <vector>

#include "mlx/allocator.h"
#include "mlx/dtype.h"

namespace mlx::core {

using Shape = std::vector<int32_t>;
using Strides = std::vector<int64_t>;

class Primitive;

class array {
 public:
  // A float32 array holding a copy of data, laid out row-major.
  array(std::initializer_list<float> data, Shape shape);

  // A float32 scalar.
  explicit array(float value);

  // An array that primitive computes from inputs when evaluated.
  array(
      Shape shape,
      Dtype dtype,
      std::shared_ptr<Primitive> primitive,
      std::vector<array> inputs);

  const Shape& shape() const;
  const Strides& strides() const;
  Dtype dtype() const;
  size_t size() const;
  size_t nbytes() const;
  int ndim() const;

  template <typename T>
  T* data() {
    return static_cast<T*>(raw_data());
  }

  template <typename T>
  const T* data() const {
    return static_cast<const T*>(const_cast<array*>(this)->raw_data());
  }

  // Gives the array its memory; the array frees it with the last reference.
  void set_data(allocator::Buffer buffer);

  bool is_available() const;
  bool has_primitive() const;
  Primitive& primitive() const;
  std::vector<array>& inputs();
  const std::vector<array>& inputs() const;

  // Computes the array and everything it depends on.
  void eval();

 private:
  struct Desc;

  void* raw_data();

  std::shared_ptr<Desc> desc_;
};

} // namespace mlx::core
