// Helpers shared by the runtime's unit tests: a scratch directory, byte-level file helpers,
// seeded random data and an assertion for error statuses.
#ifndef TFC_RUNTIME_TEST_TEST_UTIL_HPP_
#define TFC_RUNTIME_TEST_TEST_UTIL_HPP_

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "test_seed.hpp"
#include "test_status.hpp"
#include "tfc/runtime/status.hpp"

namespace tfc::testing {

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // The path of |name| inside the directory.
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  // The names of the directory's entries, sorted.
  std::vector<std::string> list() const;

 private:
  std::string path_;
};

void writeBytes(const std::string& path, const std::string& bytes);
std::string readBytes(const std::string& path);

// A random engine seeded from testSeedForCurrentTest() (TFC_TEST_SEED, see
// test_seed.hpp); SCOPED_TRACE(random.trace()) adds the seeds to a failure's message.
struct Random {
  Random();
  std::string trace() const {
    return "random seed " + std::to_string(seed) + " (TFC_TEST_SEED=" +
           std::to_string(testSeed()) + ")";
  }
  // Fills |size| bytes with random values, never all zeros when size > 0.
  void fill(void* data, size_t size);
  // Fills |size| bytes with random 0/1 values (for BOOL), at least one 1 when size > 0.
  void fillBool(void* data, size_t size);

  uint64_t seed;
  std::mt19937_64 engine;
};

// The bytes of a safetensors file: the 8-byte little-endian length of |header|, |header|,
// and |dataSize| bytes of data.
std::string safetensorsBytes(const std::string& header, size_t dataSize);

// While alive, limits the size of files this process may write to |bytes| (RLIMIT_FSIZE,
// with SIGXFSZ ignored), so that a large write fails with EFBIG: a real I/O error.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(uint64_t bytes);
  ~FileSizeLimit();
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;

 private:
  uint64_t previousSoftLimit_;
  void (*previousHandler_)(int);
};

// Passes if |status| has |code| and its message contains |path| and |keyword|.
::testing::AssertionResult isError(const Status& status, tfc_status_code_t code,
                                   const std::string& path, const std::string& keyword);

}  // namespace tfc::testing

#endif  // TFC_RUNTIME_TEST_TEST_UTIL_HPP_
