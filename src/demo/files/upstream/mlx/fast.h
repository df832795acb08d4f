// Fused operations with their own kernels where a backend has them.
#pragma once

#include "mlx/array.h"
#include "mlx/utils.h"

namespace mlx::core::fast {

// x / sqrt(mean(x * x) + eps) * weight over the last axis.
array rms_norm(
    const array& x,
    const array& weight,
    float eps,
    StreamOrDevice s = {});

} // namespace mlx::core::fast
