#!/bin/bash
fails=$(cat /var/tmp/fails 2> /dev/null || echo 0)
if curl -sf --max-time 30 http://127.0.0.1:3000/health > /dev/null; then
  echo 0 > /var/tmp/fails
else
  fails=$((fails + 1)); echo $fails > /var/tmp/fails
  if [ $fails -gt 2 ]; then pkill -f "node server.js"; cd /srv/app && nohup node server.js & fi
fi
