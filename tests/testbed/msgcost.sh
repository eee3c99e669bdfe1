#!/bin/sh
# libmpilab_msgcost.so (src/testbed/msgcost.c) in a real 2-rank run: every send and every
# receive is charged once (the library's own count at MPI_Finalize), and the CPU time the
# ranks' main threads used grows by the configured cost per message (the program's own
# thread CPU clock, run without and with a cost; CPU time, not wall time, so a busy machine
# stretches both runs alike); a receive waited for with MPI_Testall is charged at the test
# that finds it in (case early_receive). With MPILAB_MSG_COST_CLOCK=wall every message is
# charged once too, the wall time spent is at least the cost per message and the CPU time
# the library used in it is below the cost (it sleeps most of it; the spinning part is at
# most MPILAB_MSGCOST_SPIN_NS). Bad values of MPILAB_MSG_COST_US and
# MPILAB_MSG_COST_CLOCK: one line, exit 2.
#   msgcost.sh LIB PINGPONG LAUNCH
set -u
lib=$1 prog=$2 launch=$3
count=50 cost=1000
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

refused() { # VAR VALUE WORDS: the library, loaded with VAR=VALUE, exits 2 with one line
    env LD_PRELOAD="$lib" MPILAB_MSG_COST_US=5 "$1=$2" /bin/true 2>"$tmp/err"
    rc=$?
    [ "$rc" -eq 2 ] || fail "$1=$2: exit status $rc, expected 2"
    [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "$1=$2: not one line: $(cat "$tmp/err")"
    grep -q "$1=$2: $3" "$tmp/err" || fail "$1=$2: $(cat "$tmp/err")"
}
for bad in abc -5 1e9 nan "12us"; do
    refused MPILAB_MSG_COST_US "$bad" "not a number of microseconds"
done
for bad in CPU monotonic "wall " 1; do
    refused MPILAB_MSG_COST_CLOCK "$bad" "not 'cpu' or 'wall'"
done

run() { # COST OUT [CLOCK]
    "$launch" -q 2 env LD_PRELOAD="$lib" MPILAB_MSG_COST_US="$1" MPILAB_MSG_COST_DEBUG=1 \
        MPILAB_MSG_COST_CLOCK="${3:-cpu}" \
        "$prog" --case pingpong "$count" >"$2.out" 2>"$2.err" || fail "cost $1: status $?: $(cat "$2.err")"
    for r in 0 1; do
        grep -q "^mpilab-msgcost: rank $r: $count sends and $count receives charged (0 untracked, " "$2.err" ||
            fail "cost $1, rank $r: not every message charged once: $(cat "$2.err")"
    done
}
run 0 "$tmp/zero"
run "$cost" "$tmp/cost"
for r in 0 1; do
    a=$(sed -n "s/^msgcost_pingpong rank $r: .* cpu_us \([0-9.]*\)$/\1/p" "$tmp/zero.out")
    b=$(sed -n "s/^msgcost_pingpong rank $r: .* cpu_us \([0-9.]*\)$/\1/p" "$tmp/cost.out")
    [ -n "$a" ] && [ -n "$b" ] || fail "rank $r: no cpu_us line"
    # CPU time per message added by the library: at least the cost (it spins until its
    # thread has used that much), and not twice it (a message charged twice)
    awk -v a="$a" -v b="$b" -v n=$((2 * count)) -v c="$cost" -v r="$r" 'BEGIN {
        per = (b - a) / n
        printf "rank %d: cpu %.0f us without, %.0f us with %d us per message: +%.1f us per message\n", r, a, b, c, per
        exit !(per >= 0.95 * c && per <= 1.5 * c) }' || fail "rank $r: CPU time per message not the configured cost"
done
# the wall clock: the time spent per message is the cost or a little more (never less), and
# the library's own CPU time in it is at most its spinning part (500 us of the 1000)
run "$cost" "$tmp/wall" wall
for r in 0 1; do
    line=$(grep "^mpilab-msgcost: rank $r: " "$tmp/wall.err")
    echo "$line" | grep -q " us of wall time spent, " || fail "wall, rank $r: $line"
    echo "$line" | awk -v n=$((2 * count)) -v c="$cost" -v r="$r" '{
        for (i = 1; i <= NF; i++) {
            if ($i == "of" && $(i + 1) == "wall") spent = $(i - 2)
            if ($i == "used") cpu = $(i - 5)
        }
        printf "rank %d: wall clock, %.1f us spent and %.1f us of CPU used per message of %d us\n", r, spent / n, cpu / n, c
        exit !(spent / n >= c && cpu / n < 0.75 * c) }' || fail "wall, rank $r: $line"
done
# MPI_Waitall charges a receive when it is in, while the other is still on its way (the
# second message comes 1 s after the first)
"$launch" -q 2 env LD_PRELOAD="$lib" MPILAB_MSG_COST_US="$cost" MPILAB_MSG_COST_DEBUG=1 "$prog" \
    --case early_waitall >"$tmp/ew.out" 2>"$tmp/ew.err" || fail "early_waitall: $(cat "$tmp/ew.err")"
grep -q "^mpilab-msgcost: rank 0: 0 sends and 2 receives charged (0 untracked, 1 while others were in flight)" \
    "$tmp/ew.err" || fail "early_waitall: the first receive not charged while the second was in flight: $(cat "$tmp/ew.err")"
echo "early_waitall: ok"
# a receive is charged when a test finds it in, not when the last of its MPI_Testall is
"$launch" -q 2 env LD_PRELOAD="$lib" MPILAB_MSG_COST_US="$cost" "$prog" --case early_receive \
    >"$tmp/early.out" 2>&1 || fail "early_receive: $(cat "$tmp/early.out")"
cat "$tmp/early.out"
echo "msgcost: ok"
