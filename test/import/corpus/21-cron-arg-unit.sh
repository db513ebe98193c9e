#!/bin/bash
# Usage: monitor.sh SERVICE   — restarts SERVICE when systemd says it is not active.
# /etc/crontab: */5 * * * * root /usr/local/sbin/monitor.sh ssh
SERVICE=${1:?usage: monitor.sh SERVICE}
LOG=/var/log/monitor-$SERVICE.log

systemctl is-active --quiet "$SERVICE"
rc=$?
if [ $rc -ne 0 ]; then
  echo "$(date '+%F %T') $SERVICE not active (rc=$rc), restarting" >> "$LOG"
  systemctl restart "$SERVICE"
fi
