// Events of a CPU-only build: a flag and a condition variable.
#include <condition_variable>
#include <mutex>

#include "mlx/event.h"

namespace mlx::core {

namespace {

struct EventState {
  std::mutex mutex;
  std::condition_variable cv;
  bool signaled{false};
};

EventState& state(const std::shared_ptr<void>& event) {
  return *static_cast<EventState*>(event.get());
}

} // namespace

Event::Event(Stream stream)
    : stream_(stream), event_(std::make_shared<EventState>()) {}

void Event::wait() {
  auto& s = state(event_);
  std::unique_lock<std::mutex> lock(s.mutex);
  s.cv.wait(lock, [&s] { return s.signaled; });
}

void Event::signal() {
  auto& s = state(event_);
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.signaled = true;
  }
  s.cv.notify_all();
}

} // namespace mlx::core
