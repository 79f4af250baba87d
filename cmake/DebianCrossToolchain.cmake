# The part of cmake/toolchain-<arch>.cmake common to every Debian multiarch cross build: the
# including file sets RTLOOP_CROSS_TRIPLET (the GNU triplet, e.g. aarch64-linux-gnu),
# CMAKE_SYSTEM_PROCESSOR and RTLOOP_CROSS_QEMU (the qemu-user binary that runs the target's
# programs). Example: cmake/toolchain-arm64.cmake.
#
# Debian's multiarch layout makes the build machine's own root the sysroot: the target's libraries
# and CMake packages are in /usr/lib/<triplet> (installed as libfoo-dev:<arch>), headers in
# /usr/include, so no CMAKE_SYSROOT is set. Programs run at build time (protoc, grpc_cpp_plugin,
# the asset embedding) are the build machine's own; the target's programs (tests, gtest's test
# listing) run under qemu-user through CMAKE_CROSSCOMPILING_EMULATOR.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_C_COMPILER ${RTLOOP_CROSS_TRIPLET}-gcc)
set(CMAKE_CXX_COMPILER ${RTLOOP_CROSS_TRIPLET}-g++)
set(CMAKE_LIBRARY_ARCHITECTURE ${RTLOOP_CROSS_TRIPLET})
# GNUInstallDirs picks Debian's multiarch lib/<triplet> for native builds only; the packages of a
# cross build need it too (Multi-Arch: same libraries, /usr/lib/<triplet>/cmake/rtloop).
set(CMAKE_INSTALL_LIBDIR lib/${RTLOOP_CROSS_TRIPLET} CACHE STRING "Object code libraries (multiarch)")
# pkg-config (libgpiod): the target's .pc files only.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/${RTLOOP_CROSS_TRIPLET}/pkgconfig:/usr/share/pkgconfig)
# Without -L, qemu-user loads the target's dynamic loader and libraries from the multiarch
# directories (libc6:<arch> is installed with the -dev packages).
find_program(RTLOOP_CROSS_QEMU_PATH ${RTLOOP_CROSS_QEMU})
if(RTLOOP_CROSS_QEMU_PATH)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${RTLOOP_CROSS_QEMU_PATH})
endif()
