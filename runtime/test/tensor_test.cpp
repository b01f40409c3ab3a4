// Tests HostTensor and the size helpers.
#include <gtest/gtest.h>

#include <cstring>

#include "test_status.hpp"
#include "tfc/runtime/tensor.hpp"

namespace tfc {
namespace {

TEST(Tensor, ComputeByteSize) {
  uint64_t bytes = 0;
  EXPECT_TRUE(computeByteSize(TFC_DTYPE_F32, {768, 2304}, &bytes));
  EXPECT_EQ(bytes, 7077888u);
  EXPECT_TRUE(computeByteSize(TFC_DTYPE_F64, {}, &bytes));
  EXPECT_EQ(bytes, 8u);
  EXPECT_TRUE(computeByteSize(TFC_DTYPE_F32, {0, int64_t{1} << 62}, &bytes));
  EXPECT_EQ(bytes, 0u);
  EXPECT_FALSE(computeByteSize(TFC_DTYPE_F32, {-1}, &bytes));
  EXPECT_FALSE(computeByteSize(TFC_DTYPE_F32, {int64_t{1} << 62}, &bytes));  // overflow
  EXPECT_FALSE(computeByteSize(TFC_DTYPE_U8, {int64_t{1} << 32, int64_t{1} << 32}, &bytes));
  EXPECT_FALSE(computeByteSize(TFC_DTYPE_INVALID, {1}, &bytes));
}

TEST(Tensor, FormatShape) {
  EXPECT_EQ(formatShape({}), "[]");
  EXPECT_EQ(formatShape({3}), "[3]");
  EXPECT_EQ(formatShape({768, 2304}), "[768, 2304]");
}

TEST(Tensor, AllocateIsZeroedAndAligned) {
  StatusOr<HostTensor> tensor = HostTensor::allocate(TFC_DTYPE_F32, {3, 5});
  ASSERT_OK(tensor);
  EXPECT_EQ(tensor->byteSize(), 60u);
  EXPECT_EQ(tensor->numElements(), 15);
  EXPECT_EQ(tensor->rank(), 2u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(tensor->data()) % kHostTensorAlignment, 0u);
  for (int i = 0; i < 15; ++i) EXPECT_EQ(tensor->dataAs<float>()[i], 0.0f);
}

TEST(Tensor, ScalarAndEmpty) {
  StatusOr<HostTensor> scalar = HostTensor::allocate(TFC_DTYPE_I64, {});
  ASSERT_OK(scalar);
  EXPECT_EQ(scalar->numElements(), 1);
  EXPECT_EQ(scalar->byteSize(), 8u);
  StatusOr<HostTensor> empty = HostTensor::allocate(TFC_DTYPE_I64, {4, 0});
  ASSERT_OK(empty);
  EXPECT_EQ(empty->numElements(), 0);
  EXPECT_EQ(empty->byteSize(), 0u);
  EXPECT_NE(empty->data(), nullptr);
}

TEST(Tensor, AllocateRejectsBadShapes) {
  EXPECT_EQ(HostTensor::allocate(TFC_DTYPE_F32, {2, -1}).status().code(), TFC_INVALID_ARGUMENT);
  EXPECT_EQ(HostTensor::allocate(TFC_DTYPE_INVALID, {2}).status().code(), TFC_INVALID_ARGUMENT);
  EXPECT_EQ(HostTensor::allocate(TFC_DTYPE_F32, {int64_t{1} << 62}).status().code(),
            TFC_INVALID_ARGUMENT);
  EXPECT_EQ(HostTensor::allocate(TFC_DTYPE_F32, std::vector<int64_t>(kMaxRank + 1, 1)).status().code(),
            TFC_INVALID_ARGUMENT);
}

TEST(Tensor, CopyFromAndClone) {
  const int32_t values[] = {1, -2, 3, -4, 5, -6};
  TensorView view{TFC_DTYPE_I32, {2, 3}, values, sizeof(values)};
  StatusOr<HostTensor> tensor = HostTensor::copyFrom(view);
  ASSERT_OK(tensor);
  EXPECT_EQ(std::memcmp(tensor->data(), values, sizeof(values)), 0);
  StatusOr<HostTensor> copy = tensor->clone();
  ASSERT_OK(copy);
  EXPECT_NE(copy->data(), tensor->data());
  EXPECT_EQ(std::memcmp(copy->data(), values, sizeof(values)), 0);
  EXPECT_EQ(copy->shape(), (std::vector<int64_t>{2, 3}));

  view.byteSize = 20;  // does not match the shape
  EXPECT_EQ(HostTensor::copyFrom(view).status().code(), TFC_INVALID_ARGUMENT);
  TensorView null{TFC_DTYPE_I32, {2}, nullptr, 8};
  EXPECT_EQ(HostTensor::copyFrom(null).status().code(), TFC_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace tfc
