#include <stdexcept>

#include "mlx/ops.h"
#include "mlx/primitives.h"

namespace mlx::core {

namespace {

template <typename P>
array unary(const array& a, StreamOrDevice s) {
  auto stream = to_stream(s);
  return array(a.shape(), a.dtype(), std::make_shared<P>(stream), {a});
}

template <typename P>
array binary(const char* op, const array& a, const array& b, StreamOrDevice s) {
  if (a.shape() != b.shape()) {
    throw std::invalid_argument(std::string("[") + op + "] shapes differ");
  }
  auto stream = to_stream(s);
  return array(a.shape(), a.dtype(), std::make_shared<P>(stream), {a, b});
}

} // namespace

array abs(const array& a, StreamOrDevice s) {
  return unary<Abs>(a, s);
}

array add(const array& a, const array& b, StreamOrDevice s) {
  return binary<Add>("add", a, b, s);
}

array copy(const array& a, StreamOrDevice s) {
  return unary<Copy>(a, s);
}

array divide(const array& a, const array& b, StreamOrDevice s) {
  return binary<Divide>("divide", a, b, s);
}

array exp(const array& a, StreamOrDevice s) {
  return unary<Exp>(a, s);
}

array log(const array& a, StreamOrDevice s) {
  return unary<Log>(a, s);
}

array matmul(const array& a, const array& b, StreamOrDevice s) {
  if (a.ndim() != 2 || b.ndim() != 2 || a.shape()[1] != b.shape()[0]) {
    throw std::invalid_argument("[matmul] expects (M, K) and (K, N) inputs");
  }
  auto stream = to_stream(s);
  Shape out_shape{a.shape()[0], b.shape()[1]};
  return array(
      out_shape, a.dtype(), std::make_shared<Matmul>(stream), {a, b});
}

array multiply(const array& a, const array& b, StreamOrDevice s) {
  return binary<Multiply>("multiply", a, b, s);
}

array reshape(const array& a, Shape shape, StreamOrDevice s) {
  auto stream = to_stream(s);
  return array(shape, a.dtype(), std::make_shared<Reshape>(stream, shape), {a});
}

array softmax(const array& a, StreamOrDevice s) {
  return unary<Softmax>(a, s);
}

array sum(const array& a, StreamOrDevice s) {
  auto stream = to_stream(s);
  return array(Shape{}, a.dtype(), std::make_shared<Sum>(stream), {a});
}

} // namespace mlx::core
