#include "mlx/utils.h"

namespace mlx::core {

Stream to_stream(StreamOrDevice s) {
  if (auto stream = std::get_if<Stream>(&s)) {
    return *stream;
  }
  if (auto device = std::get_if<Device>(&s)) {
    return default_stream(*device);
  }
  return default_stream(default_device());
}

} // namespace mlx::core
