// Small helpers shared by the ops.
#pragma once

#include <variant>

#include "mlx/stream.h"

namespace mlx::core {

using StreamOrDevice = std::variant<std::monostate, Stream, Device>;

// The stream an op runs on: the given one, the default stream of the given
// device, or the default stream of the default device.
Stream to_stream(StreamOrDevice s);

} // namespace mlx::core
