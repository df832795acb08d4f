// A point in a stream the host can wait for. Each backend defines the members.
#pragma once

#include <memory>

#include "mlx/stream.h"

namespace mlx::core {

class Event {
 public:
  explicit Event(Stream stream);

  // Blocks until the event is signaled.
  void wait();

  // Marks the event as reached.
  void signal();

  const Stream& stream() const {
    return stream_;
  }

 private:
  Stream stream_;
  std::shared_ptr<void> event_;
};

} // namespace mlx::core
