// Why the worst cycles of a run were late: rtloop-bench's side of outlier explanation
// (telemetry/explain/README.md). `rtloop-bench run` has rtloop-cyclic write its outlier records to
// DIR/outliers.json (rtloop::explain's JSON document, version 1); this reads it back, groups the
// records with rtloop::explain's own summary, and makes result.json's "outliers" object and
// report.md's section "Why the worst cycles were late" from it.
//
//   Result<OutliersDocument> doc = ParseOutliersJson(*ReadTextFile(dir + "/outliers.json"));
//   result["outliers"] = OutliersResult(dir + "/outliers.json", cyclic_log, result["threads"]);
//   std::string md = OutliersSection(result);  // "## Why the worst cycles were late" ...
//
// Threading: pure functions but for OutliersResult (reads the file); not RT-safe (they allocate).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "rtloop/explain/explainer.h"
#include "rtloop/explain/outlier.h"
#include "rtloop/explain/report.h"
#include "rtloop/framework/status.h"

namespace rtloop::bench {

// The name of the records' file in the output directory.
inline constexpr const char* kOutliersFile = "outliers.json";
// rtloop-cyclic's --explain-above default, the bench's too.
inline constexpr std::int64_t kDefaultExplainAboveUs = 100;

// outliers.json as rtloop::explain wrote it (OutliersJson()), back in its own types.
struct OutliersDocument {
  explain::Thresholds thresholds;
  explain::ExplainerStats stats;
  std::vector<explain::OutlierRecord> records;
};

// Parses the document; InvalidArgument naming the field for anything but version 1 of its layout
// (a field missing or of another type, an unknown cause or evidence kind).
Result<OutliersDocument> ParseOutliersJson(const std::string& text);

// The "# explained with <note>" line rtloop-cyclic prints after a run with --explain (which
// evidence it used and why not the trace), without its prefix; "" when the log has none.
std::string ExplainedWithNote(const std::string& cyclic_log);

// result.json's "outliers" when explanation was off: status "off" and `reason`.
nlohmann::json OutliersOff(const std::string& reason);
// ... from a parsed document: status "ok", the thresholds (us), the counts, the records by
// evidence and by their leading cause's kind, rtloop::explain's summary as lines, and whether the
// run's worst cycle (the largest "max" of `threads`, result.json's) has a record.
nlohmann::json OutliersFromDocument(const OutliersDocument& doc, const std::string& evidence,
                                    const nlohmann::json& threads);
// ... from the file at `path` (status "failed" with the reason when it is missing or unreadable:
// rtloop-cyclic did not write it) and rtloop-cyclic's log (its evidence note).
nlohmann::json OutliersResult(const std::string& path, const std::string& cyclic_log,
                              const nlohmann::json& threads);

// report.md's section "## Why the worst cycles were late" from result.json's "outliers" object
// (and "threads"); never empty: no outliers, explanation off or failed, and a result.json without
// the object each say so.
std::string OutliersSection(const nlohmann::json& result);

}  // namespace rtloop::bench
