#!/bin/bash
# Plex watchdog. Runs from root's crontab every 2 minutes:
# */2 * * * * /root/plex-watchdog.sh
set -u
readonly URL="http://127.0.0.1:32400/identity"
readonly LOCK=/run/plex-watchdog.lock
exec 200>"$LOCK"
flock -n 200 || exit 1

is_up() {
  curl -fs --max-time 20 "$URL" -o /dev/null
}

report() {
  cat <<MSG | mail -s "plex on $(hostname): $1" root
Plex did not answer on $URL at $(date).
Action: $1
MSG
}

if is_up; then
  exit 0
fi
sleep 30
if is_up; then
  exit 0
fi
systemctl restart plexmediaserver
report "restarted"
