#include "rtloop/framework/status.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <memory>
#include <string>

namespace rtloop {
namespace {

TEST(StatusTest, DefaultIsOk) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.ToString(), "OK");
  EXPECT_TRUE(Status::Ok().ok());
}

TEST(StatusTest, ToStringNamesTheCode) {
  EXPECT_EQ(InvalidArgumentError("bad period").ToString(), "INVALID_ARGUMENT: bad period");
  EXPECT_EQ(FailedPreconditionError("x").code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(NotFoundError("x").code(), StatusCode::kNotFound);
  EXPECT_EQ(DataLossError("x").code(), StatusCode::kDataLoss);
  EXPECT_EQ(InternalError("x").code(), StatusCode::kInternal);
  EXPECT_EQ(StatusCodeName(StatusCode::kPermissionDenied), "PERMISSION_DENIED");
}

TEST(StatusTest, ErrnoErrorMapsCodeAndCarriesTextAndHint) {
  Status s = ErrnoError(EPERM, "cannot set SCHED_FIFO 99 on task \"pos\"", "run as root");
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(s.sys_errno(), EPERM);
  EXPECT_EQ(s.message(),
            "cannot set SCHED_FIFO 99 on task \"pos\": Operation not permitted — run as root");
  EXPECT_EQ(ErrnoError(ENOENT, "open").code(), StatusCode::kNotFound);
  EXPECT_EQ(ErrnoError(EINVAL, "x").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ErrnoError(EADDRINUSE, "x").code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(ErrnoError(EIO, "x").code(), StatusCode::kInternal);
  EXPECT_EQ(ErrnoError(ENOENT, "open f").message(), "open f: No such file or directory");
}

TEST(StatusTest, ResultHoldsValueOrStatus) {
  Result<int> good = 42;
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 42);
  EXPECT_TRUE(good.status().ok());
  Result<int> bad = InvalidArgumentError("nope");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "nope");
  Result<std::unique_ptr<int>> moved = std::make_unique<int>(7);
  std::unique_ptr<int> p = *std::move(moved);
  EXPECT_EQ(*p, 7);
}

Status FailsThenContinues(bool fail) {
  RTLOOP_RETURN_IF_ERROR(fail ? InternalError("inner") : Status::Ok());
  return NotFoundError("reached the end");
}

TEST(StatusTest, ReturnIfErrorReturnsEarlyOnlyOnError) {
  EXPECT_EQ(FailsThenContinues(true).message(), "inner");
  EXPECT_EQ(FailsThenContinues(false).code(), StatusCode::kNotFound);
}

TEST(StatusDeathTest, ResultValueOnErrorAborts) {
  Result<int> bad = InvalidArgumentError("nope");
  EXPECT_DEATH((void)bad.value(), "Result::value\\(\\) on an error");
}

}  // namespace
}  // namespace rtloop
