#!/usr/bin/env bash
# Install test: install the build into a temporary prefix, then build every examples/*.c
# against the installed copy four ways (pkg-config shared and --static, CMake
# find_package with mpilab::mpilab and mpilab::mpilab_static) and run each under
# mpirun -np 2.  Usage: run.sh BUILD_DIR SOURCE_DIR [SANITIZE(ON/OFF)]
set -euo pipefail
build=$1
src=$(cd "$2" && pwd)
sanitize=${3:-OFF}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export TMPDIR="$tmp"  # own Open MPI session directory: concurrent tests collide in /tmp
prefix=$tmp/prefix
extra=()
if [ "$sanitize" = "ON" ]; then extra=(-fsanitize=address,undefined); fi

cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(find "$prefix" -name mpilab.pc -printf '%h\n' | head -1)
libdir=${libdir%/pkgconfig}
export PKG_CONFIG_PATH=$libdir/pkgconfig
export LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
mpirun=(mpirun -q --oversubscribe --bind-to none --mca btl self,vader,tcp --mca mpi_yield_when_idle 1 -np 2)

examples=("$src"/examples/*.c)
[ -e "${examples[0]}" ] || { echo "no examples/*.c"; exit 1; }
fail=0
check_run() { # name binary
    if "${mpirun[@]}" "$2" >"$tmp/run.out" 2>&1; then
        echo "ok: $1"
    else
        echo "FAIL: $1 (exit $?)"; sed 's/^/    /' "$tmp/run.out" | tail -20; fail=1
    fi
}

# 1. pkg-config, shared and static
for ex in "${examples[@]}"; do
    name=$(basename "$ex" .c)
    # shellcheck disable=SC2046
    mpicc "${extra[@]}" "$ex" -o "$tmp/$name.shared" $(pkg-config --cflags --libs mpilab)
    if ! readelf -d "$tmp/$name.shared" | grep -q "NEEDED.*libmpilab.so"; then echo "FAIL: $name.shared not linked to libmpilab.so"; fail=1; fi
    check_run "$name (pkg-config, shared)" "$tmp/$name.shared"
    # --static: the archive explicitly, plus every private dependency pkg-config lists
    static_libs=$(pkg-config --static --libs mpilab | sed 's/-lmpilab\b/-l:libmpilab.a/')
    # shellcheck disable=SC2086
    mpicc "${extra[@]}" "$ex" -o "$tmp/$name.static" $(pkg-config --cflags mpilab) $static_libs
    if readelf -d "$tmp/$name.static" | grep -q "NEEDED.*libmpilab.so"; then echo "FAIL: $name.static uses libmpilab.so"; fail=1; fi
    check_run "$name (pkg-config --static)" "$tmp/$name.static"
done

# 2. CMake find_package(mpilab), both targets
mkdir -p "$tmp/proj"
{
    echo 'cmake_minimum_required(VERSION 3.18)'
    echo 'project(mpilab_consumer C)'
    echo 'find_package(mpilab REQUIRED)'
    for ex in "${examples[@]}"; do
        name=$(basename "$ex" .c)
        echo "add_executable(${name}_cm_shared $ex)"
        echo "target_link_libraries(${name}_cm_shared PRIVATE mpilab::mpilab)"
        echo "add_executable(${name}_cm_static $ex)"
        echo "target_link_libraries(${name}_cm_static PRIVATE mpilab::mpilab_static)"
    done
} >"$tmp/proj/CMakeLists.txt"
flags=""
if [ "$sanitize" = "ON" ]; then flags="-fsanitize=address,undefined"; fi
cmake -S "$tmp/proj" -B "$tmp/proj/build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_FLAGS="$flags" \
      -DCMAKE_EXE_LINKER_FLAGS="$flags" >"$tmp/cmake.log" 2>&1 || { cat "$tmp/cmake.log"; exit 1; }
cmake --build "$tmp/proj/build" >"$tmp/build.log" 2>&1 || { tail -40 "$tmp/build.log"; exit 1; }
for ex in "${examples[@]}"; do
    name=$(basename "$ex" .c)
    check_run "$name (find_package, mpilab::mpilab)" "$tmp/proj/build/${name}_cm_shared"
    if readelf -d "$tmp/proj/build/${name}_cm_static" | grep -q "NEEDED.*libmpilab.so"; then
        echo "FAIL: ${name}_cm_static uses libmpilab.so"; fail=1
    fi
    check_run "$name (find_package, mpilab::mpilab_static)" "$tmp/proj/build/${name}_cm_static"
done
exit $fail
