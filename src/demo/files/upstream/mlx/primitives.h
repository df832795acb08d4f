// Primitives: the operations an array graph is made of. Every primitive has a
// CPU implementation (eval_cpu) and a GPU one (eval_gpu); the GPU backends
// define eval_gpu, or a stub that throws where they have no kernel yet.
#pragma once

#include <vector>

#include "mlx/array.h"
#include "mlx/stream.h"

namespace mlx::core {

class Primitive {
 public:
  explicit Primitive(Stream stream) : stream_(stream) {}
  virtual ~Primitive() = default;

  virtual void eval_cpu(
      const std::vector<array>& inputs,
      std::vector<array>& outputs) = 0;
  virtual void eval_gpu(
      const std::vector<array>& inputs,
      std::vector<array>& outputs) = 0;

  virtual const char* name() const = 0;

  // Whether two primitives compute the same thing.
  virtual bool is_equivalent(const Primitive& other) const;

  const Stream& stream() const {
    return stream_;
  }

 private:
  Stream stream_;
};

// A primitive with one output.
class UnaryPrimitive : public Primitive {
 public:
  explicit UnaryPrimitive(Stream stream) : Primitive(stream) {}

  virtual void eval_cpu(const std::vector<array>& inputs, array& out) = 0;
  virtual void eval_gpu(const std::vector<array>& inputs, array& out) = 0;

  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs)
      override {
    eval_cpu(inputs, outputs[0]);
  }
  void eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs)
      override {
    eval_gpu(inputs, outputs[0]);
  }
};

#define DECLARE_UNARY_PRIMITIVE(NAME)                                \
  class NAME : public UnaryPrimitive {                               \
   public:                                                           \
    explicit NAME(Stream stream) : UnaryPrimitive(stream) {}         \
    void eval_cpu(const std::vector<array>& inputs, array& out)      \
        override;                                                    \
    void eval_gpu(const std::vector<array>& inputs, array& out)      \
        override;                                                    \
    const char* name() const override {                              \
      return #NAME;                                                  \
    }                                                                \
  };

DECLARE_UNARY_PRIMITIVE(Abs)
DECLARE_UNARY_PRIMITIVE(Add)
DECLARE_UNARY_PRIMITIVE(Copy)
DECLARE_UNARY_PRIMITIVE(Divide)
DECLARE_UNARY_PRIMITIVE(Exp)
DECLARE_UNARY_PRIMITIVE(Log)
DECLARE_UNARY_PRIMITIVE(Matmul)
DECLARE_UNARY_PRIMITIVE(Multiply)
DECLARE_UNARY_PRIMITIVE(Softmax)
DECLARE_UNARY_PRIMITIVE(Sum)

class Reshape : public UnaryPrimitive {
 public:
  Reshape(Stream stream, Shape shape)
      : UnaryPrimitive(stream), shape_(std::move(shape)) {}

  void eval_cpu(const std::vector<array>& inputs, array& out) override;
  void eval_gpu(const std::vector<array>& inputs, array& out) override;

  const char* name() const override {
    return "Reshape";
  }

 private:
  Shape shape_;
};

// Quotient and remainder in one pass: a primitive with two outputs.
class DivMod : public Primitive {
 public:
  explicit DivMod(Stream stream) : Primitive(stream) {}

  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs)
      override;
  void eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs)
      override;

  const char* name() const override {
    return "DivMod";
  }
};

} // namespace mlx::core
