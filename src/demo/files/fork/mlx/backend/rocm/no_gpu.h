// Stubs for the primitives the ROCm backend has no kernel for yet: eval_gpu
// throws, so the library links and the CPU stream still works.
#pragma once

#include <stdexcept>

#define NO_GPU(func)                                                      \
  void func::eval_gpu(const std::vector<array>& inputs, array& out) {     \
    throw std::runtime_error(#func " has no ROCm implementation");        \
  }

#define NO_GPU_MULTI(func)                                                \
  void func::eval_gpu(                                                    \
      const std::vector<array>& inputs, std::vector<array>& outputs) {    \
    throw std::runtime_error(#func " has no ROCm implementation");        \
  }
