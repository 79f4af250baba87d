// The live page's static files, embedded into the binary at build time (embed_assets.cmake):
// index.html and app.js from web/ beside this file, and Debian's dygraphs (libjs-dygraphs)
// dygraph.min.js and dygraph.min.css. The board needs nothing installed; the page works offline.
// Internal to rtloop_telemetry.
//
// Thread-safe, RT-safe (constant data).
#pragma once

#include <span>
#include <string_view>

namespace rtloop::telemetry::internal {

struct WebAsset {
  std::string_view path;          // "/", "/app.js", "/dygraph.min.js", "/dygraph.min.css"
  std::string_view content_type;  // "text/html; charset=utf-8", ...
  std::string_view body;
};

std::span<const WebAsset> WebAssets() noexcept;

}  // namespace rtloop::telemetry::internal
