#!/bin/bash
# test/systemd-container/down.sh - stop the container started by up.sh (only the PIDs recorded by up.sh), remove
# its cgroups. PURGE=1 also deletes the debootstrap tree /var/lib/machines/$MACHINE.
set -uo pipefail
MACHINE=${MACHINE:-tendtest}
BASE=${SYSTEMD_SANDBOX_DIR:-/tmp/tend-systemd-sandbox}
STATE=$BASE/state-$MACHINE
T0=$(date +%s.%N)
log() { printf '[down %.1fs] %s\n' "$(echo "$(date +%s.%N) - $T0" | bc)" "$*"; }

NSPID=$(cat "$STATE/nspawn.pid" 2>/dev/null || true)
LEADER=$(cat "$STATE/leader.pid" 2>/dev/null || true)
if [ -n "$NSPID" ] && grep -qa systemd-nspawn "/proc/$NSPID/cmdline" 2>/dev/null; then
  log "SIGTERM nspawn $NSPID (it forwards SIGRTMIN+3 = orderly shutdown to container PID 1)"
  kill -TERM "$NSPID"
  for _ in $(seq 300); do kill -0 "$NSPID" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$NSPID" 2>/dev/null; then
    log "still alive after 30s -> SIGKILL nspawn $NSPID and container PID1 $LEADER"
    kill -KILL "$NSPID" 2>/dev/null
    [ -n "$LEADER" ] && [ "$(cat /proc/$LEADER/comm 2>/dev/null)" = systemd ] && kill -KILL "$LEADER"
    sleep 1
  fi
  log "container stopped"
else
  log "no running container recorded for MACHINE=$MACHINE"
fi

# remove the private cgroup subtree (payload/, supervisor/, ...) depth-first
if [ -s "$STATE/cgroups" ]; then
  while read -r d; do
    [ -d "$d" ] || continue
    for _ in 1 2 3 4 5; do
      find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null
      [ -d "$d" ] || break; sleep 0.5
    done
    [ -d "$d" ] && log "WARNING: could not remove cgroup $d" || log "removed cgroup $d"
  done < "$STATE/cgroups"
fi
rm -f "$STATE/nspawn.pid" "$STATE/leader.pid" "$STATE/cgroups"

if [ "${PURGE:-0}" = 1 ]; then
  log "PURGE: removing /var/lib/machines/$MACHINE and $STATE"
  rm -rf "/var/lib/machines/$MACHINE" "/var/lib/machines/$MACHINE.partial" "$STATE"
fi
log "done"
