#!/bin/bash
# test/systemd-container/up.sh (the project's own) - bring up a real systemd (PID 1 of a systemd-nspawn container) on a host
# whose own PID 1 is NOT systemd. Idempotent: re-running while it is up is a no-op.
#
# Env knobs:
#   MACHINE=t                 container name (also /var/lib/machines/$MACHINE)
#   ROOTFS=debootstrap        debootstrap: minbase bookworm tree (hermetic, ~75 s first time, ~290 MB)
#          hostusr            boot the host's own /usr on a tmpfs root (--volatile=yes), no download
#   VOLATILE=overlay          (debootstrap mode) overlay|no : overlay = tree stays pristine, every boot clean
#   EXTRA_NSPAWN_ARGS=""      e.g. "--bind=/path/to/repo --private-network"
#   INCLUDE=systemd,dbus,python3  (debootstrap mode) the packages debootstrap adds to minbase
# After success:  ${SYSTEMD_SANDBOX_DIR:-/tmp/tend-systemd-sandbox}/ct <cmd...>   runs <cmd> inside the container (nsenter).
set -euo pipefail

BASE=${SYSTEMD_SANDBOX_DIR:-/tmp/tend-systemd-sandbox}
MACHINE=${MACHINE:-tendtest}
ROOTFS=${ROOTFS:-hostusr}
VOLATILE=${VOLATILE:-overlay}
ROOT=/var/lib/machines/$MACHINE
STATE=$BASE/state-$MACHINE
CG=systemd-sandbox-$MACHINE
EXTRA_NSPAWN_ARGS=${EXTRA_NSPAWN_ARGS:-}
T0=$(date +%s.%N)
el() { printf '%.1fs' "$(echo "$(date +%s.%N) - $T0" | bc)"; }
log() { echo "[up $(el)] $*"; }

mkdir -p "$BASE/share" "$STATE" /var/lib/machines

in_ct() { nsenter -t "$(cat "$STATE/leader.pid")" -a -- "$@"; }

is_up() {
  [ -s "$STATE/nspawn.pid" ] && [ -s "$STATE/leader.pid" ] || return 1
  local np lp; np=$(cat "$STATE/nspawn.pid"); lp=$(cat "$STATE/leader.pid")
  grep -qa systemd-nspawn "/proc/$np/cmdline" 2>/dev/null || return 1
  [ "$(cat /proc/$lp/comm 2>/dev/null)" = systemd ] || return 1
  local s; s=$(timeout 10 nsenter -t "$lp" -a -- systemctl is-system-running 2>/dev/null || true)
  [ "$s" = running ] || [ "$s" = degraded ]
}

if is_up; then
  log "already up: nspawn pid $(cat "$STATE/nspawn.pid"), container PID1 = host pid $(cat "$STATE/leader.pid")"
  exit 0
fi

