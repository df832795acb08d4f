// What every GPU backend implements. Exactly one GPU backend (or no_gpu) is
// built into the library.
#pragma once

#include "mlx/array.h"
#include "mlx/stream.h"

namespace mlx::core::gpu {

bool is_available();
void new_stream(Stream stream);
void eval(array& arr);
void finalize(Stream s);
void synchronize(Stream s);

} // namespace mlx::core::gpu
