# aarch64-linux-gnu.cmake — cross-builds edgegrad for 64-bit ARM Linux (phones' and boards'
# CPUs) on a Debian x86-64 host; `make check-aarch64` uses it (README, "Portability").
#
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
#
# Needs `scripts/install-deps.sh aarch64`: Debian's gcc-aarch64-linux-gnu, the arm64 builds of
# jansson and OpenBLAS (OpenMP) through multiarch (in /usr/lib/aarch64-linux-gnu, found with
# their arm64 pkg-config files) and qemu-user. ctest runs every test binary through
# qemu-aarch64 (CMAKE_CROSSCOMPILING_EMULATOR); the CLI and op tests get the wrapper
# <build>/edgegrad-run, which runs the arm64 edgegrad the same way.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

# pkg-config reads the arm64 .pc files only (multiarch keeps them apart from the host's).
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")

# qemu-aarch64 takes the dynamic loader and libc from the cross toolchain's root; the
# multiarch libraries (/usr/lib/aarch64-linux-gnu) are found by the loader's default path.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /usr/aarch64-linux-gnu)
