#include "mlx/stream.h"
#include "mlx/backend/gpu/eval.h"

namespace mlx::core {

Stream default_stream(Device d) {
  return Stream(d == Device::gpu ? 1 : 0, d);
}

Stream new_stream(Device d) {
  static int next_index = 2;
  Stream s(next_index++, d);
  if (d == Device::gpu) {
    gpu::new_stream(s);
  }
  return s;
}

void synchronize(Stream s) {
  if (s.device == Device::gpu) {
    gpu::synchronize(s);
  }
}

} // namespace mlx::core
