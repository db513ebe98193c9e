#!/bin/bash
# A real user's phone watchdog: not the guide's. Its own timeout, strike limit, fail codes, socket and busy bound.
TIMEOUT=8
FAIL_LIMIT=2
SOCK=/data/data/com.termux/files/usr/tmp/panes.sock
NTFY_URL=https://ntfy.example.net/phone-alerts
BUSY_SECS=600

check() { curl -s -o /dev/null -w '%{http_code}' --max-time "$TIMEOUT" "$1"; }
respawn() { tmux -S "$SOCK" respawn-pane -k -t "$1" "$2"; }
alert() { curl -fsS -d "$1" "$NTFY_URL" > /dev/null; }
fail() {
  n=$(( $(cat ~/.fails-$1 2> /dev/null || echo 0) + 1 ))
  if [ "$n" -ge "$FAIL_LIMIT" ]; then respawn "$2" "$3"; alert "$1 respawned"; echo 0 > ~/.fails-$1
  else echo "$n" > ~/.fails-$1; fi
}
ok() { echo 0 > ~/.fails-$1; }

code=$(check http://127.0.0.1:4000/)
if [ "$code" = 200 ]; then ok site; else fail site web:site "cd ~/site && hugo server -p 4000"; fi

code=$(check http://127.0.0.1:9000/healthz)
age=$(stat -c %Y ~/indexer/indexer.log 2> /dev/null || echo 0)
if [ "$code" = 200 ]; then ok indexer
elif [ $(( $(date +%s) - age )) -lt "$BUSY_SECS" ]; then :
else fail indexer web:indexer "cd ~/indexer && ./run.sh"; fi

code=$(check https://site.example.net/)
case $code in
  502 | 504 | 000) fail tunnel web:tunnel "cloudflared tunnel run site" ;;
  *) ok tunnel ;;
esac
