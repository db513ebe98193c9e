#!/bin/bash
# API health check, every minute from cron:
# * * * * * /home/deploy/bin/api-health.sh
URL="http://127.0.0.1:3000/health"
COUNT_FILE=/home/deploy/.api-fail-count
MAX_FAILS=3

STATUS=$(curl -s -o /dev/null -w "%{http_code}" --max-time 10 "$URL")
COUNT=$(cat "$COUNT_FILE" 2>/dev/null || echo 0)

if [ "$STATUS" -ne 200 ]; then
  COUNT=$((COUNT + 1))
  echo "$COUNT" > "$COUNT_FILE"
  echo "$(date) api answered $STATUS ($COUNT/$MAX_FAILS)"
  if [ "$COUNT" -ge "$MAX_FAILS" ]; then
    pm2 restart api
    echo 0 > "$COUNT_FILE"
  fi
else
  echo 0 > "$COUNT_FILE"
fi
