// Operations on arrays. They are lazy: each returns an array that computes
// its value when evaluated.
#pragma once

#include "mlx/array.h"
#include "mlx/utils.h"

namespace mlx::core {

array abs(const array& a, StreamOrDevice s = {});
array add(const array& a, const array& b, StreamOrDevice s = {});
array copy(const array& a, StreamOrDevice s = {});
array divide(const array& a, const array& b, StreamOrDevice s = {});
array exp(const array& a, StreamOrDevice s = {});
array log(const array& a, StreamOrDevice s = {});
array matmul(const array& a, const array& b, StreamOrDevice s = {});
array multiply(const array& a, const array& b, StreamOrDevice s = {});
array reshape(const array& a, Shape shape, StreamOrDevice s = {});
array softmax(const array& a, StreamOrDevice s = {});
array sum(const array& a, StreamOrDevice s = {});

} // namespace mlx::core
