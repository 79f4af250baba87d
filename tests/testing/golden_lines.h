// Golden files with placeholders: a program's whole output checked line by line against a pattern
// file, where each line is matched in full and the placeholders stand for what a run measures (the
// idea of Google Benchmark's test/output_test.h, without regular expressions: everything but a
// placeholder is literal text, so a golden reads like the output it locks).
//
// Pattern lines (one per output line, in order; the count must match exactly):
//   %int    optional blanks (printf's width padding), an optional '-', one or more digits
//   %float  as %int, then optionally '.' and one or more digits
//   %pid    optional blanks and a positive decimal number: a process id
//   %tid    the same: a thread id (a separate name so the golden says what the number is)
//   %word   one or more characters other than a blank
//   %any    any text, also none
//   %e      the escape character (0x1b) of a terminal control sequence
//   %%      a literal '%'
// A width before a numeric placeholder is printf's: %5int matches exactly 5 columns (blanks then
// the number), or a longer number without blanks, as "%5d" prints it.
// Whole-line directives:
//   %# ...          a comment, matches nothing (e.g. the command that produced the output)
//   %lines PATTERN  one or more consecutive lines, each matching PATTERN, for a count that depends
//                   on the run (prefer options that fix the count)
//   %lines* PATTERN zero or more such lines
//   %noeol          last line of the file: the output's last line has no newline after it
// Any other '%' is an error in the pattern (reported as a mismatch naming it).
//
//   const std::string why = rtloop::testing::MatchGolden(ReadWholeFile(path), child.Stdout());
//   EXPECT_TRUE(why.empty()) << why;  // first mismatching line, pattern, actual, whole output
//
// Regenerating: with RTLOOP_GOLDEN_ACTUAL_DIR=DIR in the environment, MatchGoldenFile() writes the
// actual output to DIR/<golden file name>; a human then replaces the measured numbers by
// placeholders and copies it over the golden.
//
// Threading: pure functions, any thread. Not RT-safe: allocates.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace rtloop::testing {

// True when `line` (no newline) matches the pattern line `pattern` in full. `error`, when given,
// gets a description of a malformed pattern ("" otherwise).
bool MatchLine(std::string_view pattern, std::string_view line, std::string* error = nullptr);

// "" when `actual` matches the golden text `golden` (pattern lines as above), else a report: the
// number of the first line that does not match, its pattern and the actual line, and the whole
// actual output.
std::string MatchGolden(std::string_view golden, std::string_view actual);

// `text` split at '\n', without the newlines; a trailing newline adds no empty line ("a\n\nb\n":
// "a", "", "b"). The one line splitter of the tests that read a program's output.
std::vector<std::string> SplitLines(std::string_view text);

// MatchGolden() with the golden read from `golden_path` (a missing file is a mismatch saying so);
// writes `actual` as described above under RTLOOP_GOLDEN_ACTUAL_DIR. The report names the file.
std::string MatchGoldenFile(const std::string& golden_path, std::string_view actual);

}  // namespace rtloop::testing
