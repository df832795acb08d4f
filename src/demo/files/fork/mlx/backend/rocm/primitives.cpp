// The primitives without a ROCm kernel.
#include "mlx/backend/rocm/no_gpu.h"
#include "mlx/fast_primitives.h"
#include "mlx/primitives.h"

namespace mlx::core {

NO_GPU(Abs)
NO_GPU(Divide)
NO_GPU(Log)
NO_GPU(Softmax)
NO_GPU(Sum)
NO_GPU_MULTI(DivMod)

namespace fast {
NO_GPU(RMSNorm)
} // namespace fast

} // namespace mlx::core
