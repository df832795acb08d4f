#include "mlx/backend/common/utils.h"

namespace mlx::core {

Strides make_contiguous_strides(const Shape& shape) {
  Strides strides(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) {
    strides[i] = strides[i + 1] * shape[i + 1];
  }
  return strides;
}

int64_t elem_to_loc(int64_t elem, const Shape& shape, const Strides& strides) {
  int64_t loc = 0;
  for (int i = static_cast<int>(shape.size()) - 1; i >= 0; --i) {
    loc += (elem % shape[i]) * strides[i];
    elem /= shape[i];
  }
  return loc;
}

std::pair<Shape, Strides> collapse_contiguous_dims(
    const Shape& shape,
    const Strides& strides) {
  Shape out_shape;
  Strides out_strides;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (!out_shape.empty() &&
        out_strides.back() == static_cast<int64_t>(shape[i]) * strides[i]) {
      out_shape.back() *= shape[i];
      out_strides.back() = strides[i];
    } else {
      out_shape.push_back(shape[i]);
      out_strides.push_back(strides[i]);
    }
  }
  return {out_shape, out_strides};
}

} // namespace mlx::core
