#!/usr/bin/env bash
# The peer: a plain bash+curl watchdog of the kind tend replaces (curl per service, one fail-count
# file each, flock so two cron runs do not overlap). Checked one after another, as such scripts do.
# usage: watchdog.sh SERVICES STATE_DIR [TIMEOUT_SECONDS]
#   SERVICES: one "name url restart-command..." per line
set -u
SERVICES=$1 STATE=$2 TIMEOUT=${3:-5} FAILURES=3
mkdir -p "$STATE"
exec 9>"$STATE/lock"
flock -n 9 || exit 0
log() { echo "[$(date '+%F %T')] [$1] $2" >> "$STATE/watchdog.log"; }
while read -r name url restart; do
  [ -n "$name" ] || continue
  code=$(curl -s -o /dev/null -w '%{http_code}' --max-time "$TIMEOUT" "$url")
  count=$(cat "$STATE/$name.count" 2>/dev/null || echo 0)
  if [[ $code =~ ^[23] ]]; then
    [ "$count" = 0 ] || echo 0 > "$STATE/$name.count"
  else
    count=$((count + 1))
    echo "$count" > "$STATE/$name.count"
    log WARN "$name failed health check (HTTP $code, failure $count/$FAILURES)"
    if [ "$count" -ge "$FAILURES" ]; then
      log HUNG "$name"
      [ -n "$restart" ] && eval "$restart"
      echo 0 > "$STATE/$name.count"
    fi
  fi
done < "$SERVICES"
