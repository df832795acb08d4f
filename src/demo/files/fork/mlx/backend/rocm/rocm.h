// The ROCm backend's own entry points, beside gpu/eval.h.
#pragma once

#include "mlx/array.h"

namespace mlx::core::rocm {

// Number of HIP devices the runtime sees.
int device_count();

// Copies in to out, which has in's shape and contiguous strides.
void copy_general(const array& in, array& out);

} // namespace mlx::core::rocm
