// Valid UTF-8 out of any bytes, and JSON strings made of it: the one escaper for every JSON
// rtloop writes by hand (the live page's /api/v1/tasks, rtloop-cyclic's --json) and the repair
// applied to every protobuf string field filled from outside (task names, uname fields), which
// proto3 requires to be UTF-8.
//
//   std::string out;
//   AppendJsonString(out, task_name);          // "pos\ufffd" for the bytes 'p' 'o' 's' 0xff
//   descriptor->set_name(ToValidUtf8(name));   // "pos\xef\xbf\xbd" (U+FFFD encoded)
//
// Invalid bytes become U+FFFD as the WHATWG Encoding Standard's UTF-8 decoder (and so a
// browser's TextDecoder, Python's errors="replace") replaces them: one U+FFFD per maximal
// subpart of an ill-formed sequence, i.e. per byte that cannot start a sequence (0x80..0xC1,
// 0xF5..0xFF) and per started sequence cut short ("\xe2\x82" then 'x' is one U+FFFD then 'x').
// Overlong forms, surrogates (U+D800..U+DFFF) and code points beyond U+10FFFF are ill-formed.
// Valid text is passed through unchanged.
//
// Threading: pure functions, any thread. Not RT-safe: they allocate (IsValidUtf8 is RT-safe).
#pragma once

#include <string>
#include <string_view>

namespace rtloop::telemetry {

// True when `text` is well-formed UTF-8 (the empty string is). RT-safe.
bool IsValidUtf8(std::string_view text) noexcept;

// `text` with every ill-formed part replaced by U+FFFD (the rules above).
std::string ToValidUtf8(std::string_view text);

// Appends `text` as a JSON string, quotes included: '"' and '\' escaped with a backslash, control
// characters (below 0x20) and DEL as \u00XX, ill-formed UTF-8 as \ufffd (the rules above); all
// other characters as they are. The result is valid JSON and valid UTF-8 whatever `text` holds.
void AppendJsonString(std::string& out, std::string_view text);

}  // namespace rtloop::telemetry
