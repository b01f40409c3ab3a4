#include "test_util.hpp"

#include <signal.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace tfc::testing {

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string pattern = std::string(base != nullptr && *base != '\0' ? base : "/tmp") +
                        "/tfc-runtime-test-XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (mkdtemp(buffer.data()) == nullptr) {
    ADD_FAILURE() << "mkdtemp failed for " << pattern;
  }
  path_ = buffer.data();
}

TempDir::~TempDir() {
  std::error_code error;
  std::filesystem::remove_all(path_, error);
}

std::vector<std::string> TempDir::list() const {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(path_)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

void writeBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << "cannot write " << path;
}

std::string readBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

Random::Random() : seed(testSeedForCurrentTest()), engine(seed) {}

void Random::fill(void* data, size_t size) {
  auto* bytes = static_cast<uint8_t*>(data);
  std::uniform_int_distribution<int> byte(0, 255);
  bool anyNonZero = false;
  for (size_t i = 0; i < size; ++i) {
    bytes[i] = static_cast<uint8_t>(byte(engine));
    anyNonZero |= bytes[i] != 0;
  }
  if (size > 0 && !anyNonZero) bytes[size / 2] = 0x5A;
}

void Random::fillBool(void* data, size_t size) {
  auto* bytes = static_cast<uint8_t*>(data);
  std::uniform_int_distribution<int> bit(0, 1);
  bool anyOne = false;
  for (size_t i = 0; i < size; ++i) {
    bytes[i] = static_cast<uint8_t>(bit(engine));
    anyOne |= bytes[i] != 0;
  }
  if (size > 0 && !anyOne) bytes[0] = 1;
}

std::string safetensorsBytes(const std::string& header, size_t dataSize) {
  std::string bytes;
  uint64_t length = header.size();
  for (int i = 0; i < 8; ++i) bytes += static_cast<char>((length >> (8 * i)) & 0xFF);
  bytes += header;
  for (size_t i = 0; i < dataSize; ++i) bytes += static_cast<char>(i * 7 + 1);
  return bytes;
}

FileSizeLimit::FileSizeLimit(uint64_t bytes) {
  struct rlimit limit;
  getrlimit(RLIMIT_FSIZE, &limit);
  previousSoftLimit_ = limit.rlim_cur;
  previousHandler_ = signal(SIGXFSZ, SIG_IGN);
  limit.rlim_cur = bytes;
  EXPECT_EQ(setrlimit(RLIMIT_FSIZE, &limit), 0);
}

FileSizeLimit::~FileSizeLimit() {
  struct rlimit limit;
  getrlimit(RLIMIT_FSIZE, &limit);
  limit.rlim_cur = previousSoftLimit_;
  setrlimit(RLIMIT_FSIZE, &limit);
  signal(SIGXFSZ, previousHandler_);
}

::testing::AssertionResult isError(const Status& status, tfc_status_code_t code,
                                   const std::string& path, const std::string& keyword) {
  if (status.ok()) return ::testing::AssertionFailure() << "expected an error, got OK";
  std::string message = status.message();
  if (status.code() != code) {
    return ::testing::AssertionFailure()
           << "expected code " << tfc_status_code_string(code) << ", got "
           << status.toString();
  }
  if (message.find(path) == std::string::npos) {
    return ::testing::AssertionFailure() << "message does not name '" << path
                                         << "': " << message;
  }
  if (message.find(keyword) == std::string::npos) {
    return ::testing::AssertionFailure() << "message lacks '" << keyword << "': " << message;
  }
  return ::testing::AssertionSuccess() << status.toString();
}

}  // namespace tfc::testing
