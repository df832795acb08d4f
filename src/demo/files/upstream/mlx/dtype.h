// Element types of arrays.
#pragma once

#include <cstddef>

namespace mlx::core {

enum class Dtype { bool_, int32, float32 };

inline size_t size_of(Dtype dtype) {
  switch (dtype) {
    case Dtype::bool_:
      return 1;
    case Dtype::int32:
      return 4;
    case Dtype::float32:
      return 4;
  }
  return 0;
}

} // namespace mlx::core
