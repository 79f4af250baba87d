# Debian packages of rtloop, made by CPack's DEB generator (cmake/README.md):
#   rtloop      the shared libraries and the tools rtloop-cyclic, rtloop-top, rtloop-bench
#   rtloop-dev  headers, the CMake package (find_package(rtloop)), the .proto files
#   rtloop-bench-micro  the micro benchmarks (rtloop_bench_executor, ...): the per-cycle cost
#               measured on the board (examples/board/README.md); apart so that the runtime
#               package does not pull in libbenchmark
# Configure with -DBUILD_SHARED_LIBS=ON -DCMAKE_INSTALL_PREFIX=/usr (libraries then go to
# /usr/lib/<triplet>, as Debian's multiarch layout wants), build, then `cpack` in the build
# directory writes build-<arch>/packages/rtloop_VERSION_ARCH.deb and rtloop-dev_VERSION_ARCH.deb.
# cmake/dev.sh package --arch=ARCH does all of that. Depends: is computed from the binaries by
# dpkg-shlibdeps; what the tools use when present is Recommends:/Suggests: (rtloop-bench doctor
# names what is missing).

# The package architecture is the target's, not the build machine's (CPack would ask dpkg).
set(RTLOOP_DEB_ARCH "" CACHE STRING "Debian architecture of the packages (empty: the target's)")
if(NOT RTLOOP_DEB_ARCH)
  set(_rtloop_arch_args)
  if(CMAKE_LIBRARY_ARCHITECTURE)
    set(_rtloop_arch_args -t${CMAKE_LIBRARY_ARCHITECTURE})
  endif()
  execute_process(COMMAND dpkg-architecture ${_rtloop_arch_args} -qDEB_HOST_ARCH
                  OUTPUT_VARIABLE RTLOOP_DEB_ARCH OUTPUT_STRIP_TRAILING_WHITESPACE
                  ERROR_QUIET RESULT_VARIABLE _rtloop_arch_rc)
  if(NOT _rtloop_arch_rc EQUAL 0)
    set(RTLOOP_DEB_ARCH "")  # no dpkg-dev: CPack asks dpkg (right for native builds)
  endif()
endif()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME rtloop)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_CONTACT "rtloop maintainers <rtloop@invalid>")
set(CPACK_OUTPUT_FILE_PREFIX ${PROJECT_BINARY_DIR}/packages)
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_STRIP_FILES ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime dev micro)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # NAME_VERSION_ARCH.deb
if(RTLOOP_DEB_ARCH)
  set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE ${RTLOOP_DEB_ARCH})
endif()
set(CPACK_DEBIAN_PACKAGE_SECTION devel)

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME rtloop)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION utils)
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION
  "Real-time control loops with latency telemetry: libraries and tools\n rtloop-cyclic (a drop-in cyclictest with percentiles and gRPC telemetry), rtloop-top (live\n dashboard over gRPC), rtloop-bench (board readiness doctor, documented load scenarios,\n reports, baseline compare) and the shared libraries behind them.")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SHLIBDEPS ON)
# The tools link rtloop's own libraries, which are in this package: dpkg-shlibdeps (run in the
# package's staging root) finds them there.
string(REGEX REPLACE "^/+" "" _rtloop_libdir "${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}")
# rtloop-bench-micro's programs link them too, from the `rtloop` package: dpkg-shlibdeps runs in
# each component's staging root, so the runtime component's is named relative to it.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${_rtloop_libdir} ../runtime/${_rtloop_libdir})
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY "=")  # 0.x: no ABI promise between versions
# rtloop-bench's loads (stress-ng, hackbench from rt-tests, iperf3) and plots (gnuplot): used
# when present, reported by `rtloop-bench doctor` when missing.
set(CPACK_DEBIAN_RUNTIME_PACKAGE_RECOMMENDS "stress-ng, rt-tests, iperf3")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SUGGESTS "gnuplot-nox")

set(CPACK_DEBIAN_MICRO_PACKAGE_NAME rtloop-bench-micro)
set(CPACK_DEBIAN_MICRO_PACKAGE_SECTION utils)
set(CPACK_COMPONENT_MICRO_DESCRIPTION
  "Real-time control loops with latency telemetry: micro benchmarks\n Google Benchmark programs that measure rtloop's per-cycle cost on this machine:\n rtloop_bench_executor (the executor's cycle), rtloop_bench_telemetry (recording a\n sample, histograms, rings), rtloop_bench_grpc and rtloop_bench_http (the telemetry\n servers' replies). /usr/share/doc/rtloop/on-a-board.md says how to run and compare them.\n rtloop-rtcost: the real-time thread's own cost per wake-up (CPU time, instructions, cache\n lines) side by side with cyclictest's.")
set(CPACK_DEBIAN_MICRO_PACKAGE_SHLIBDEPS ON)
# python3: rtloop-rtcost (standard library only). Its measures use cyclictest (rt-tests),
# valgrind (--cachegrind, --lines) and perf (--perf) where installed, and say so where not.
set(CPACK_DEBIAN_MICRO_PACKAGE_DEPENDS "rtloop (= ${PROJECT_VERSION}), python3")
set(CPACK_DEBIAN_MICRO_PACKAGE_RECOMMENDS "rt-tests, valgrind, linux-perf")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME rtloop-dev)
set(CPACK_COMPONENT_DEV_DESCRIPTION
  "Real-time control loops with latency telemetry: development files\n Headers, the CMake package (find_package(rtloop)) and the telemetry .proto files.")
set(CPACK_DEBIAN_DEV_PACKAGE_SHLIBDEPS OFF)  # headers and CMake files: nothing to scan
# What rtloopConfig.cmake's find_dependency() calls and the public headers need.
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
  "rtloop (= ${PROJECT_VERSION}), libprotobuf-dev, libgrpc++-dev, libcivetweb-dev, prometheus-cpp-dev, libconcurrentqueue-dev")

# dpkg-shlibdeps (run by cpack) looks libraries up for DEB_HOST_ARCH: the target's in a cross
# build. CPack reads this file when it runs, so a plain `cpack` in the build directory works too.
set(CPACK_PROJECT_CONFIG_FILE ${PROJECT_BINARY_DIR}/RtloopCPackArch.cmake)
file(CONFIGURE OUTPUT ${CPACK_PROJECT_CONFIG_FILE}
     CONTENT "if(NOT \"@RTLOOP_DEB_ARCH@\" STREQUAL \"\")\n  set(ENV{DEB_HOST_ARCH} @RTLOOP_DEB_ARCH@)\nendif()\n"
     @ONLY)
include(CPack)
