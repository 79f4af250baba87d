# HTTP endpoint sources of rtloop_telemetry: /metrics (prometheus-cpp core + TextSerializer), the
# live page and its JSON feed, served by civetweb. The page's files and Debian's dygraphs are
# embedded into the library at build time (embed_assets.cmake): nothing is read at run time.
# civetweb and prometheus-cpp are found in cmake/RtloopDependencies.cmake.
# RTLOOP_HTTP=OFF (the single-file static tools, cmake/README.md) builds http_server_absent.cc
# instead: HttpServer::Start() then says the endpoint is not in this build.
if(NOT RTLOOP_HTTP)
  target_sources(rtloop_telemetry PRIVATE ${CMAKE_CURRENT_LIST_DIR}/http_server_absent.cc)
  return()
endif()
find_file(RTLOOP_DYGRAPHS_JS dygraph.min.js PATHS /usr/share/javascript/dygraphs NO_DEFAULT_PATH
          REQUIRED DOC "Debian's libjs-dygraphs (the live page's charts)")
find_file(RTLOOP_DYGRAPHS_CSS dygraph.min.css PATHS /usr/share/javascript/dygraphs
          NO_DEFAULT_PATH REQUIRED)

set(_rtloop_web ${CMAKE_CURRENT_LIST_DIR}/web)
set(_rtloop_assets_cc ${CMAKE_CURRENT_BINARY_DIR}/rtloop_web_assets.cc)
set(_rtloop_asset_files
  ${_rtloop_web}/index.html ${_rtloop_web}/app.js ${RTLOOP_DYGRAPHS_JS} ${RTLOOP_DYGRAPHS_CSS})
string(JOIN "|" _rtloop_files ${_rtloop_asset_files})
add_custom_command(
  OUTPUT ${_rtloop_assets_cc}
  COMMAND ${CMAKE_COMMAND} "-DFILES=${_rtloop_files}"
          "-DPATHS=/|/app.js|/dygraph.min.js|/dygraph.min.css"
          "-DTYPES=html|javascript|javascript|css"
          -DOUT=${_rtloop_assets_cc} -P ${CMAKE_CURRENT_LIST_DIR}/embed_assets.cmake
  DEPENDS ${_rtloop_asset_files} ${CMAKE_CURRENT_LIST_DIR}/embed_assets.cmake
  COMMENT "Embedding the live page and dygraphs"
  VERBATIM)

target_sources(rtloop_telemetry PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/http_address.cc  # CheckHttpAddress, without civetweb
  ${CMAKE_CURRENT_LIST_DIR}/http_request.cc  # routing, token and query checks (fuzzed)
  ${CMAKE_CURRENT_LIST_DIR}/http_server.cc
  ${CMAKE_CURRENT_LIST_DIR}/metrics.cc
  ${CMAKE_CURRENT_LIST_DIR}/page_json.cc
  ${CMAKE_CURRENT_LIST_DIR}/process_stats.cc
  ${CMAKE_CURRENT_LIST_DIR}/served_tasks.cc  # the tasks both views show, as TaskReports
  ${_rtloop_assets_cc}
)
target_include_directories(rtloop_telemetry PRIVATE ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(rtloop_telemetry PRIVATE civetweb::civetweb prometheus-cpp::core)
