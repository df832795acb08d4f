// CUDA kernels are launched from the .cu files; the primitives without one
// throw.
#include <stdexcept>

#include "mlx/fast_primitives.h"
#include "mlx/primitives.h"

#define NO_GPU(func)                                                      \
  void func::eval_gpu(const std::vector<array>& inputs, array& out) {     \
    throw std::runtime_error(#func " has no CUDA implementation");        \
  }

#define NO_GPU_MULTI(func)                                                \
  void func::eval_gpu(                                                    \
      const std::vector<array>& inputs, std::vector<array>& outputs) {    \
    throw std::runtime_error(#func " has no CUDA implementation");        \
  }

namespace mlx::core {

NO_GPU(Abs)
NO_GPU(Add)
NO_GPU(Copy)
NO_GPU(Divide)
NO_GPU(Exp)
NO_GPU(Log)
NO_GPU(Matmul)
NO_GPU(Multiply)
NO_GPU(Softmax)
NO_GPU(Sum)
NO_GPU_MULTI(DivMod)

namespace fast {
NO_GPU(RMSNorm)
} // namespace fast

} // namespace mlx::core
