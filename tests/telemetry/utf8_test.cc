// utf8.h: ill-formed UTF-8 becomes U+FFFD as the WHATWG decoder replaces it (the expected
// replacements are Python's bytes.decode("utf-8", "replace"), which follows the same rule), and
// the JSON string escaper's output is valid JSON and UTF-8 for any bytes.
#include "rtloop/telemetry/utf8.h"

#include <gtest/gtest.h>

#include <string>

namespace rtloop::telemetry {
namespace {

const std::string kFffd = "\xef\xbf\xbd";

std::string Repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

TEST(Utf8Test, EachMaximalIllFormedSubpartBecomesOneReplacementCharacter) {
  struct Case {
    std::string in, out;
  };
  const Case cases[] = {
      {"\xff", kFffd},                         // never a lead byte
      {"\x80\x80", Repeat(kFffd, 2)},          // stray continuation bytes
      {"\xe2\x82x", kFffd + "x"},              // cut short: one for the started sequence
      {"\xf0\x9f\x98", kFffd},                 // cut short by the end
      {"\xf1\x80\x80", kFffd},                 //
      {"\xc0\xaf", Repeat(kFffd, 2)},          // overlong lead
      {"\xe0\x80\x80", Repeat(kFffd, 3)},      // overlong 3-byte form
      {"\xf0\x8f\xbf\xbf", Repeat(kFffd, 4)},  // overlong 4-byte form
      {"\xed\xa0\x80", Repeat(kFffd, 3)},      // a surrogate
      {"\xf4\x90\x80\x80", Repeat(kFffd, 4)},  // beyond U+10FFFF
      {"pos\xff", "pos" + kFffd},              //
      {"a\xf0\x9f\x98\x80"
       "b",
       "a\xf0\x9f\x98\x80"
       "b"},  // valid: unchanged
      {"h\xc3\xa9llo \xe2\x82\xac \xef\xbf\xbf", "h\xc3\xa9llo \xe2\x82\xac \xef\xbf\xbf"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ToValidUtf8(c.in), c.out) << c.in;
    EXPECT_TRUE(IsValidUtf8(ToValidUtf8(c.in))) << c.in;
    EXPECT_EQ(IsValidUtf8(c.in), c.in == c.out) << c.in;
  }
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_EQ(ToValidUtf8(std::string("a\0b", 3)), std::string("a\0b", 3));
}

TEST(Utf8Test, JsonStringsAreQuotedEscapedAndValidUtf8) {
  std::string out;
  AppendJsonString(out, "a\"b\\c\n\x01\x7f/");
  EXPECT_EQ(out, R"("a\"b\\c\u000a\u0001\u007f/")");
  out.clear();
  AppendJsonString(out, "pos\xff\xe2\x82x \xc3\xa9");
  EXPECT_EQ(out, "\"pos\\ufffd\\ufffdx \xc3\xa9\"");
  out.clear();
  AppendJsonString(out, std::string("\0", 1));
  EXPECT_EQ(out, R"("\u0000")");
  // Every byte value, alone and after a lead byte: the output is valid UTF-8 with no raw control
  // character, and quotes only at its ends.
  for (int a = 0; a < 256; ++a) {
    for (const int b : {0x00, 0x22, 0x41, 0x80, 0xa0, 0xbf, 0xc3, 0xff}) {
      const std::string in = {static_cast<char>(a), static_cast<char>(b)};
      out.clear();
      AppendJsonString(out, in);
      EXPECT_TRUE(IsValidUtf8(out)) << a << " " << b;
      for (std::size_t i = 0; i < out.size(); ++i) {
        const auto u = static_cast<unsigned char>(out[i]);
        EXPECT_GE(u, 0x20) << a << " " << b;
        if (u == '"' && i != 0 && i + 1 != out.size()) {
          EXPECT_EQ(out[i - 1], '\\');
        }
      }
    }
  }
}

}  // namespace
}  // namespace rtloop::telemetry
