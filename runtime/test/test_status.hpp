// ASSERT_OK / EXPECT_OK for Status and StatusOr<T>: on failure they print the expression
// and the status's code and message ("ASSERT_TRUE(x.ok())" prints only "Actual: false").
// Header-only, for every test binary that uses the runtime's statuses.
#ifndef TFC_RUNTIME_TEST_TEST_STATUS_HPP_
#define TFC_RUNTIME_TEST_TEST_STATUS_HPP_

#include <gtest/gtest.h>

#include "tfc/runtime/status.hpp"

namespace tfc::testing {

inline const Status& statusOf(const Status& status) { return status; }
template <typename T>
const Status& statusOf(const StatusOr<T>& value) {
  return value.status();
}

template <typename T>
::testing::AssertionResult isOkFormat(const char* expression, const T& value) {
  const Status& status = statusOf(value);
  if (status.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << expression << " is not OK: " << status.toString();
}

}  // namespace tfc::testing

#define ASSERT_OK(expression) ASSERT_PRED_FORMAT1(::tfc::testing::isOkFormat, expression)
#define EXPECT_OK(expression) EXPECT_PRED_FORMAT1(::tfc::testing::isOkFormat, expression)

#endif  // TFC_RUNTIME_TEST_TEST_STATUS_HPP_
