# Shared by the bench-slot drivers (source it after setting R and SLOT_S): `task NAME CMD...`
# runs CMD unless $R/done.NAME exists, given what is left of the slot's SLOT_S seconds; it
# stops the driver when the slot is used up or a task was cut short.
T0=$(date +%s)
left() { echo $(( SLOT_S - ($(date +%s) - T0) )); }
echo "slot start $(date -u +%T) load $(cat /proc/loadavg)"
task() {
  local name=$1; shift
  [ -f $R/done.$name ] && return 0
  local l=$(left); [ $l -lt 40 ] && { echo "slot: no time left for $name"; exit 0; }
  echo "== $name from $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) ($l s left)"
  timeout -s TERM $l bash -c '"$@"' _ "$@"; local rc=$?
  echo "== $name rc $rc at $(date -u +%T)"
  [ $rc -eq 0 ] && touch $R/done.$name
  [ $rc -eq 124 ] && exit 0
  return 0
}
