// Tests the C status API and its C++ wrappers.
#include <gtest/gtest.h>

#include <string>

#include "test_status.hpp"
#include "tfc/runtime/status.h"
#include "tfc/runtime/status.hpp"

namespace tfc {
namespace {

TEST(StatusC, NullIsOk) {
  EXPECT_EQ(tfc_status_code(nullptr), TFC_OK);
  EXPECT_STREQ(tfc_status_message(nullptr), "");
  tfc_status_free(nullptr);
}

TEST(StatusC, MakeFormatsMessage) {
  tfc_status_t status = tfc_status_make(TFC_DATA_LOSS, "%s: tensor '%s' needs %d bytes",
                                        "model.safetensors", "wte", 42);
  ASSERT_NE(status, nullptr);
  EXPECT_EQ(tfc_status_code(status), TFC_DATA_LOSS);
  EXPECT_STREQ(tfc_status_message(status), "model.safetensors: tensor 'wte' needs 42 bytes");
  tfc_status_free(status);
}

TEST(StatusC, MakeOkIsNull) { EXPECT_EQ(tfc_status_make(TFC_OK, "ignored"), nullptr); }

TEST(StatusC, LongMessageIsNotTruncated) {
  std::string long_text(5000, 'x');
  tfc_status_t status = tfc_status_make(TFC_INTERNAL, "[%s]", long_text.c_str());
  EXPECT_EQ(std::string(tfc_status_message(status)), "[" + long_text + "]");
  tfc_status_free(status);
}

TEST(StatusC, CodeStrings) {
  EXPECT_STREQ(tfc_status_code_string(TFC_OK), "OK");
  EXPECT_STREQ(tfc_status_code_string(TFC_DATA_LOSS), "DATA_LOSS");
  EXPECT_STREQ(tfc_status_code_string(TFC_INTERNAL), "INTERNAL");
  EXPECT_STREQ(tfc_status_code_string(static_cast<tfc_status_code_t>(999)), "UNKNOWN");
}

TEST(Status, DefaultIsOk) {
  Status status;
  EXPECT_OK(status);
  EXPECT_EQ(status.code(), TFC_OK);
  EXPECT_STREQ(status.message(), "");
  EXPECT_EQ(status.toString(), "OK");
}

TEST(Status, ErrorAndMove) {
  Status status = Status::error(TFC_NOT_FOUND, "%s: no tensor named '%s'", "a.safetensors", "x");
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(status.toString(), "NOT_FOUND: a.safetensors: no tensor named 'x'");
  Status moved = std::move(status);
  EXPECT_OK(status);  // NOLINT(bugprone-use-after-move): moved-from is OK by contract
  EXPECT_EQ(moved.code(), TFC_NOT_FOUND);
  tfc_status_t raw = moved.release();
  EXPECT_OK(moved);
  EXPECT_EQ(tfc_status_code(raw), TFC_NOT_FOUND);
  tfc_status_free(raw);
}

TEST(Status, FromMessageView) {
  Status status(TFC_IO_ERROR, std::string_view("abcdef").substr(1, 3));
  EXPECT_STREQ(status.message(), "bcd");
  EXPECT_OK(Status(TFC_OK, "ignored"));
}

StatusOr<int> half(int value) {
  if (value % 2 != 0) return Status::error(TFC_INVALID_ARGUMENT, "%d is odd", value);
  return value / 2;
}

Status checkEven(int value) {
  TFC_ASSIGN_OR_RETURN(int unused, half(value));
  (void)unused;
  return Status();
}

StatusOr<int> quarter(int value) {
  TFC_ASSIGN_OR_RETURN(int h, half(value));
  TFC_ASSIGN_OR_RETURN(int q, half(h));
  TFC_RETURN_IF_ERROR(checkEven(value));
  return q;
}

TEST(StatusOr, ValueAndError) {
  StatusOr<int> good = half(8);
  ASSERT_OK(good);
  EXPECT_EQ(*good, 4);
  EXPECT_OK(good.status());

  StatusOr<int> bad = half(3);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), TFC_INVALID_ARGUMENT);
  EXPECT_STREQ(bad.status().message(), "3 is odd");
}

TEST(StatusOr, OkStatusBecomesInternal) {
  StatusOr<int> result{Status()};
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), TFC_INTERNAL);
}

TEST(StatusOr, MacrosPropagate) {
  EXPECT_EQ(quarter(12).value(), 3);
  StatusOr<int> result = quarter(6);
  ASSERT_FALSE(result.ok());
  EXPECT_STREQ(result.status().message(), "3 is odd");
  EXPECT_OK(checkEven(2));
  EXPECT_EQ(checkEven(1).code(), TFC_INVALID_ARGUMENT);
}

TEST(StatusOr, MoveOnlyValue) {
  StatusOr<std::unique_ptr<int>> result = std::make_unique<int>(7);
  ASSERT_OK(result);
  std::unique_ptr<int> value = std::move(result).value();
  EXPECT_EQ(*value, 7);
}

TEST(StatusOrDeathTest, ValueOnErrorAborts) {
  StatusOr<int> bad = half(1);
  EXPECT_DEATH((void)bad.value(), "1 is odd");
}

// ASSERT_OK's point: a failure shows the expression and the status, not "Actual: false".
TEST(AssertOk, FailureNamesTheExpressionAndTheStatus) {
  StatusOr<int> bad = Status(TFC_NOT_FOUND, "w.safetensors: no tensor named 'x'");
  ::testing::AssertionResult result = testing::isOkFormat("bad", bad);
  EXPECT_FALSE(result);
  EXPECT_STREQ(result.message(),
               "bad is not OK: NOT_FOUND: w.safetensors: no tensor named 'x'");
  EXPECT_TRUE(testing::isOkFormat("good", StatusOr<int>(1)));
  EXPECT_TRUE(testing::isOkFormat("ok", Status()));
}

}  // namespace
}  // namespace tfc
