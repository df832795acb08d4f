// Streams order the work on a device.
#pragma once

#include "mlx/device.h"

namespace mlx::core {

struct Stream {
  Stream(int index, Device device) : index(index), device(device) {}

  int index;
  Device device;
};

inline bool operator==(const Stream& lhs, const Stream& rhs) {
  return lhs.index == rhs.index;
}

Stream default_stream(Device d);
Stream new_stream(Device d);
void synchronize(Stream s);

} // namespace mlx::core
