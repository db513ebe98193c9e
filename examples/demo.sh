#!/usr/bin/env bash
# make demo: the watchdog from the built binary against two real local services.
# It starts them, freezes one with SIGSTOP, and shows tend detect it (3 strikes) and recover it.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEMO=$ROOT/build/demo
BIN=$ROOT/build/bin
# Headings in bold only on a terminal, and never when the caller set NO_COLOR (no-color.org).
if [ -t 1 ] && [ -z "${NO_COLOR:-}" ]; then BOLD=$'\033[1m' PLAIN=$'\033[0m'; else BOLD="" PLAIN=""; fi
export TEND_CONFIG=$DEMO/tend.toml NO_COLOR=1

pgid() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f3; }   # field 5 of /proc/PID/stat
pstate() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1; }
get() { node -e 'fetch(process.argv[1], {signal: AbortSignal.timeout(2000)}).then(r => r.text()).then(t => process.stdout.write(t.trim()), () => process.stdout.write("no answer"))' "$1"; }
cleanup() {
  for f in "$DEMO"/state/*.pid; do
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    # Only the process groups tend created for the demo (each service leads its own).
    [ "$(pgid "$pid")" = "$pid" ] && kill -KILL -- "-$pid" 2>/dev/null || true
  done
}
trap cleanup EXIT
step() { printf '\n%s== %s%s\n' "$BOLD" "$*" "$PLAIN"; }

rm -rf "$DEMO" && mkdir -p "$DEMO"
sed -e "s|@DEMO@|$DEMO|g" -e "s|@BUN@|$ROOT/node_modules/.bin/bun|g" -e "s|@ROOT@|$ROOT|g" \
  "$ROOT/examples/demo.toml" > "$TEND_CONFIG"

step "watchdog validate"
"$BIN/watchdog" validate
step "first pass: nothing runs yet, so tend starts both services (a first start, not a restart)"
"$BIN/watchdog"
step "watchdog status"
"$BIN/watchdog" status

WEB=$(cat "$DEMO/state/web.pid")
step "freeze web (kill -STOP $WEB): its PID still exists, it no longer answers"
kill -STOP "$WEB"
echo "pid $WEB state: $(pstate "$WEB") (T = stopped)"
for pass in 1 2 3; do
  step "pass $pass"
  "$BIN/watchdog" pass
done
step "watchdog status: web was restarted and answers again"
"$BIN/watchdog" status
echo
echo "web now answers: $(get http://127.0.0.1:18480/)"
case "$(pstate "$WEB")" in
  "") old=gone ;;
  Z) old="exited (a zombie until its parent reaps it)" ;;
  *) old="STILL RUNNING ($(pstate "$WEB"))" ;;
esac
echo "old pid $WEB: $old; new pid: $(cat "$DEMO/state/web.pid")"
step "downtime.log"
cat "$DEMO/state/downtime.log"
step "cleaning up the demo's services"
