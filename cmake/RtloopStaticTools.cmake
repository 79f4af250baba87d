# -DRTLOOP_STATIC_TOOLS=ON: rtloop-cyclic, rtloop-top and rtloop-bench as single static files that
# run on a board with nothing else installed (a Buildroot image, a bare /data/ directory), made
# from Debian's own static libraries (libgrpc++.a, libprotobuf.a, abseil's, libssl.a ...). See
# cmake/README.md, "Static tools"; cmake/dev.sh package --arch=ARCH builds them into
# build-ARCH/packages/rtloop-tools-VERSION-ARCH.tar.gz.
#
# Included by cmake/RtloopDependencies.cmake after every find_package: Debian's CMake packages
# (gRPC, abseil, ...) and FindProtobuf name the shared libraries, so each imported library is
# pointed at the static archive next to it. Debian 12 has no static civetweb or prometheus-cpp:
# these tools are built without the HTTP endpoint (RTLOOP_HTTP=OFF; gRPC telemetry stays).
if(BUILD_SHARED_LIBS)
  message(FATAL_ERROR "RTLOOP_STATIC_TOOLS=ON links static libraries: drop -DBUILD_SHARED_LIBS=ON")
endif()

get_directory_property(_rtloop_imported IMPORTED_TARGETS)
set(_rtloop_no_archive)
foreach(_t IN LISTS _rtloop_imported)
  get_target_property(_type ${_t} TYPE)
  if(NOT _type MATCHES "^(SHARED|UNKNOWN|STATIC)_LIBRARY$")
    continue()
  endif()
  foreach(_p IMPORTED_LOCATION IMPORTED_LOCATION_NONE IMPORTED_LOCATION_RELEASE
             IMPORTED_LOCATION_RELWITHDEBINFO IMPORTED_LOCATION_DEBUG)
    get_target_property(_loc ${_t} ${_p})
    if(_loc MATCHES "^(.*)\\.so(\\.[0-9.]+)?$")
      if(EXISTS "${CMAKE_MATCH_1}.a")
        set_target_properties(${_t} PROPERTIES ${_p} "${CMAKE_MATCH_1}.a")
      else()
        list(APPEND _rtloop_no_archive "${_t}")
      endif()
    endif()
  endforeach()
endforeach()
if(_rtloop_no_archive)
  list(REMOVE_DUPLICATES _rtloop_no_archive)
  # Only an error if a tool links one of them (the link fails then and names it).
  message(STATUS "RTLOOP_STATIC_TOOLS: no static archive for ${_rtloop_no_archive}")
endif()
# Every executable of this build is one static file (glibc's static libc: name lookups use
# c-ares, as gRPC does anyway; NSS is not used for numeric addresses).
string(APPEND CMAKE_EXE_LINKER_FLAGS " -static")
