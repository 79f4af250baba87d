// report.md and the doctor's output, both made from data already collected (result.json's
// object, ReadinessReport), so they can be regenerated and tested without a run.
//
//   std::string md = FormatReportMarkdown(result_json);   // the vendors' table shape and more
//   std::fputs(FormatFindings(CheckReadiness()).c_str(), stdout);
//
// Threading: pure functions; not RT-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "rtloop/readiness.h"

namespace rtloop::bench {

// The per-thread table (T, P, I, C, Min, Act, Avg, Max, p99, p99.99, overruns, missed), the load,
// duration, system facts, doctor summary, and with "reference" the published figures side by side.
std::string FormatReportMarkdown(const nlohmann::json& result);

// One line per finding: "FAIL rt_group_budget   <summary>\n     fix: <fix>\n", then a count line.
std::string FormatFindings(const ReadinessReport& report);
// {"schema_version":1,"findings":[{id,level,summary,fix}],"ok":n,"warn":n,"fail":n}
nlohmann::json FindingsJson(const ReadinessReport& report);

// The text of a JSON document rtloop-bench writes (result.json, doctor --json): indent 1, a final
// newline, every string and key first made valid UTF-8 by telemetry::ToValidUtf8 (U+FFFD per
// ill-formed part, as the live page and rtloop-cyclic write them). nlohmann's dump() throws on
// invalid UTF-8, so a host name or a /sys file holding such bytes aborted rtloop-bench.
std::string JsonText(const nlohmann::json& document);

}  // namespace rtloop::bench
