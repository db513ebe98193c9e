#!/bin/sh
# The API is up when its PID is: a trap, listed on top of the draft.
if ! kill -0 "$(cat /run/api.pid)" 2> /dev/null; then
  nohup /opt/api/bin/api > /var/log/api.log 2>&1 &
  echo $! > /run/api.pid
fi
