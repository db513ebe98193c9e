#!/bin/bash
# Only restart the photo sync during the day; at night just note it. cron: 0 * * * *
H=$(date +%H)
if ! curl -sf -m 20 http://127.0.0.1:2342/api/v1/status > /dev/null; then
  if [ "$H" -gt 7 ] && [ "$H" -lt 23 ]; then
    docker restart photoprism
  else
    echo "photoprism down at night" >> /var/log/photoprism-watch.log
  fi
fi
