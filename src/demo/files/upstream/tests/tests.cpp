// A smoke test: a few ops evaluated on the default device, and an event.
#include <cmath>
#include <iostream>

#include "mlx/mlx.h"

using namespace mlx::core;

int main() {
  array a({1.0f, 2.0f, 3.0f, 4.0f}, {2, 2});
  auto b = sum(exp(add(a, a)));
  b.eval();
  float expected = std::exp(2.0f) + std::exp(4.0f) + std::exp(6.0f) +
      std::exp(8.0f);
  if (std::fabs(b.data<float>()[0] - expected) > 1e-2f * expected) {
    std::cerr << "sum(exp(a + a)) = " << b.data<float>()[0] << "\n";
    return 1;
  }

  auto c = matmul(a, reshape(a, {2, 2}));
  c.eval();
  if (c.data<float>()[0] != 7.0f) {
    std::cerr << "matmul(a, a)[0, 0] = " << c.data<float>()[0] << "\n";
    return 1;
  }

  Event event(default_stream(default_device()));
  event.signal();
  event.wait();
  std::cout << "ok\n";
  return 0;
}
