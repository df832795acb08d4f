// The CPU implementation of every primitive: plain loops over float32 data.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "mlx/backend/common/utils.h"
#include "mlx/fast_primitives.h"
#include "mlx/primitives.h"

namespace mlx::core {

namespace {

void allocate(array& out) {
  out.set_data(allocator::malloc(out.nbytes()));
}

template <typename Op>
void unary_op(const array& in, array& out, Op op) {
  allocate(out);
  const float* src = in.data<float>();
  float* dst = out.data<float>();
  for (size_t i = 0; i < out.size(); ++i) {
    dst[i] = op(src[i]);
  }
}

template <typename Op>
void binary_op(const array& a, const array& b, array& out, Op op) {
  allocate(out);
  const float* lhs = a.data<float>();
  const float* rhs = b.data<float>();
  float* dst = out.data<float>();
  for (size_t i = 0; i < out.size(); ++i) {
    dst[i] = op(lhs[i], rhs[i]);
  }
}

} // namespace

void Abs::eval_cpu(const std::vector<array>& inputs, array& out) {
  unary_op(inputs[0], out, [](float x) { return std::fabs(x); });
}

void Add::eval_cpu(const std::vector<array>& inputs, array& out) {
  binary_op(inputs[0], inputs[1], out, [](float x, float y) { return x + y; });
}

void Copy::eval_cpu(const std::vector<array>& inputs, array& out) {
  auto& in = inputs[0];
  allocate(out);
  for (size_t i = 0; i < out.size(); ++i) {
    out.data<float>()[i] =
        in.data<float>()[elem_to_loc(i, in.shape(), in.strides())];
  }
}

void Divide::eval_cpu(const std::vector<array>& inputs, array& out) {
  binary_op(inputs[0], inputs[1], out, [](float x, float y) { return x / y; });
}

void Exp::eval_cpu(const std::vector<array>& inputs, array& out) {
  unary_op(inputs[0], out, [](float x) { return std::exp(x); });
}

void Log::eval_cpu(const std::vector<array>& inputs, array& out) {
  unary_op(inputs[0], out, [](float x) { return std::log(x); });
}

void Matmul::eval_cpu(const std::vector<array>& inputs, array& out) {
  auto& a = inputs[0];
  auto& b = inputs[1];
  int m = a.shape()[0], k = a.shape()[1], n = b.shape()[1];
  allocate(out);
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      float acc = 0;
      for (int l = 0; l < k; ++l) {
        acc += a.data<float>()[i * k + l] * b.data<float>()[l * n + j];
      }
      out.data<float>()[i * n + j] = acc;
    }
  }
}

void Multiply::eval_cpu(const std::vector<array>& inputs, array& out) {
  binary_op(inputs[0], inputs[1], out, [](float x, float y) { return x * y; });
}

void Reshape::eval_cpu(const std::vector<array>& inputs, array& out) {
  allocate(out);
  std::memcpy(out.data<float>(), inputs[0].data<float>(), out.nbytes());
}

void Softmax::eval_cpu(const std::vector<array>& inputs, array& out) {
  auto& in = inputs[0];
  int axis_size = in.ndim() == 0 ? 1 : in.shape().back();
  allocate(out);
  for (size_t row = 0; row < out.size(); row += axis_size) {
    const float* src = in.data<float>() + row;
    float* dst = out.data<float>() + row;
    float top = *std::max_element(src, src + axis_size);
    float total = 0;
    for (int i = 0; i < axis_size; ++i) {
      dst[i] = std::exp(src[i] - top);
      total += dst[i];
    }
    for (int i = 0; i < axis_size; ++i) {
      dst[i] /= total;
    }
  }
}

void Sum::eval_cpu(const std::vector<array>& inputs, array& out) {
  auto& in = inputs[0];
  allocate(out);
  float total = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    total += in.data<float>()[i];
  }
  out.data<float>()[0] = total;
}

void DivMod::eval_cpu(
    const std::vector<array>& inputs,
    std::vector<array>& outputs) {
  auto& a = inputs[0];
  auto& b = inputs[1];
  for (auto& out : outputs) {
    allocate(out);
  }
  for (size_t i = 0; i < a.size(); ++i) {
    float q = std::floor(a.data<float>()[i] / b.data<float>()[i]);
    outputs[0].data<float>()[i] = q;
    if (outputs.size() > 1) {
      outputs[1].data<float>()[i] =
          a.data<float>()[i] - q * b.data<float>()[i];
    }
  }
}

void fast::RMSNorm::eval_cpu(const std::vector<array>& inputs, array& out) {
  auto& x = inputs[0];
  auto& weight = inputs[1];
  int axis_size = x.shape().back();
  allocate(out);
  for (size_t row = 0; row < out.size(); row += axis_size) {
    float squares = 0;
    for (int i = 0; i < axis_size; ++i) {
      float v = x.data<float>()[row + i];
      squares += v * v;
    }
    float scale = 1.0f / std::sqrt(squares / axis_size + eps());
    for (int i = 0; i < axis_size; ++i) {
      out.data<float>()[row + i] =
          x.data<float>()[row + i] * scale * weight.data<float>()[i];
    }
  }
}

} // namespace mlx::core
