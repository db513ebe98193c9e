#!/bin/bash
# The phone's hand-written watchdog as the seeds left it, which docs/migrating.md replaces. Run by
# cron (cronie under Termux) as
#   */5 * * * * /data/data/com.termux/files/home/watchdog.sh >> /data/data/com.termux/files/home/watchdog.cron.log 2>&1
# and its panes started at boot by boot.sh. Every setting can be overridden from the environment
# (test/migrating.test.ts runs this very file, side by side with tend, through the same faults).
DIR=${DIR:-$HOME}
LOG=${LOG:-$DIR/watchdog.log}
DOWNTIME_LOG=${DOWNTIME_LOG:-$DIR/downtime.log}
SOCKET=${SOCKET:-phone}                                    # tmux -L phone: the panes' private server
TIMEOUT=${TIMEOUT:-20}                                     # seconds: above the engine's slow answers
BUSY_FRESH=${BUSY_FRESH:-180}                              # seconds: a log written this recently is busy
BLOG_LOCAL=${BLOG_LOCAL:-http://127.0.0.1:4000/}
BLOG_CMD=${BLOG_CMD:-cd ~/blog && ./serve --port 4000}
ENGINE_URL=${ENGINE_URL:-http://127.0.0.1:8080/health}
ENGINE_LOG=${ENGINE_LOG:-$HOME/engine/engine.log}
ENGINE_CMD=${ENGINE_CMD:-cd ~/engine && ./engine --port 8080}
NGROK_API=${NGROK_API:-http://127.0.0.1:4040/api/tunnels}
NGROK_CMD=${NGROK_CMD:-ngrok http 8080}
BLOG_URL=${BLOG_URL:-https://blog.example.org/}
TUNNEL_CMD=${TUNNEL_CMD:-cloudflared tunnel run blog}
NTFY=${NTFY:-https://ntfy.sh/my-topic}

exec 9>"$DIR/.watchdog.lock"
flock -n 9 || exit 0
date +%s > "$DIR/.watchdog-heartbeat"                      # the last time the watchdog ran

log() { echo "[$(date '+%F %T')] [$1] $2" >> "$LOG"; }
notify() { curl -sf --max-time 10 -d "$1" "$NTFY" > /dev/null || log NOTIFY "could not send: $1"; }
check_http() { curl -s -o /dev/null -w '%{http_code}' --max-time "$TIMEOUT" "$1"; }
restart_pane() { tmux -L "$SOCKET" respawn-pane -k -t "$1" "$2" && log RESTART "$1"; }  # $1 = pane, $2 = command
healthy() {                                                # $1 = name: a recovery closes its downtime
  echo 0 > "$DIR/.$1-fail-count"
  if [ -e "$DIR/.$1-down-since" ]; then
    since=$(cat "$DIR/.$1-down-since"); now=$(date +%s)
    line="[$(date '+%F %T')] [DOWNTIME] $1 was unavailable for $((now - since))s"
    echo "$line" >> "$DOWNTIME_LOG"; echo "$line" >> "$LOG"
    rm -f "$DIR/.$1-down-since"
  fi
}
strike() {                                                 # $1 = name, $2 = pane, $3 = command, $4 = detail
  [ -e "$DIR/.$1-down-since" ] || date +%s > "$DIR/.$1-down-since"
  count=$(( $(cat "$DIR/.$1-fail-count" 2> /dev/null || echo 0) + 1 ))
  if [ "$count" -ge 3 ]; then
    log HUNG "$1 hung ($4)"
    restart_pane "$2" "$3"
    notify "$1 restarted ($4)"
    echo 0 > "$DIR/.$1-fail-count"
  else
    log WARN "$1 failed health check ($4, failure $count/3)"
    echo "$count" > "$DIR/.$1-fail-count"
  fi
}

# The blog's origin.
code=$(check_http "$BLOG_LOCAL")
if [ "$code" = 200 ]; then healthy blog; else strike blog main:blog "$BLOG_CMD" "HTTP $code"; fi

# The engine: 200, or busy (a failed check while its log is being written: a backfill), or it counts.
code=$(check_http "$ENGINE_URL")
written=$(stat -c %Y "$ENGINE_LOG" 2> /dev/null || echo 0)
if [ "$code" = 200 ]; then healthy engine
elif [ $(( $(date +%s) - written )) -lt "$BUSY_FRESH" ]; then log BUSY "engine busy (HTTP $code, its log is written)"
else strike engine main:engine "$ENGINE_CMD" "HTTP $code"; fi

# ngrok, judged by its local API: a tunnel is listed, or it counts.
if curl -s --max-time "$TIMEOUT" "$NGROK_API" | grep -q public_url; then healthy ngrok
else strike ngrok main:ngrok "$NGROK_CMD" "no tunnel in its local API"; fi

# The blog's public URL through the tunnel: only the edge's "tunnel is down" codes count.
code=$(check_http "$BLOG_URL")
case $code in
  502 | 503 | 504 | 530 | 000) strike blogtunnel main:blogtunnel "$TUNNEL_CMD" "HTTP $code" ;;
  *) healthy blogtunnel ;;
esac
