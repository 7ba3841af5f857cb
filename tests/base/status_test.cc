// base/status: the terminal mark travels with prefixes and never marks success.
#include "base/status.h"

#include <gtest/gtest.h>

namespace paratune {
namespace {

TEST(StatusTest, TerminalMarkSurvivesContextAndLeavesTheCodeAlone) {
  const Status plain = Status::Invalid("spec.x: bad");
  EXPECT_FALSE(plain.terminal());
  const Status terminal = plain.AsTerminal();
  EXPECT_TRUE(terminal.terminal());
  EXPECT_EQ(terminal.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(terminal.ToString(), plain.ToString());
  const Status prefixed = terminal.WithPrefix("campaign ns/a");
  EXPECT_TRUE(prefixed.terminal());
  EXPECT_EQ(prefixed.message(), "campaign ns/a: spec.x: bad");
  EXPECT_FALSE(Status::Ok().AsTerminal().terminal());
  EXPECT_TRUE(Status::Ok().AsTerminal().ok());
}

}  // namespace
}  // namespace paratune
