# CMake toolchain file: cross-compile rtloop for Debian 12 armhf (ARMv7-A hard-float: RK3506,
# TI AM335x, Cortex-A7/A8) with crossbuild-essential-armhf and the :armhf multiarch -dev packages
# (cmake/README.md).
#   cmake -S . -B build-armhf -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-armhf.cmake
# cmake/dev.sh package --arch=armhf installs what this needs and uses it.
set(CMAKE_SYSTEM_PROCESSOR armv7l)
set(RTLOOP_CROSS_TRIPLET arm-linux-gnueabihf)
set(RTLOOP_CROSS_QEMU qemu-arm-static)
# GCC's notes that std::span/iterator argument passing changed in GCC 7.1 (-Wpsabi) concern code
# mixed with objects from GCC < 7.1; everything here is built by Debian 12's GCC 12.
set(CMAKE_CXX_FLAGS_INIT -Wno-psabi)
include(${CMAKE_CURRENT_LIST_DIR}/DebianCrossToolchain.cmake)