# ---- 1. packages (systemd-nspawn, debootstrap) -------------------------------
need=()
command -v systemd-nspawn >/dev/null || need+=(systemd-container)
[ "$ROOTFS" = debootstrap ] && ! command -v debootstrap >/dev/null && need+=(debootstrap)
command -v bc >/dev/null || need+=(bc)
if [ ${#need[@]} -gt 0 ]; then
  log "apt-get install ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

# ---- 2. root filesystem ------------------------------------------------------
if [ "$ROOTFS" = debootstrap ]; then
  if [ ! -e "$ROOT/.sandbox-complete" ]; then
    . /etc/os-release
    SUITE=${SUITE:-${VERSION_CODENAME:-bookworm}}
    MIRROR=${MIRROR:-$(awk '/^URIs:/{for(i=2;i<=NF;i++) if ($i !~ /security/) {print $i; exit}}' \
                         /etc/apt/sources.list.d/*.sources 2>/dev/null | head -1)}
    MIRROR=${MIRROR:-$(awk '$1=="deb" && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null)}
    MIRROR=${MIRROR:-http://deb.debian.org/debian}
    log "debootstrap $SUITE from $MIRROR -> $ROOT"
    rm -rf "$ROOT.partial"
    debootstrap --variant=minbase --include="${INCLUDE:-systemd,dbus,python3}" "$SUITE" "$ROOT.partial" "$MIRROR" \
      > "$STATE/debootstrap.log" 2>&1 || { tail -20 "$STATE/debootstrap.log"; exit 1; }
    rm -rf "$ROOT"; mv "$ROOT.partial" "$ROOT"
    touch "$ROOT/.sandbox-complete"
    log "debootstrap done ($(du -sh "$ROOT" | cut -f1))"
  fi
  ROOT_ARGS=(-D "$ROOT")
  [ "$VOLATILE" = overlay ] && ROOT_ARGS+=(--volatile=overlay)
elif [ "$ROOTFS" = hostusr ]; then
  ROOT_ARGS=(-D / --volatile=yes)   # tmpfs root + host /usr read-only; /etc starts empty
else
  echo "unknown ROOTFS=$ROOTFS" >&2; exit 2
fi

# ---- 3. private cgroup for nspawn (it creates payload/ + supervisor/ under it) -
CG_DIRS=()
if [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ]; then
  CG_DIRS=(/sys/fs/cgroup/$CG)
else
  for h in /sys/fs/cgroup/unified /sys/fs/cgroup/systemd; do
    [ -e "$h/cgroup.procs" ] && CG_DIRS+=("$h/$CG")
  done
fi
for d in "${CG_DIRS[@]}"; do mkdir -p "$d"; done
printf '%s\n' "${CG_DIRS[@]}" > "$STATE/cgroups"

# ---- 4. boot -------------------------------------------------------------------
rm -f "$STATE/nspawn.pid" "$STATE/leader.pid"
log "starting systemd-nspawn ${ROOT_ARGS[*]} -b (console log: $STATE/console.log)"
# --register=no + --keep-unit: do not talk to a host systemd/machined (there is none).
# shellcheck disable=SC2086
setsid bash -c '
  pidf=$1; shift; cgs=$1; shift
  echo $$ > "$pidf"
  for d in $cgs; do echo $$ > "$d/cgroup.procs"; done
  exec "$@"' sandbox-launch "$STATE/nspawn.pid" "${CG_DIRS[*]}" \
  systemd-nspawn "${ROOT_ARGS[@]}" -M "$MACHINE" --register=no --keep-unit --console=read-only \
    --bind="$BASE/share:/sandbox-share" $EXTRA_NSPAWN_ARGS \
    -b systemd.firstboot=off \
  > "$STATE/console.log" 2>&1 < /dev/null &

for _ in $(seq 300); do [ -s "$STATE/nspawn.pid" ] && break; sleep 0.1; done
NSPID=$(cat "$STATE/nspawn.pid")
LEADER=
for _ in $(seq 300); do
  kill -0 "$NSPID" 2>/dev/null || { cat "$STATE/console.log"; echo "nspawn died" >&2; exit 1; }
  for c in $(pgrep -P "$NSPID" || true); do
    [ "$(cat /proc/$c/comm 2>/dev/null)" = systemd ] && LEADER=$c
  done
  [ -n "$LEADER" ] && break; sleep 0.1
done
[ -n "$LEADER" ] || { cat "$STATE/console.log"; echo "no container PID 1 found" >&2; exit 1; }
echo "$LEADER" > "$STATE/leader.pid"
log "nspawn pid $NSPID, container PID1 = host pid $LEADER; waiting for boot"

state=unknown
for _ in $(seq 60); do
  state=$(timeout 10 nsenter -t "$LEADER" -a -- systemctl is-system-running --wait 2>/dev/null || true)
  case "$state" in running|degraded) break;; esac
  kill -0 "$NSPID" 2>/dev/null || break
  sleep 0.5
done
case "$state" in
  running|degraded) ;;
  *) tail -30 "$STATE/console.log"; echo "boot failed (state=$state)" >&2; exit 1;;
esac
[ "$state" = degraded ] && in_ct systemctl --failed --no-pager || true

# helper: ${SYSTEMD_SANDBOX_DIR:-/tmp/tend-systemd-sandbox}/ct <cmd...>  (exec inside container; MACHINE picks which one)
cat > "$BASE/ct" <<'EOF'
#!/bin/sh
S=${SYSTEMD_SANDBOX_DIR:-/tmp/tend-systemd-sandbox}/state-${MACHINE:-tendtest}
exec nsenter -t "$(cat "$S/leader.pid")" -a -- "$@"
EOF
chmod +x "$BASE/ct"
log "UP: system state '$state', systemd $(in_ct systemctl --version | head -1 | cut -d' ' -f2)"
log "use: $BASE/ct systemctl status   |  D-Bus: unix:path=/proc/$LEADER/root/run/dbus/system_bus_socket"
