// The golden-with-placeholders matcher (tests/testing/golden_lines.h) that the rtloop-cyclic
// end-to-end tests check the binary's output with: patterns that must match, ones that must not,
// and what a failure reports.
#include "golden_lines.h"

#include <gtest/gtest.h>

#include <string>

namespace rtloop::testing {
namespace {

TEST(GoldenLines, PlaceholdersMatchWhatARunMeasures) {
  EXPECT_TRUE(MatchLine("T: 0 (%tid) P: 0 I:500 C:%int Min:%int Act:%int Avg:%int Max:%int",
                        "T: 0 ( 4321) P: 0 I:500 C:     20 Min:      3 Act:    5 Avg:    4 Max:"
                        "      12"));
  EXPECT_TRUE(MatchLine("\"avg\": %float,", "\"avg\": 4.250000,"));
  EXPECT_TRUE(MatchLine("\"avg\": %float,", "\"avg\": 4,"));
  EXPECT_TRUE(MatchLine("x=%int", "x=-17"));
  EXPECT_TRUE(MatchLine("pid %pid", "pid 123456"));
  EXPECT_TRUE(MatchLine("name: %word!", "name: rtloop-cyclic!"));
  EXPECT_TRUE(MatchLine("policy: other/other: loadavg: %any", "policy: other/other: loadavg: 0.1"));
  EXPECT_TRUE(MatchLine("a%anyb", "ab"));
  EXPECT_TRUE(MatchLine("100%% done", "100% done"));
  EXPECT_TRUE(MatchLine("%e[4Apolicy", "\033[4Apolicy"));
  EXPECT_TRUE(MatchLine("%int%int", "12"));  // backtracks: the first takes "1"
  EXPECT_TRUE(MatchLine("", ""));
  EXPECT_TRUE(MatchLine("C:%7int|", "C:     20|"));
  EXPECT_TRUE(MatchLine("C:%7int|", "C:12345678|"));  // wider than 7: printf does not cut
  EXPECT_TRUE(MatchLine("(%5tid)", "(123456)"));
}

TEST(GoldenLines, AWidthIsPrintfsFieldWidth) {
  EXPECT_FALSE(MatchLine("C:%7int|", "C:    20|"));    // 6 columns
  EXPECT_FALSE(MatchLine("C:%7int|", "C:      20|"));  // 8 columns
  EXPECT_FALSE(MatchLine("C:%7int|", "C: 12345678|"));
  EXPECT_TRUE(MatchLine("%8int:%8int", "       0:      12"));
  EXPECT_FALSE(MatchLine("%8int:%8int", "0:      12"));
  std::string error;
  EXPECT_FALSE(MatchLine("%5word", "abcde", &error));
  EXPECT_NE(error.find("a width only before"), std::string::npos) << error;
}

TEST(GoldenLines, LiteralTextAndPlaceholdersMustMatchInFull) {
  EXPECT_FALSE(MatchLine("C:%int", "C:     20 extra"));  // the whole line, not a prefix
  EXPECT_FALSE(MatchLine("Max:%int", "x Max:3"));        // nor a suffix
  EXPECT_FALSE(MatchLine("C:%int", "C:"));               // at least one digit
  EXPECT_FALSE(MatchLine("C:%int", "C:12a"));
  EXPECT_FALSE(MatchLine("x=%float", "x=1."));
  EXPECT_FALSE(MatchLine("x=%float", "x=nan"));
  EXPECT_FALSE(MatchLine("(%tid)", "(-5)"));  // an id is positive
  EXPECT_FALSE(MatchLine("(%tid)", "(0)"));
  EXPECT_FALSE(MatchLine("%word", ""));
  EXPECT_FALSE(MatchLine("%word", "two words"));
  EXPECT_FALSE(MatchLine("a.b", "axb"));  // no regular expression: '.' is a dot
  EXPECT_FALSE(MatchLine("[%int]", "[ ]"));
  EXPECT_FALSE(MatchLine("%e[4A", "[4A"));
}

TEST(GoldenLines, AnUnknownPlaceholderIsAnErrorNotALiteral) {
  std::string error;
  EXPECT_FALSE(MatchLine("50%", "50%", &error));
  EXPECT_NE(error.find("unknown placeholder"), std::string::npos) << error;
  EXPECT_FALSE(MatchLine("%bogus", "%bogus", &error));
  EXPECT_NE(error.find("column 1"), std::string::npos) << error;
}

TEST(GoldenLines, TheLineCountMustMatchExactly) {
  EXPECT_EQ(MatchGolden("a %int\nb\n", "a 1\nb\n"), "");
  EXPECT_NE(MatchGolden("a %int\nb\n", "a 1\nb\nc\n"), "");
  EXPECT_NE(MatchGolden("a %int\nb\n", "a 1\n"), "");
  EXPECT_EQ(MatchGolden("", ""), "");
  EXPECT_NE(MatchGolden("", "\n"), "");
  EXPECT_EQ(MatchGolden("%# the command\n%# another comment\nx\n", "x\n"), "");
}

TEST(GoldenLines, LinesRepeatsOneOrMoreLinesAndBacktracks) {
  const std::string golden = "# Histogram\n%lines %int %int\n9 %int\n# end\n";
  EXPECT_EQ(MatchGolden(golden, "# Histogram\n1 5\n2 7\n9 0\n# end\n"), "");
  // "9 0" matches the repeated pattern too: the repeat gives it back to the next line.
  EXPECT_EQ(MatchGolden(golden, "# Histogram\n1 5\n9 0\n# end\n"), "");
  EXPECT_NE(MatchGolden(golden, "# Histogram\n9 0\n# end\n"), "") << "one or more";
  EXPECT_NE(MatchGolden(golden, "# Histogram\n1 5\nx\n9 0\n# end\n"), "");
  const std::string optional = "{\n%lines*   %int,\n}\n";
  EXPECT_EQ(MatchGolden(optional, "{\n}\n"), "") << "zero or more";
  EXPECT_EQ(MatchGolden(optional, "{\n  1,\n  2,\n}\n"), "");
  EXPECT_NE(MatchGolden(optional, "{\n  1,\n  x\n}\n"), "");
}

TEST(GoldenLines, TheFinalNewlineIsPartOfTheOutput) {
  EXPECT_NE(MatchGolden("a\n", "a"), "");
  EXPECT_EQ(MatchGolden("a\n%noeol\n", "a"), "");
  EXPECT_NE(MatchGolden("a\n%noeol\n", "a\n"), "");
  EXPECT_NE(MatchGolden("%noeol\na\n", "a"), "") << "%noeol only as the last line";
}

TEST(GoldenLines, AFailureNamesTheFirstMismatchingLineAndShowsTheWholeOutput) {
  const std::string why = MatchGolden("T: 0 C:%int\n# Max: %int\n", "T: 0 C: 5\n# Min: 3\n");
  EXPECT_NE(why.find("output line 2 does not match the golden (golden line 2)"), std::string::npos)
      << why;
  EXPECT_NE(why.find("expected: # Max: %int\n"), std::string::npos) << why;
  EXPECT_NE(why.find("actual:   # Min: 3\n"), std::string::npos) << why;
  EXPECT_NE(why.find("1: T: 0 C: 5\n2: # Min: 3\n"), std::string::npos) << why;

  const std::string shorter = MatchGolden("a\nb\n", "a\n");
  EXPECT_NE(shorter.find("output line 2"), std::string::npos) << shorter;
  EXPECT_NE(shorter.find("(no more lines)"), std::string::npos) << shorter;
  const std::string longer = MatchGolden("a\n", "a\n\033[4Ab\n");
  EXPECT_NE(longer.find("expected: the end of the output"), std::string::npos) << longer;
  EXPECT_NE(longer.find("actual:   \\e[4Ab"), std::string::npos) << "escapes shown: " << longer;
}

TEST(GoldenLines, AMissingGoldenFileIsAMismatch) {
  const std::string why = MatchGoldenFile("/nonexistent/golden.txt", "x\n");
  EXPECT_NE(why.find("cannot read the golden file /nonexistent/golden.txt"), std::string::npos)
      << why;
}

}  // namespace
}  // namespace rtloop::testing
