// Primitives of the fused operations in fast.h.
#pragma once

#include "mlx/primitives.h"

namespace mlx::core::fast {

class RMSNorm : public UnaryPrimitive {
 public:
  RMSNorm(Stream stream, float eps) : UnaryPrimitive(stream), eps_(eps) {}

  void eval_cpu(const std::vector<array>& inputs, array& out) override;
  void eval_gpu(const std::vector<array>& inputs, array& out) override;

  const char* name() const override {
    return "RMSNorm";
  }

  float eps() const {
    return eps_;
  }

 private:
  float eps_;
};

} // namespace mlx::core::fast
