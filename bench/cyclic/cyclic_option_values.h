// The strict number parsers behind rtloop-cyclic's option values (cyclic_options.cc and
// cyclic_option_values.cc): a value either is exactly a number or is refused, where cyclictest's
// atoi/strtol would read "12abc" as 12 and "abc" as 0.
//
//   std::optional<std::int64_t> v = ParseStrictInt("800");   // 800; "8e2", " 800", "" -> nullopt
//
// Threading: plain functions. RT-safe except ParseStrictDouble (strtod may take the locale).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rtloop::cyclic {

// An optional sign and 1..19 decimal digits, nothing else, within int64 (beyond it: nullopt).
std::optional<std::int64_t> ParseStrictInt(std::string_view text);
// A finite decimal number (strtod) with nothing after it.
std::optional<double> ParseStrictDouble(const std::string& text);

}  // namespace rtloop::cyclic
