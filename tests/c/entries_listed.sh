#!/usr/bin/env bash
# Every file under src/ that defines built-in entries (MPILAB_ENTRIES(tag, ...)) is in the
# generated table (its mpilab_entries(tag file) line exists), and the table names no tag that
# no file defines: an entry file cannot be forgotten in the build list.
# Usage: entries_listed.sh SRCDIR BUILDDIR
set -u
src=$1 build=$2
table="$build/generated/mpilab_entries.c"
[ -f "$table" ] || { echo "FAIL: no generated table $table"; exit 1; }
fail=0
defined=$(grep -rhoE '^MPILAB_ENTRIES\(\s*[A-Za-z0-9_]+' "$src/src" | sed -E 's/^MPILAB_ENTRIES\(\s*//' | sort -u)
listed=$(grep -oE '&mpilab_entries_[A-Za-z0-9_]+' "$table" | sed 's/&mpilab_entries_//' | sort -u)
[ -n "$defined" ] || { echo "FAIL: no MPILAB_ENTRIES in $src/src"; exit 1; }
for t in $defined; do
    if grep -qx "$t" <<<"$listed"; then echo "ok: $t in the table"; else echo "FAIL: $t defined but not in the build list (mpilab_entries($t FILE))"; fail=1; fi
done
for t in $listed; do
    grep -qx "$t" <<<"$defined" || { echo "FAIL: $t listed but defined by no file under src/"; fail=1; }
done
exit $fail
