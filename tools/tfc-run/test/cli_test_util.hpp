// Helpers shared by the tfc-run command-line tests: running the binary through the shell,
// reading files, and a fixture that owns a scratch directory.
#ifndef TFC_TOOLS_TFC_RUN_TEST_CLI_TEST_UTIL_HPP_
#define TFC_TOOLS_TFC_RUN_TEST_CLI_TEST_UTIL_HPP_

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

// ASSERT_OK and the test seed are shared with the runtime's tests (TFC_TEST_SEED).
#include "../../../runtime/test/test_seed.hpp"
#include "../../../runtime/test/test_status.hpp"

namespace tfc_run_test {

// A single-quoted shell word.
inline std::string quote(const std::string& arg) {
  std::string quoted = "'";
  for (char c : arg) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

struct Result {
  int code = -1;
  std::string output;  // stdout and stderr together
};

// Runs |program| with |args| (stdout and stderr together); |prefix| is shell text run before
// it in the same shell, e.g. "ulimit -f 2;", and |wrapper| a command that runs it, e.g.
// "setpriv --reuid=65534".
inline Result runProgram(const std::string& program, const std::vector<std::string>& args,
                         const std::string& prefix = "", const std::string& wrapper = "") {
  std::string command = prefix + " exec " + wrapper + " " + quote(program);
  for (const std::string& arg : args) command += " " + quote(arg);
  command = "sh -c " + quote(command) + " 2>&1";
  Result result;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  size_t got = 0;
  while ((got = fread(buffer, 1, sizeof(buffer), pipe)) > 0) result.output.append(buffer, got);
  int status = pclose(pipe);
  result.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

// runProgram for tfc-run.
inline Result run(const std::vector<std::string>& args, const std::string& prefix = "",
                  const std::string& wrapper = "") {
  return runProgram(TFC_RUN_PATH, args, prefix, wrapper);
}

inline bool exists(const std::string& path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0;
}

inline std::string readAll(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A test with its own scratch directory under /tmp, removed afterwards (also when a test
// made parts of it read-only).
class ScratchDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/tfc-run-test-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::string command = "chmod -R u+w " + quote(dir_) + "; rm -rf " + quote(dir_);
    ASSERT_EQ(std::system(command.c_str()), 0);
  }
  std::string file(const std::string& name) const { return dir_ + "/" + name; }

  std::string dir_;
};

}  // namespace tfc_run_test

#endif  // TFC_TOOLS_TFC_RUN_TEST_CLI_TEST_UTIL_HPP_
