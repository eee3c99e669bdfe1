# Sourced by the shell tests: a private temporary folder $tmp, removed on exit, and TMPDIR
# pointing there (each test gets its own Open MPI session directory: concurrent tests
# collide in /tmp otherwise).
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export TMPDIR="$tmp"
