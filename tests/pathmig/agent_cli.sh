#!/bin/sh
# mpilab-pathmigd refuses bad input with one line and exit status 2 (no root needed).
AG="$1"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail=0
expect() { # expect PATTERN ARGS...: exit 2, one line on stderr matching PATTERN
  pat="$1"; shift
  "$AG" "$@" >"$T/out" 2>"$T/err"; rc=$?
  n=$(wc -l <"$T/err")
  if [ $rc -ne 2 ] || [ "$n" -ne 1 ] || ! grep -q -- "$pat" "$T/err"; then
    echo "FAIL: $* -> rc $rc, $n lines: $(cat "$T/err")"; fail=1
  fi
}
"$AG" --help | grep -q "usage: mpilab-pathmigd" || { echo "FAIL: --help"; fail=1; }
"$AG" --version | grep -q "^mpilab-pathmigd [0-9]" || { echo "FAIL: --version"; fail=1; }
expect "are required" 
expect "unknown or incomplete option" --bogus
expect "unexpected argument" --node a --peers x extra
expect "probe-interval" --node a --peers x --probe-interval 0
expect "probe-timeout" --node a --peers x --probe-timeout abc
expect "at least twice" --node a --peers x --probe-interval 40 --probe-timeout 50
expect "port" --node a --peers x --port 70000
expect "hold-down" --node a --peers x --hold-down -1
expect "hold-down" --node a --peers x --hold-down 1s
expect "nofile: No such file" --node a --peers "$T/nofile"
printf 'a 10.0.0.1 10.0.1.1\nb 10.0.0.2 banana\n' >"$T/p1"
expect "p1:2: 'banana'" --node a --peers "$T/p1"
printf 'a 10.0.0.1 10.0.1.1\nb 10.0.0.2\n' >"$T/p2"
expect "p2:2: node b has 1 rails" --node a --peers "$T/p2"
printf 'a 10.0.0.1 10.0.1.1\n' >"$T/p3"
expect "node zz is not listed" --node zz --peers "$T/p3"
printf 'b 0 0\n' >"$T/alt"
expect "alt:1: expected 'PEER PRIMARY_RAIL ALT_RAIL'" --node a --peers "$T/p3" --alt "$T/alt"
expect "expected default, auto or a map file" --node a --peers "$T/p3" --alt nonsense
exit $fail
