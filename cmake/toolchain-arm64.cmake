# CMake toolchain file: cross-compile rtloop for Debian 12 arm64 (aarch64: RK3576, RK3588, RK3568,
# RK3562...) with crossbuild-essential-arm64 and the :arm64 multiarch -dev packages (cmake/README.md).
#   cmake -S . -B build-arm64 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-arm64.cmake
# cmake/dev.sh package --arch=arm64 installs what this needs and uses it.
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(RTLOOP_CROSS_TRIPLET aarch64-linux-gnu)
set(RTLOOP_CROSS_QEMU qemu-aarch64-static)
include(${CMAKE_CURRENT_LIST_DIR}/DebianCrossToolchain.cmake)
