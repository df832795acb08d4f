#include <stdexcept>

#include "mlx/fast.h"
#include "mlx/fast_primitives.h"

namespace mlx::core::fast {

namespace {

// Whether the fused kernel can run on stream s.
bool use_fused_kernel(const Stream& s) {
  return s.device == Device::cpu || is_available(s.device);
}

} // namespace

array rms_norm(
    const array& x,
    const array& weight,
    float eps,
    StreamOrDevice s) {
  if (x.ndim() == 0 || weight.ndim() != 1 ||
      weight.shape()[0] != x.shape().back()) {
    throw std::invalid_argument("[rms_norm] weight must match the last axis");
  }
  auto stream = to_stream(s);
  if (!use_fused_kernel(stream)) {
    stream = default_stream(Device::cpu);
  }
  return array(
      x.shape(), x.dtype(), std::make_shared<RMSNorm>(stream, eps), {x, weight});
}

} // namespace mlx::core::fast
