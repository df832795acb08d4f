// The ROCm backend's side of gpu/eval.h.
#include "mlx/backend/gpu/eval.h"
#include "mlx/backend/rocm/device/utils.hpp"
#include "mlx/backend/rocm/rocm.h"
#include "mlx/primitives.h"

namespace mlx::core {

namespace rocm {

int device_count() {
  int count = 0;
  return hipGetDeviceCount(&count) == hipSuccess ? count : 0;
}

} // namespace rocm

namespace gpu {

bool is_available() {
  return rocm::device_count() > 0;
}

void new_stream(Stream) {}

void eval(array& arr) {
  auto& primitive = arr.primitive();
  std::vector<array> outputs{arr};
  primitive.eval_gpu(arr.inputs(), outputs);
}

void finalize(Stream) {
  hipDeviceSynchronize();
}

void synchronize(Stream) {
  hipDeviceSynchronize();
}

} // namespace gpu

} // namespace mlx::core
