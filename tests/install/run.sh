#!/usr/bin/env bash
# Install test: install the build into a temporary prefix, then build every examples/*.c
# against the installed copy four ways and run each on 2 ranks:
#  - the README's two pkg-config command lines, read from README.md and run as written
#    (`mpicc` being the MPI compiler libmpilab was built with), shared and --static;
#  - CMake find_package(mpilab) with mpilab::mpilab and mpilab::mpilab_static.
# The static binaries must not need libmpilab.so (readelf). A consumer using the other
# MPI (if installed) must be refused with one line, by the headers and by the CMake
# package.  Usage: run.sh BUILD_DIR SOURCE_DIR SANITIZE(ON/OFF) LAUNCH
set -euo pipefail
build=$1
src=$(cd "$2" && pwd)
sanitize=${3:-OFF}
launch=$4
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
built_mpi=$(pkg-config --variable=mpi mpilab)
built_mpicc=$(pkg-config --variable=mpicc mpilab)
case "$built_mpi" in
openmpi) other_mpicc=mpicc.mpich ;;
mpich) other_mpicc=mpicc.openmpi ;;
*) echo "FAIL: mpilab.pc names no MPI (mpi=$built_mpi)"; exit 1 ;;
esac
echo "libmpilab built with $built_mpi $(pkg-config --variable=mpi_version mpilab) ($built_mpicc)"

# The README's command lines, exactly as written (comment stripped).
mapfile -t readme_cmds < <(grep -E '^    mpicc app\.c ' "$src/README.md" | sed 's/ *#.*$//')
[ "${#readme_cmds[@]}" -eq 2 ] || { echo "FAIL: README.md: expected 2 'mpicc app.c' lines, found ${#readme_cmds[@]}"; exit 1; }
# `mpicc` in those lines is the MPI compiler of the MPI libmpilab was built with
CC_FOR_README=$built_mpicc
mpicc() { "$CC_FOR_README" "${extra[@]}" "$@"; }

# a man page for every installed tool and for the mpilab command, and the docs
for t in "$prefix"/bin/mpilab-* mpilab; do
    page="$prefix/share/man/man1/$(basename "$t").1"
    if ! grep -q '^\.TH' "$page" 2>/dev/null; then echo "FAIL: no man page $page"; exit 1; fi
done
for f in README.md results-schema.md mpi-stacks.md; do
    [ -s "$prefix/share/doc/mpilab/$f" ] || { echo "FAIL: $f not installed in share/doc/mpilab"; exit 1; }
done
echo "ok: man pages for $(cd "$prefix/share/man/man1" && echo *), docs installed"

examples=("$src"/examples/*.c)
[ -e "${examples[0]}" ] || { echo "no examples/*.c"; exit 1; }
fail=0
check_run() { # name binary
    if "$launch" 2 "$2" >"$tmp/run.out" 2>&1; then
        echo "ok: $1"
    else
        echo "FAIL: $1 (exit $?)"; sed 's/^/    /' "$tmp/run.out" | tail -20; fail=1
    fi
}
needs_so() { readelf -d "$1" | grep -q "NEEDED.*libmpilab\.so"; }

# 1. pkg-config, shared and static, the README's commands
for ex in "${examples[@]}"; do
    name=$(basename "$ex" .c)
    for k in 0 1; do
        kind=$([ $k -eq 0 ] && echo shared || echo static)
        d="$tmp/readme-$name-$kind"
        mkdir -p "$d"
        cp "$ex" "$d/app.c"
        if ! (cd "$d" && eval "${readme_cmds[$k]}") >"$d/cc.log" 2>&1; then
            echo "FAIL: $name: '${readme_cmds[$k]}' failed"; sed 's/^/    /' "$d/cc.log"; fail=1; continue
        fi
        if [ $kind = shared ] && ! needs_so "$d/a.out"; then echo "FAIL: $name ($kind) not linked to libmpilab.so"; fail=1; fi
        if [ $kind = static ] && needs_so "$d/a.out"; then echo "FAIL: $name ($kind) needs libmpilab.so"; fail=1; fi
        check_run "$name (README pkg-config, $kind)" "$d/a.out"
    done
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
      -DMPI_C_COMPILER="$built_mpicc" -DCMAKE_EXE_LINKER_FLAGS="$flags" >"$tmp/cmake.log" 2>&1 || { cat "$tmp/cmake.log"; exit 1; }
cmake --build "$tmp/proj/build" >"$tmp/build.log" 2>&1 || { tail -40 "$tmp/build.log"; exit 1; }
for ex in "${examples[@]}"; do
    name=$(basename "$ex" .c)
    check_run "$name (find_package, mpilab::mpilab)" "$tmp/proj/build/${name}_cm_shared"
    if needs_so "$tmp/proj/build/${name}_cm_static"; then
        echo "FAIL: ${name}_cm_static uses libmpilab.so"; fail=1
    fi
    check_run "$name (find_package, mpilab::mpilab_static)" "$tmp/proj/build/${name}_cm_static"
done

# 3. a consumer with the other MPI is refused, with one line naming both
if command -v "$other_mpicc" >/dev/null; then
    d="$tmp/wrong-mpi"
    mkdir -p "$d"
    cp "${examples[0]}" "$d/app.c"
    CC_FOR_README=$other_mpicc
    if (cd "$d" && eval "${readme_cmds[0]}") >"$d/cc.log" 2>&1; then
        echo "FAIL: $other_mpicc built against a $built_mpi libmpilab"; fail=1
    elif [ "$(grep -c 'error:' "$d/cc.log")" -ne 1 ] || ! grep -q "error: #error \"mpilab was built with" "$d/cc.log"; then
        echo "FAIL: wrong-MPI compile: expected one '#error mpilab was built with' line:"; sed 's/^/    /' "$d/cc.log"; fail=1
    else
        echo "ok: $other_mpicc refused: $(grep 'error:' "$d/cc.log" | sed 's/.*#error //')"
    fi
    CC_FOR_README=$built_mpicc
    if cmake -S "$tmp/proj" -B "$tmp/proj/wrong" -DCMAKE_PREFIX_PATH="$prefix" \
             -DMPI_C_COMPILER="$(command -v "$other_mpicc")" >"$tmp/wrong.log" 2>&1; then
        echo "FAIL: find_package(mpilab) accepted $other_mpicc"; fail=1
    elif [ "$(grep -c '^ *mpilab was built with' "$tmp/wrong.log")" -ne 1 ]; then
        echo "FAIL: wrong-MPI configure: expected one 'mpilab was built with' line:"; sed 's/^/    /' "$tmp/wrong.log"; fail=1
    else
        echo "ok: find_package refused $other_mpicc: $(grep '^ *mpilab was built with' "$tmp/wrong.log" | sed 's/^ *//')"
    fi
else
    echo "skip: wrong-MPI refusal ($other_mpicc not installed)"
fi
exit $fail
