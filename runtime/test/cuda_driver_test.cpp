// Tests the CUDA driver loader's failures (no GPU needed): a library that is not there, a
// library that is not a CUDA driver, TFC_CUDA_DRIVER and the per-process cache, and the
// messages of check(). Loading a working driver is test/cuda_emulator's job (it runs an
// emulated libcuda.so.1 through this loader).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "devices/cuda/driver.hpp"
#include "fake_artifacts.hpp"
#include "test_status.hpp"

namespace tfc::internal::cuda {
namespace {

TEST(CudaDriver, MissingLibraryFromEnvironmentNamesThePath) {
  const std::string path = "/nonexistent/tfc-test/libcuda.so.1";
  auto driver = loadDriverFrom(path, /*fromEnvironment=*/true);
  ASSERT_FALSE(driver.ok());
  EXPECT_EQ(driver.status().code(), TFC_FAILED_PRECONDITION);
  const std::string message = driver.status().message();
  EXPECT_NE(message.find("TFC_CUDA_DRIVER=" + path), std::string::npos) << message;
  EXPECT_NE(message.find("cannot load the CUDA driver"), std::string::npos) << message;
}

TEST(CudaDriver, MissingSystemDriverSaysWhatRunsWithoutOne) {
  auto driver = loadDriverFrom("libtfc-test-no-such-driver.so.1");
  ASSERT_FALSE(driver.ok());
  EXPECT_EQ(driver.status().code(), TFC_FAILED_PRECONDITION);
  const std::string message = driver.status().message();
  EXPECT_NE(message.find("no NVIDIA driver found (libtfc-test-no-such-driver.so.1 not loadable"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("a CUDA artifact"), std::string::npos) << message;
  EXPECT_NE(message.find("without --target=cuda"), std::string::npos) << message;
}

TEST(CudaDriver, LibraryWithoutTheFunctionsNamesTheFirstMissing) {
  // A shared object that exports nothing of the driver API.
  const std::string path = std::string(TFC_FAKE_ARTIFACT_DIR) + "/fake_plain_library.so";
  auto driver = loadDriverFrom(path);
  ASSERT_FALSE(driver.ok());
  EXPECT_EQ(driver.status().code(), TFC_FAILED_PRECONDITION);
  const std::string message = driver.status().message();
  EXPECT_NE(message.find(path + ": the CUDA driver lacks cuInit "), std::string::npos)
      << message;
  EXPECT_NE(message.find("tfc needs CUDA 12 or newer"), std::string::npos) << message;
}

// The only test that calls loadDriver: its result is cached for the whole process.
TEST(CudaDriver, LoadDriverReadsTheEnvironmentOnceAndCaches) {
  const std::string path = "/nonexistent/tfc-test-cached/libcuda.so.1";
  const char* previous = std::getenv("TFC_CUDA_DRIVER");
  const std::string saved = previous != nullptr ? previous : "";
  ASSERT_EQ(setenv("TFC_CUDA_DRIVER", path.c_str(), 1), 0);
  auto first = loadDriver();
  // A later change of the variable does not matter: the first answer stays.
  ASSERT_EQ(setenv("TFC_CUDA_DRIVER", "/nonexistent/other/libcuda.so.1", 1), 0);
  auto second = loadDriver();
  if (previous != nullptr) {
    setenv("TFC_CUDA_DRIVER", saved.c_str(), 1);
  } else {
    unsetenv("TFC_CUDA_DRIVER");
  }
  ASSERT_FALSE(first.ok());
  ASSERT_FALSE(second.ok());
  EXPECT_NE(std::string(first.status().message()).find(path), std::string::npos)
      << first.status().message();
  EXPECT_STREQ(first.status().message(), second.status().message());
  EXPECT_EQ(first.status().code(), second.status().code());
}

// A driver whose only functions are the two that name errors.
Driver namingDriver() {
  Driver driver;
  driver.cuGetErrorName = [](CUresult result, const char** name) -> CUresult {
    if (result != CUDA_ERROR_OUT_OF_MEMORY) {
      *name = nullptr;
      return CUDA_ERROR_INVALID_VALUE;
    }
    *name = "CUDA_ERROR_OUT_OF_MEMORY";
    return CUDA_SUCCESS;
  };
  driver.cuGetErrorString = [](CUresult result, const char** text) -> CUresult {
    if (result != CUDA_ERROR_OUT_OF_MEMORY) {
      *text = nullptr;
      return CUDA_ERROR_INVALID_VALUE;
    }
    *text = "out of memory";
    return CUDA_SUCCESS;
  };
  return driver;
}

TEST(CudaDriver, CheckNamesWhatFailedAndTheDriversError) {
  const Driver driver = namingDriver();
  EXPECT_OK(check(driver, CUDA_SUCCESS, "cuMemAlloc"));
  Status oom = check(driver, CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc of the 2 GiB arena");
  EXPECT_EQ(oom.code(), TFC_OUT_OF_MEMORY);
  EXPECT_STREQ(oom.message(),
               "cuMemAlloc of the 2 GiB arena: CUDA_ERROR_OUT_OF_MEMORY (out of memory)");
  // A result the driver cannot name is given as a number.
  Status unknown = check(driver, 12345, "cuLaunchKernel");
  EXPECT_EQ(unknown.code(), TFC_FAILED_PRECONDITION);
  EXPECT_STREQ(unknown.message(), "cuLaunchKernel: CUDA error 12345");
  EXPECT_EQ(check(driver, CUDA_ERROR_INVALID_VALUE, "cuLaunchKernel").code(), TFC_INTERNAL);
}

}  // namespace
}  // namespace tfc::internal::cuda
