#include <cstring>
#include <functional>
#include <numeric>

#include "mlx/array.h"
#include "mlx/backend/gpu/eval.h"
#include "mlx/primitives.h"

namespace mlx::core {

namespace {

Strides row_major_strides(const Shape& shape) {
  Strides strides(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) {
    strides[i] = strides[i + 1] * shape[i + 1];
  }
  return strides;
}

} // namespace

struct array::Desc {
  Shape shape;
  Strides strides;
  Dtype dtype;
  allocator::Buffer data{nullptr};
  bool available{false};
  std::shared_ptr<Primitive> primitive;
  std::vector<array> inputs;

  ~Desc() {
    if (data.ptr() != nullptr) {
      allocator::free(data);
    }
  }
};

array::array(std::initializer_list<float> data, Shape shape)
    : desc_(std::make_shared<Desc>()) {
  desc_->shape = std::move(shape);
  desc_->strides = row_major_strides(desc_->shape);
  desc_->dtype = Dtype::float32;
  set_data(allocator::malloc(sizeof(float) * data.size()));
  std::copy(data.begin(), data.end(), this->data<float>());
  desc_->available = true;
}

array::array(float value) : array({value}, Shape{}) {}

array::array(
    Shape shape,
    Dtype dtype,
    std::shared_ptr<Primitive> primitive,
    std::vector<array> inputs)
    : desc_(std::make_shared<Desc>()) {
  desc_->shape = std::move(shape);
  desc_->strides = row_major_strides(desc_->shape);
  desc_->dtype = dtype;
  desc_->primitive = std::move(primitive);
  desc_->inputs = std::move(inputs);
}

const Shape& array::shape() const {
  return desc_->shape;
}

const Strides& array::strides() const {
  return desc_->strides;
}

Dtype array::dtype() const {
  return desc_->dtype;
}

size_t array::size() const {
  return std::accumulate(
      desc_->shape.begin(), desc_->shape.end(), size_t{1}, std::multiplies<>());
}

size_t array::nbytes() const {
  return size() * size_of(dtype());
}

int array::ndim() const {
  return static_cast<int>(desc_->shape.size());
}

void array::set_data(allocator::Buffer buffer) {
  desc_->data = buffer;
}

void* array::raw_data() {
  return desc_->data.ptr();
}

bool array::is_available() const {
  return desc_->available;
}

bool array::has_primitive() const {
  return desc_->primitive != nullptr;
}

Primitive& array::primitive() const {
  return *desc_->primitive;
}

std::vector<array>& array::inputs() {
  return desc_->inputs;
}

const std::vector<array>& array::inputs() const {
  return desc_->inputs;
}

void array::eval() {
  if (is_available()) {
    return;
  }
  for (auto& input : inputs()) {
    input.eval();
  }
  std::vector<array> outputs{*this};
  if (primitive().stream().device == Device::gpu) {
    gpu::eval(*this);
  } else {
    primitive().eval_cpu(inputs(), outputs);
  }
  desc_->available = true;
}

} // namespace mlx::core
