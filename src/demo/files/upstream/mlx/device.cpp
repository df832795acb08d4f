#include <cstdlib>
#include <stdexcept>

#include "mlx/backend/gpu/eval.h"
#include "mlx/device.h"

namespace mlx::core {

namespace {

Device& mutable_default_device() {
  static Device default_device{
      gpu::is_available() ? Device::gpu : Device::cpu};
  return default_device;
}

} // namespace

const Device& default_device() {
  return mutable_default_device();
}

void set_default_device(const Device& d) {
  if (!is_available(d)) {
    throw std::invalid_argument("[set_default_device] device is not available");
  }
  mutable_default_device() = d;
}

bool operator==(const Device& lhs, const Device& rhs) {
  return lhs.type == rhs.type && lhs.index == rhs.index;
}

bool operator!=(const Device& lhs, const Device& rhs) {
  return !(lhs == rhs);
}

bool is_available(const Device& d) {
  switch (d.type) {
    case Device::cpu:
      return true;
    case Device::gpu:
      return gpu::is_available();
  }
  return false;
}

} // namespace mlx::core
