// Index arithmetic shared by the backends.
#pragma once

#include <utility>

#include "mlx/array.h"

namespace mlx::core {

// Row-major strides of a contiguous array of the given shape.
Strides make_contiguous_strides(const Shape& shape);

// Memory offset of element number elem of an array with the given layout.
int64_t elem_to_loc(int64_t elem, const Shape& shape, const Strides& strides);

// Merges neighbouring dimensions that are contiguous with each other, so
// that copies and element-wise kernels loop over as few dimensions as
// possible.
std::pair<Shape, Strides> collapse_contiguous_dims(
    const Shape& shape,
    const Strides& strides);

} // namespace mlx::core
