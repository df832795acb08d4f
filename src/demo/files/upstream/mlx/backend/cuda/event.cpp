// Events of the CUDA backend wrap a cudaEvent_t.
#include <cuda_runtime.h>

#include "mlx/event.h"

namespace mlx::core {

namespace {

cudaEvent_t handle(const std::shared_ptr<void>& event) {
  return static_cast<cudaEvent_t>(event.get());
}

std::shared_ptr<void> create_event() {
  cudaEvent_t event;
  cudaEventCreateWithFlags(&event, cudaEventDisableTiming);
  return std::shared_ptr<void>(
      event, [](void* e) { cudaEventDestroy(static_cast<cudaEvent_t>(e)); });
}

} // namespace

Event::Event(Stream stream) : stream_(stream), event_(create_event()) {}

void Event::wait() {
  cudaEventSynchronize(handle(event_));
}

void Event::signal() {
  cudaEventRecord(handle(event_));
}

} // namespace mlx::core
