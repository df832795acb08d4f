// GPU implementations that need no kernel, shared by every GPU backend.
#include "mlx/primitives.h"

namespace mlx::core {

// A reshape of contiguous data copies the data as it is; the device memory
// is host visible on every backend this library supports.
void Reshape::eval_gpu(const std::vector<array>& inputs, array& out) {
  eval_cpu(inputs, out);
}

} // namespace mlx::core
