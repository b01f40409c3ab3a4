// Tests the cuBLASLt loader's failures and version text (no GPU, no cuBLASLt needed): a library
// that is not there, one that is not cuBLASLt. Running products through a working cuBLASLt is
// test/cuda_emulator's job (its fake libcublasLt.so.13, under check_cuda_artifacts.py).
#include <gtest/gtest.h>

#include <string>

#include "devices/cuda/cublaslt.hpp"
#include "fake_artifacts.hpp"

namespace tfc::internal::cuda {
namespace {

TEST(CudaCublasLt, MissingLibraryFromEnvironmentNamesTheVariableAndPath) {
  const std::string path = "/nonexistent/tfc-test/libcublasLt.so.13";
  auto lt = loadCublasLtFrom(path, /*fromEnvironment=*/true);
  ASSERT_FALSE(lt.ok());
  EXPECT_EQ(lt.status().code(), TFC_FAILED_PRECONDITION);
  const std::string message = lt.status().message();
  EXPECT_EQ(message.find("TFC_CUBLASLT_LIBRARY=" + path + " not loadable: "), 0u) << message;
}

TEST(CudaCublasLt, LibraryWithoutTheFunctionsNamesTheFirstMissing) {
  // A shared object that exports nothing of cuBLASLt's API.
  const std::string path = std::string(TFC_FAKE_ARTIFACT_DIR) + "/fake_plain_library.so";
  auto lt = loadCublasLtFrom(path);
  ASSERT_FALSE(lt.ok());
  EXPECT_EQ(lt.status().code(), TFC_FAILED_PRECONDITION);
  const std::string message = lt.status().message();
  EXPECT_NE(message.find(path + ": lacks cublasLtGetVersion (not cuBLASLt?)"),
            std::string::npos)
      << message;
}

TEST(CudaCublasLt, VersionText) {
  EXPECT_EQ(cublasLtVersionText(130100), "13.1.0");
  EXPECT_EQ(cublasLtVersionText(kMinCublasLtVersion), "11.0.0");
}

}  // namespace
}  // namespace tfc::internal::cuda
