#!/bin/bash
# The worker writes its log every minute; silence for 10 minutes means it is stuck.
LOG=/var/log/worker/worker.log
MAX_AGE=600
NOW=$(date +%s)
MTIME=$(stat -c %Y "$LOG")
AGE=$((NOW - MTIME))
if [ "$AGE" -gt "$MAX_AGE" ]; then
  echo "worker log is ${AGE}s old, restarting"
  systemctl restart worker
fi
