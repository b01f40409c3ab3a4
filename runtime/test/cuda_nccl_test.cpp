// Tests the NCCL loader's failures and version text (no GPU, no NCCL needed): a library that
// is not there, one that is not NCCL. Loading a working NCCL and running collectives through
// it is test/cuda_emulator's job (its fake libnccl.so.2, data-parallel.test).
#include <gtest/gtest.h>

#include <string>

#include "devices/cuda/nccl.hpp"
#include "fake_artifacts.hpp"

namespace tfc::internal::cuda {
namespace {

TEST(CudaNccl, MissingLibraryFromEnvironmentNamesTheVariableAndPath) {
  const std::string path = "/nonexistent/tfc-test/libnccl.so.2";
  auto nccl = loadNcclFrom(path, /*fromEnvironment=*/true);
  ASSERT_FALSE(nccl.ok());
  EXPECT_EQ(nccl.status().code(), TFC_FAILED_PRECONDITION);
  const std::string message = nccl.status().message();
  EXPECT_EQ(message.find("TFC_NCCL_LIBRARY=" + path + " not loadable: "), 0u) << message;
}

TEST(CudaNccl, LibraryWithoutTheFunctionsNamesTheFirstMissing) {
  // A shared object that exports nothing of NCCL's API.
  const std::string path = std::string(TFC_FAKE_ARTIFACT_DIR) + "/fake_plain_library.so";
  auto nccl = loadNcclFrom(path);
  ASSERT_FALSE(nccl.ok());
  EXPECT_EQ(nccl.status().code(), TFC_FAILED_PRECONDITION);
  const std::string message = nccl.status().message();
  EXPECT_NE(message.find(path + ": lacks ncclGetVersion (not NCCL"), std::string::npos)
      << message;
}

TEST(CudaNccl, VersionTextFollowsBothEncodings) {
  EXPECT_EQ(ncclVersionText(22809), "2.28.9");   // NCCL_VERSION(2, 28, 9) since 2.9
  EXPECT_EQ(ncclVersionText(kMinNcclVersion), "2.10.0");
  EXPECT_EQ(ncclVersionText(2804), "2.8.4");     // up to 2.8: X * 1000 + Y * 100 + Z
}

}  // namespace
}  // namespace tfc::internal::cuda
