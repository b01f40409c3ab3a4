// Per-thread context: host, errors (first wins, take clears, workers reach the caller).
#include <gtest/gtest.h>

#include <string>
#include <thread>

#include "internal.h"
#include "test_util.h"

namespace tfc_kern_test {
namespace {

TEST(Context, FirstErrorWinsAndTakeClears) {
  tfc_kernels_set_host(nullptr);
  EXPECT_EQ(tfc_kernels_take_error(), nullptr);
  tfc_kernels_error("first");
  tfc_kernels_error("second");
  const char* e = tfc_kernels_take_error();
  ASSERT_NE(e, nullptr);
  EXPECT_STREQ(e, "first");
  EXPECT_EQ(tfc_kernels_take_error(), nullptr);
  tfc_kernels_error("third");
  tfc_kernels_set_host(nullptr);  // a new call clears a pending error
  EXPECT_EQ(tfc_kernels_take_error(), nullptr);
}

TEST(Context, ErrorsArePerThread) {
  tfc_kernels_set_host(nullptr);
  tfc_kernels_error("main");
  std::thread t([] {
    EXPECT_EQ(tfc_kernels_take_error(), nullptr);
    tfc_kernels_error("other");
    EXPECT_STREQ(tfc_kernels_take_error(), "other");
  });
  t.join();
  EXPECT_STREQ(tfc_kernels_take_error(), "main");
}

TEST(Context, WorkerErrorReachesCaller) {
  ThreadHost host(3);
  ScopedHost sh(host.api());
  // Row 5 of 6 is processed by the last worker thread.
  std::vector<float> x(6 * 4, 1.f);
  x[5 * 4 + 2] = NAN;
  std::vector<int32_t> ids(6);
  tfc_k_sample_f32(x.data(), 6, 4, 1.f, 0, 1.f, 3, ids.data());
  const char* e = tfc_kernels_take_error();
  ASSERT_NE(e, nullptr);
  EXPECT_NE(std::string(e).find("row 5"), std::string::npos);
}

TEST(Context, HostIsPerThreadAndOptional) {
  ThreadHost host(2);
  tfc_kernels_set_host(host.api());
  std::thread t([] {
    // no host here: runs serially
    std::vector<float> a(300 * 300, 0.5f), c(300 * 300);
    tfc_k_matmul_f32(a.data(), a.data(), c.data(), 1, 300, 300, 300, 0, 0, 0, 0, 0, 0);
    EXPECT_FLOAT_EQ(c[0], 75.f);
  });
  t.join();
  EXPECT_EQ(host.calls(), 0);
  tfc_kernels_set_host(nullptr);
}

TEST(Context, BadAttentionHeadsIsAnError) {
  tfc_kernels_set_host(nullptr);
  float dummy = 0;
  tfc_k_attention_f32(&dummy, &dummy, &dummy, &dummy, 1, 3, 2, 1, 1, 1, 1, 0, 0, 1.f);
  EXPECT_NE(tfc_kernels_take_error(), nullptr);
}

}  // namespace
}  // namespace tfc_kern_test
