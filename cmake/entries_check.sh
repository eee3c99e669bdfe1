#!/bin/sh
# Build step (cmake/entries.cmake): every C file of the built capabilities that defines
# built-in entries (a line MPILAB_ENTRIES(TAG, ...)) is named by an mpilab_entries(TAG FILE)
# line, and every such line's TAG is defined by one of them; otherwise entries would be left
# out of the table without a word. Each problem: one line naming the file (file:line) or the
# tag; then status 1 and no stamp, so the build stops before compiling.
# Usage: entries_check.sh SRCDIR STAMP TAG,TAG,... FILE...
set -u
src=$1 stamp=$2 tags=$3
shift 3
rm -f "$stamp"
status=0 seen=,
hits=$(grep -nE '^[[:space:]]*MPILAB_ENTRIES[[:space:]]*\(' "$@" /dev/null 2>/dev/null)
while IFS= read -r hit; do
  [ -n "$hit" ] || continue
  f=${hit%%:*} rest=${hit#*:}
  line=${rest%%:*}
  tag=$(printf '%s\n' "${rest#*:}" |
        sed -nE 's/^[[:space:]]*MPILAB_ENTRIES[[:space:]]*\([[:space:]]*([A-Za-z0-9_]+).*/\1/p')
  rel=${f#"$src"/}
  if [ -z "$tag" ]; then
    echo "$rel:$line: MPILAB_ENTRIES( without its tag on the same line"
    status=1
    continue
  fi
  seen=$seen$tag,
  case ,$tags, in
    *",$tag,"*) ;;
    *) echo "$rel:$line: defines built-in entries '$tag' but no mpilab_entries($tag $(basename "$f")) line names the file in its folder's CMakeLists.txt"
       status=1 ;;
  esac
done <<HITS
$hits
HITS
for tag in $(printf '%s\n' "$tags" | tr ',' ' '); do
  case $seen in
    *",$tag,"*) ;;
    *) echo "mpilab_entries($tag ...): no file of the built folders defines MPILAB_ENTRIES($tag, ...)"
       status=1 ;;
  esac
done
[ "$status" -eq 0 ] && touch "$stamp"
exit "$status"
