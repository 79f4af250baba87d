// ChildProcess (child_process.h), the helper the fault and fleet tests start programs with: what
// Output() promises once the constructor returned, whatever posix_spawn's implementation.
//
//   ChildProcess child({"/bin/sleep", "10"}, dir / "out");
//   EXPECT_EQ(child.Output(), "");  // not an earlier child's output left in the file
//
// One test thread.
#include "child_process.h"

#include <gtest/gtest.h>

#include <fstream>

#include "scratch_dir.h"

namespace rtloop::telemetry::testing {
namespace {

// A test that reuses an output file (SecurityLimits.RtloopCyclicsTokenFileGuards... starts
// rtloop-cyclic twice) must not read the first child's output as the second's: under qemu-user,
// posix_spawn returned before the child had emptied the file (47 to 49 of 50 starts while the
// child did it), and that test read the first server's port. A race, hence 20 starts.
TEST(ChildProcessTest, OutputHoldsNothingOfAnEarlierChildOnceStarted) {
  const ScratchDir dir("child_output");
  const std::filesystem::path out = dir / "out";
  int stale = 0;
  for (int i = 0; i < 20; ++i) {
    std::ofstream(out) << "an earlier child's output\n";
    ChildProcess child({"/bin/sleep", "10"}, out);
    ASSERT_TRUE(child.started()) << child.error();
    stale += child.Output() != "";
  }
  EXPECT_EQ(stale, 0);
}

// A file that cannot be opened is an error the test can print, not a child writing nowhere.
TEST(ChildProcessTest, AnOutputThatCannotBeOpenedIsAnError) {
  const ScratchDir dir("child_output_missing");
  ChildProcess child({"/bin/sleep", "10"}, dir / "no-such-dir" / "out");
  EXPECT_FALSE(child.started());
  EXPECT_NE(child.error().find("no-such-dir"), std::string::npos) << child.error();
}

}  // namespace
}  // namespace rtloop::telemetry::testing
