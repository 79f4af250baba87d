// Where a test finds what the build made and the sources it reads, at run time: the programs and
// libraries it starts or inspects, the golden files and test data in the source tree.
//
//   using rtloop::testing::TargetFile;
//   rtloop::testing::ChildProcess top({TargetFile("rtloop-top"), address, "--once"});
//   std::ifstream golden(rtloop::testing::SourcePath("tests/cyclic/golden/10-quiet-summary.txt"));
//
// The paths come from a file next to the test executable, `<executable>.paths`, that CMake writes
// (rtloop_test_paths() in tests/CMakeLists.txt): one `key=value` line per entry, `source_dir`,
// `binary_dir` and one line per target the test declared. They used to be compiled in (`-D`), which
// put the build's path into every test object, so no two clones of the repository shared a compiled
// object in the compiler cache (tests/sanitizers/README.md, "CI's time").
//
// A missing file or an undeclared key ends the test program with a message that says which file or
// key and how to fix it (exit 2): a wrong path is the build's error, not a test's finding.
//
// Threading: any thread; the file is read once, on first use (a function-local static). Not
// RT-safe.
#pragma once

#include <string>
#include <string_view>

namespace rtloop::testing {

// The file CMake built for target `target` ($<TARGET_FILE:target>), e.g. "rtloop-cyclic" or
// "rtloop_framework". The test's target must name it in rtloop_test_paths().
std::string TargetFile(std::string_view target);

// Whether the build made `target` (an optional one, e.g. rtloop-cyclic without RTLOOP_BUILD_BENCH).
bool HasTargetFile(std::string_view target);

// `relative` under the source tree's top (PROJECT_SOURCE_DIR), e.g. "tests/cyclic/golden".
std::string SourcePath(std::string_view relative);

// `relative` under the build tree's top (PROJECT_BINARY_DIR), e.g. "fleet-page.png".
std::string BuildPath(std::string_view relative);

}  // namespace rtloop::testing
