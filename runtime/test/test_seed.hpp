// The one source of seeds for every randomized C++ test (the runtime's, tfc-run's and the
// kernels'): TFC_TEST_SEED when set, else one drawn once per run. Whenever a test fails the
// seed is printed with the command line that replays it, so a failure seen once can be
// reproduced. (gtest's --gtest_random_seed only shuffles the test order; it seeds nothing.)
// Header-only so that every test binary can include it without linking anything.
#ifndef TFC_RUNTIME_TEST_TEST_SEED_HPP_
#define TFC_RUNTIME_TEST_TEST_SEED_HPP_

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>

namespace tfc::testing {

// The seed of this run.
inline uint64_t testSeed() {
  static const uint64_t seed = []() -> uint64_t {
    if (const char* text = std::getenv("TFC_TEST_SEED"); text != nullptr && *text != '\0') {
      char* end = nullptr;
      unsigned long long value = std::strtoull(text, &end, 10);
      if (*end == '\0') return static_cast<uint64_t>(value);
      // A typo must not silently turn into a random run.
      std::fprintf(stderr, "TFC_TEST_SEED='%s' is not a decimal number\n", text);
      std::exit(2);
    }
    std::random_device device;
    return (static_cast<uint64_t>(device()) << 32 | device()) % 1000000007ull;
  }();
  return seed;
}

// A seed for the running test: the run's seed mixed with the test's name, so that tests
// draw different values but each one replays alone (with --gtest_filter) as in the run.
inline uint64_t testSeedForCurrentTest() {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = info ? std::string(info->test_suite_name()) + "." + info->name() : "";
  uint64_t z = testSeed() ^ (static_cast<uint64_t>(std::hash<std::string>{}(name)) *
                             0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;  // SplitMix64's finalizer
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Prints the seed after each failed test.
class SeedPrinter : public ::testing::EmptyTestEventListener {
  void OnTestEnd(const ::testing::TestInfo& info) override {
    if (!info.result()->Failed()) return;
    std::printf("[   SEED   ] %s.%s failed with TFC_TEST_SEED=%llu; replay it with "
                "TFC_TEST_SEED=%llu and --gtest_filter=%s.%s\n",
                info.test_suite_name(), info.name(), static_cast<unsigned long long>(testSeed()),
                static_cast<unsigned long long>(testSeed()), info.test_suite_name(), info.name());
  }
};

// Installed once per binary, before main runs (the listener list owns it).
inline const bool kSeedPrinterInstalled = [] {
  ::testing::UnitTest::GetInstance()->listeners().Append(new SeedPrinter);
  return true;
}();

}  // namespace tfc::testing

#endif  // TFC_RUNTIME_TEST_TEST_SEED_HPP_
