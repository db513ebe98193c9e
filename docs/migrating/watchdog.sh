#!/bin/bash
# The hand-written watchdog docs/migrating.md replaces, as such scripts grow: run from cron as
#   */5 * * * * /home/you/watchdog.sh >> /home/you/watchdog.cron.log 2>&1
# Every setting can be overridden from the environment (test/migrating.test.ts runs this very file).
DIR=${DIR:-$HOME}
LOG=${LOG:-$DIR/watchdog.log}
ENGINE_URL=${ENGINE_URL:-http://127.0.0.1:8080/health}
ENGINE_CMD=${ENGINE_CMD:-cd ~/engine && ./engine --port 8080}
BLOG_URL=${BLOG_URL:-https://blog.example.org/}
TUNNEL_CMD=${TUNNEL_CMD:-cloudflared tunnel run blog}
NTFY=${NTFY:-https://ntfy.sh/my-topic}

exec 9>"$DIR/.watchdog.lock"
flock -n 9 || exit 0

log() { echo "[$(date '+%F %T')] [$1] $2" >> "$LOG"; }
notify() { curl -s -d "$1" "$NTFY" > /dev/null; }          # no -f: a 500 from ntfy is silence
check_http() { curl -s -o /dev/null -w '%{http_code}' --max-time 8 "$1"; }
restart_pane() {                                           # $1 = pane, $2 = command
  tmux respawn-pane -k -t "$1" "$2"
  log RESTART "$1"
}
strike() {                                                 # $1 = name, $2 = count file, $3 = pane, $4 = command, $5 = detail
  count=$(( $(cat "$2" 2> /dev/null || echo 0) + 1 ))
  if [ "$count" -ge 3 ]; then
    log HUNG "$1 hung ($5)"
    restart_pane "$3" "$4"
    notify "$1 restarted ($5)"
    echo 0 > "$2"
  else
    log WARN "$1 failed health check ($5, failure $count/3)"
    echo "$count" > "$2"
  fi
}

# The engine: 200 or it counts.
code=$(check_http "$ENGINE_URL")
if [ "$code" = 200 ]; then echo 0 > "$DIR/.engine-fail-count"
else strike engine "$DIR/.engine-fail-count" main:engine "$ENGINE_CMD" "HTTP $code"; fi

# The blog's public URL through the tunnel: only the edge's "tunnel is down" codes count.
code=$(check_http "$BLOG_URL")
case $code in
  502 | 503 | 504 | 530 | 000) strike blogtunnel "$DIR/.blogtunnel-fail-count" main:blogtunnel "$TUNNEL_CMD" "HTTP $code" ;;
  *) echo 0 > "$DIR/.blogtunnel-fail-count" ;;
esac
