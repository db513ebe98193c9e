#!/bin/bash
# The phone's watchdog after a year of edits: a private tmux socket, helpers, a busy engine, the tunnel.
# cronie: */5 * * * * /data/data/com.termux/files/home/bin/watchdog.sh >> /data/data/com.termux/files/home/wd.log 2>&1
SOCK=${SOCK:-$PREFIX/tmp/tmux-phone.sock}
TIMEOUT=${TIMEOUT:-12}
STRIKES=${STRIKES:-3}
NTFY=https://ntfy.sh/phone-watch-7f3a
ST=$HOME/.wd

tmx() { tmux -S "$SOCK" "$@"; }
say() { curl -fsS --max-time 10 -d "$*" "$NTFY" > /dev/null || true; }

check_http() {   # $1 = url; prints the code, 000 when nothing answered
  curl -s -o /dev/null -w '%{http_code}' --max-time "$TIMEOUT" "$1"
}

restart_pane() {   # $1 = window, $2 = command
  tmx respawn-pane -k -t "main:$1" "$2"
  say "restarted $1"
}

fail() {   # $1 = name, $2 = command
  n=$(( $(cat "$ST/$1" 2>/dev/null || echo 0) + 1 ))
  echo "$n" > "$ST/$1"
  [ "$n" -lt "$STRIKES" ] && return 0
  restart_pane "$1" "$2"
  echo 0 > "$ST/$1"
}

ok() { echo 0 > "$ST/$1"; }

case "$1" in
  status)
    for w in blog engine; do echo "$w: $(cat "$ST/$w" 2>/dev/null)"; done
    check_http http://127.0.0.1:9999/debug
    exit 0
    ;;
esac

mkdir -p "$ST"

# the blog: 200 or a strike
code=$(check_http http://127.0.0.1:4000/)
if [ "$code" != 200 ]; then
  fail blog "cd ~/blog && hugo server -p 4000"
else
  ok blog
fi

# the engine: a backfill keeps it from answering, but its port is open and its log moves
code=$(check_http http://127.0.0.1:8080/health)
age=$(( $(date +%s) - $(stat -c %Y ~/engine/engine.log 2>/dev/null || echo 0) ))
if [ "$code" = 200 ]; then
  ok engine
elif ss -ltn | grep -q ':8080 ' && [ "$age" -lt 300 ]; then
  echo "engine busy"
else
  fail engine "cd ~/engine && ./engine --port 8080"
fi

# ngrok's local API must list a tunnel
if ! curl -s --max-time "$TIMEOUT" http://127.0.0.1:4040/api/tunnels | grep -q public_url; then
  fail ngrok "ngrok http 8080"
else
  ok ngrok
fi

# the public URL through the tunnel: only the edge's codes count, with its own three strikes
code=$(check_http https://blog.example.org/)
case $code in
  502|503|504|530|000)
    t=$(( $(cat "$ST/tunnel" 2>/dev/null || echo 0) + 1 ))
    echo "$t" > "$ST/tunnel"
    if [ "$t" -ge 3 ]; then
      tmx respawn-pane -k -t main:tunnel "cloudflared tunnel run blog"
      say "tunnel restarted (HTTP $code)"
      echo 0 > "$ST/tunnel"
    fi
    ;;
  *) echo 0 > "$ST/tunnel" ;;
esac
