#!/bin/bash
# make fresh-check: the README's set-up line and its two commands, as a new user runs them, on a fresh
# Debian 12 booted with systemd: a debootstrapped minbase root (systemd and dbus only: no make, no
# git, no Node, no /etc/hosts, no sendmail, no emoji font) booted by test/systemd-container/up.sh, the
# repository cloned into /root/tend as root. Then `make test` a second time, and what the runs left
# in /tmp, /dev/shm, /etc/passwd, the crontabs and the processes. BURNERS=N runs N `yes` beside it all
# (a busy machine). Prints each step's time and the test counts; exit 1 if anything failed.
# The debootstrapped tree is kept (/var/lib/machines/tend-fresh, ~75 s to build); every boot starts
# from it pristine (an overlay); PURGE=1 removes it afterwards.
set -uo pipefail
HERE=$(cd "$(dirname "$0")/../.." && pwd)
export MACHINE=tend-fresh SYSTEMD_SANDBOX_DIR=/tmp/tend-fresh-sandbox ROOTFS=debootstrap VOLATILE=overlay
export INCLUDE=systemd,dbus SUITE=bookworm
SRC=$(mktemp -d /tmp/tend-fresh-src.XXXXXX)
# A fresh machine's root has every capability; nspawn drops some by default. The Termux-shaped sandbox
# needs two of them: CAP_NET_ADMIN (a phone's own network, joined by a veth pair) and CAP_SYS_PTRACE.
export EXTRA_NSPAWN_ARGS="--bind-ro=$SRC:/mnt/tend-src --capability=CAP_NET_ADMIN,CAP_SYS_PTRACE"
T0=$(date +%s)
say() { printf '[fresh-check %4ss] %s\n' "$(($(date +%s) - T0))" "$*"; }
BURNERS=${BURNERS:-0}
burners=()
cleanup() {
  [ ${#burners[@]} -gt 0 ] && kill "${burners[@]}" 2>/dev/null
  bash "$HERE/test/systemd-container/down.sh" >/dev/null 2>&1
  rm -rf "$SRC" "$SYSTEMD_SANDBOX_DIR"
  [ "${PURGE:-0}" = 1 ] && rm -rf /var/lib/machines/tend-fresh
}
trap cleanup EXIT
[ "$(id -u)" = 0 ] || { echo "fresh-check: needs root (debootstrap, systemd-nspawn)" >&2; exit 2; }

for _ in $(seq 1 "$BURNERS"); do yes > /dev/null & burners+=($!); done
[ "$BURNERS" -gt 0 ] && say "$BURNERS \`yes\` burning beside it on this machine's $(nproc) cores"

# The repository as a clone would give it: what is committed (HEAD), nothing built or installed.
git clone -q --no-local "$HERE" "$SRC/tend" || exit 1
say "cloned $(git -C "$SRC/tend" rev-parse --short HEAD) into $SRC/tend"
bash "$HERE/test/systemd-container/up.sh" | sed 's/^/  /' || { say "the Debian 12 container did not boot"; exit 1; }
CT_ROOT="/proc/$(cat "$SYSTEMD_SANDBOX_DIR/state-$MACHINE/leader.pid")/root"
rm -f "$CT_ROOT/etc/hosts"
# This machine's network, not the repository: a TLS-intercepting egress proxy's CA (where the host
# trusts one locally) is given to the container as its resolv.conf is, and made part of its trust
# store once the set-up line has installed ca-certificates. A machine without one copies nothing.
EXTRA_CAS=$(ls /usr/local/share/ca-certificates/*.crt 2>/dev/null | wc -l)
if [ "$EXTRA_CAS" -gt 0 ]; then
  mkdir -p "$CT_ROOT/usr/local/share/ca-certificates"
  cp /usr/local/share/ca-certificates/*.crt "$CT_ROOT/usr/local/share/ca-certificates/"
fi

# A root login shell inside: its own environment, nothing of this one's.
inside() {
  nsenter -t "$(cat "$SYSTEMD_SANDBOX_DIR/state-$MACHINE/leader.pid")" -a -- env -i HOME=/root TERM=dumb \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin bash -lc "$1"
}
say "inside: $(inside '. /etc/os-release; echo "$PRETTY_NAME, PID 1 $(cat /proc/1/comm), $(nproc) cores"'); \
/etc/hosts $(inside 'test -e /etc/hosts && echo present || echo absent'); \
sendmail $(inside 'command -v sendmail >/dev/null && echo present || echo absent'); \
emoji fonts: $(inside 'ls /usr/share/fonts 2>/dev/null | wc -l'); \
/tmp $(inside 'df -h --output=fstype,size /tmp | tail -1 | tr -s " "')"
# nspawn mounts /tmp as a tmpfs of a tenth of the RAM (2.4 GB on a 24 GB machine): smaller than a Debian 12
# VM's /tmp on disk, as Debian 13's tmpfs /tmp is on a small VM. Kept so: the suite must fit in it.

# The README's set-up line, as it is written there.
SETUP=$(grep -m1 -E '^ +apt-get .*install' "$HERE/README.md" | sed 's/#.*//')
[ -n "$SETUP" ] || { say "README.md names no apt-get set-up line"; exit 1; }
failed=0
step() { # step NAME COMMAND: run it inside, keep its output, print its time and counts
  local name=$1 command=$2 started=$(date +%s) log="$HERE/build/fresh-check-$1.log"
  inside "$command" > "$log" 2>&1
  local code=$? pass fail skip
  pass=$(grep -E '^ *[0-9]+ pass$' "$log" | tail -1 | tr -dc 0-9)
  fail=$(grep -E '^ *[0-9]+ fail$' "$log" | tail -1 | tr -dc 0-9)
  skip=$(grep -E '^ *[0-9]+ skip$' "$log" | tail -1 | tr -dc 0-9)
  local counts=""
  [ -n "$pass" ] && counts=", ${pass} pass, ${fail:-0} fail, ${skip:-0} skip"
  say "$name: exit $code in $(($(date +%s) - started))s$counts (output: build/fresh-check-$1.log)"
  grep -E '^\(skip\)|skipped:' "$log" | sed 's/^/    /' | head -20
  [ "$code" = 0 ] || { failed=1; grep -E '^\(fail\)' "$log" | sed 's/^/    /' | head -30; tail -5 "$log" | sed 's/^/    /'; }
}
mkdir -p "$HERE/build"
step setup "export DEBIAN_FRONTEND=noninteractive; $SETUP"
if [ "$EXTRA_CAS" -gt 0 ]; then
  say "the host's $EXTRA_CAS local CA certificate(s) (its network's) trusted inside: $(inside 'update-ca-certificates 2>&1 | tail -1')"
fi
# What a run may leave behind: files in /tmp and /dev/shm, users, crontab lines, processes (by owner
# and command line; not this snapshot's own shell, nor systemd's own helpers, which come and go on
# their own: hostnamed, timedated and the like exit when idle).
snapshot() {
  inside 'echo "== /tmp"; ls -A /tmp; echo "== /dev/shm"; ls -A /dev/shm; echo "== /etc/passwd"; cat /etc/passwd
    echo "== crontabs"; for f in /var/spool/cron/crontabs/* /etc/cron.d/*; do [ -f "$f" ] && sed "s|^|$f: |" "$f"; done
    echo "== processes"
    for p in /proc/[0-9]*; do
      pid=${p#/proc/}; [ "$pid" = $$ ] && continue
      [ "$(cut -d" " -f4 "$p/stat" 2>/dev/null)" = $$ ] && continue
      c=$(tr "\0" " " < "$p/cmdline" 2>/dev/null); [ -n "$c" ] || continue
      echo "$(stat -c %U "$p") $c"
    done | grep -vE "^[^ ]+ (/usr)?/lib/systemd/systemd-|^root \(sd-pam\)" | sort' > "$1"
}
snapshot "$HERE/build/fresh-check-before.txt"
step clone "git clone -q /mnt/tend-src/tend /root/tend"
step demo "cd /root/tend && make demo"
step test "cd /root/tend && make test"
snapshot "$HERE/build/fresh-check-between.txt"
step test-again "cd /root/tend && make test"
snapshot "$HERE/build/fresh-check-after.txt"
# A release made there, its Debian package installed and removed with apt on that fresh Debian, as a user
# would (test/release.test.ts does the same in an overlay of the host's root, in make test).
step release "cd /root/tend && openssl genpkey -algorithm ed25519 -out /root/release.pem && \
  make release VERSION=0.0.1 KEY=/root/release.pem RELEASE_DIR=/root/release && \
  apt-get install -y /root/release/tend_0.0.1_amd64.deb && tend --version && \
  printf '[[service]]\\nname = \"web\"\\n[service.check]\\ntcp = \"127.0.0.1:80\"\\n' > /root/t.toml && \
  watchdog validate --config /root/t.toml && man -P cat watchdog | head -5 && apt-get remove -y tend && \
  ! test -e /usr/bin/tend && ! test -e /usr/share/man/man1/watchdog.1.gz && rm -rf /root/release && echo RELEASE-OK"
grep -q RELEASE-OK "$HERE/build/fresh-check-release.log" || failed=1
# The first run installs the tests' tools with apt, and packages may add system users (runit's
# runit-log), crontabs and daemons (cron): said, not counted. The second run installs nothing: what
# it leaves is the tests'.
first=$(diff "$HERE/build/fresh-check-before.txt" "$HERE/build/fresh-check-between.txt" | grep '^>' || true)
[ -n "$first" ] && { say "after the first make test (its apt installs included):"; echo "$first" | sed 's/^/    /'; }
left=$(diff "$HERE/build/fresh-check-between.txt" "$HERE/build/fresh-check-after.txt" | grep '^>' || true)
if [ -n "$left" ]; then
  failed=1
  say "left behind by the second make test (/tmp, /dev/shm, /etc/passwd, crontabs, processes):"
  echo "$left" | sed 's/^/    /'
else
  say "the second make test left nothing in /tmp, /dev/shm, /etc/passwd, the crontabs or the processes"
fi
say "$([ $failed = 0 ] && echo PASSED || echo FAILED) in $(($(date +%s) - T0))s"
exit $failed
