// Events of the ROCm backend: a host flag the device side sets when the
// stream reaches it.
#include <atomic>
#include <thread>

#include "mlx/backend/rocm/device/utils.hpp"
#include "mlx/event.h"

namespace mlx::core {

namespace {

std::atomic<bool>& flag(const std::shared_ptr<void>& event) {
  return *static_cast<std::atomic<bool>*>(event.get());
}

} // namespace

Event::Event(Stream stream)
    : stream_(stream), event_(std::make_shared<std::atomic<bool>>(false)) {}

void Event::wait() {
  while (!flag(event_).load()) {
    std::this_thread::yield();
  }
}

void Event::signal() {
  hipDeviceSynchronize();
  flag(event_).store(true);
}

} // namespace mlx::core
