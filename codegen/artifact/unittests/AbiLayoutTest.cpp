//===- AbiLayoutTest.cpp - the emitted ABI structs match artifact_abi.h ---===//
//
// The artifact writer builds the structs of runtime/include/tfc/artifact_abi.h
// as LLVM types (AbiTypes.h); the runtime reads them as C structs. Every size
// and field offset must agree under the data layout tfc compiles for, or the
// runtime reads garbage. This test compiles the C header and compares.
//
//===----------------------------------------------------------------------===//
#include "codegen/artifact/AbiTypes.h"
#include "codegen/artifact/ArtifactWriter.h"
#include "tfc/artifact_abi.h"

#include "llvm/IR/DataLayout.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/Target/TargetMachine.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

namespace {

class AbiLayoutTest : public ::testing::Test {
protected:
  void SetUp() override {
    tfc::ArtifactOptions options;
    options.cpu = "native";
    auto machine = tfc::createTargetMachine(options);
    ASSERT_TRUE(bool(machine)) << llvm::toString(machine.takeError());
    layout = std::make_unique<llvm::DataLayout>(
        (*machine)->createDataLayout());
    types = tfc::getAbiTypes(ctx);
  }

  /// Compares the size and every field offset of `type` with the C struct's.
  void expectLayout(llvm::StructType *type, size_t size,
                    const std::vector<size_t> &offsets) {
    SCOPED_TRACE(type->getName().str());
    ASSERT_EQ(type->getNumElements(), offsets.size())
        << "the LLVM struct and the C struct have different field counts";
    EXPECT_EQ(layout->getTypeAllocSize(type), size);
    const llvm::StructLayout *sl = layout->getStructLayout(type);
    for (size_t i = 0; i < offsets.size(); ++i)
      EXPECT_EQ(sl->getElementOffset(i), offsets[i]) << "field " << i;
  }

  llvm::LLVMContext ctx;
  std::unique_ptr<llvm::DataLayout> layout;
  tfc::AbiTypes types;
};

#define OFF(T, f) offsetof(T, f)

TEST_F(AbiLayoutTest, TensorDesc) {
  using T = tfc_tensor_desc_t;
  expectLayout(types.tensorDesc, sizeof(T),
               {OFF(T, name), OFF(T, dtype), OFF(T, rank), OFF(T, shape),
                OFF(T, init), OFF(T, flags), OFF(T, reserved)});
}

TEST_F(AbiLayoutTest, Entry) {
  using T = tfc_entry_t;
  expectLayout(types.entry, sizeof(T),
               {OFF(T, name), OFF(T, num_inputs), OFF(T, num_outputs),
                OFF(T, inputs), OFF(T, outputs), OFF(T, arena_bytes),
                OFF(T, num_kernels), OFF(T, call), OFF(T, kernels)});
}

TEST_F(AbiLayoutTest, KernelDesc) {
  using T = tfc_kernel_desc_t;
  expectLayout(types.kernelDesc, sizeof(T),
               {OFF(T, name), OFF(T, ops), OFF(T, flops), OFF(T, bytes_read),
                OFF(T, bytes_written)});
}

TEST_F(AbiLayoutTest, Artifact) {
  using T = tfc_artifact_t;
  expectLayout(types.artifact, sizeof(T),
               {OFF(T, magic), OFF(T, abi_version), OFF(T, struct_size),
                OFF(T, reserved), OFF(T, target), OFF(T, compiler_version),
                OFF(T, module_hash), OFF(T, metadata_json), OFF(T, num_params),
                OFF(T, num_state), OFF(T, num_entries), OFF(T, reserved2),
                OFF(T, params), OFF(T, state), OFF(T, entries), OFF(T, device),
                OFF(T, num_device_kernels), OFF(T, device_arch),
                OFF(T, device_kernels), OFF(T, device_image),
                OFF(T, device_image_bytes), OFF(T, device_ptx)});
}

TEST_F(AbiLayoutTest, HostApi) {
  using T = tfc_host_api_t;
  expectLayout(types.hostApi, sizeof(T),
               {OFF(T, struct_size), OFF(T, user), OFF(T, parallel_for),
                OFF(T, report_error), OFF(T, kernel_begin), OFF(T, kernel_end),
                OFF(T, device_launch), OFF(T, device_copy),
                OFF(T, device_constant), OFF(T, collective), OFF(T, collective_start),
                OFF(T, collective_wait), OFF(T, device_matmul), OFF(T, p2p)});
  EXPECT_EQ(layout->getStructLayout(types.hostApi)
                ->getElementOffset(tfc::AbiTypes::kHostUser),
            OFF(T, user));
  EXPECT_EQ(layout->getStructLayout(types.hostApi)
                ->getElementOffset(tfc::AbiTypes::kHostParallelFor),
            OFF(T, parallel_for));
  EXPECT_EQ(layout->getStructLayout(types.hostApi)
                ->getElementOffset(tfc::AbiTypes::kHostReportError),
            OFF(T, report_error));
}

} // namespace
