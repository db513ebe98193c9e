#!/bin/bash
# Nextcloud behind docker compose; the stack sometimes wedges. */15 * * * * /opt/nextcloud/watch.sh
cd /opt/nextcloud || exit 1
STATUS=$(curl -s -o /dev/null -w "%{http_code}" -m 20 -H "Host: cloud.example.org" http://127.0.0.1:8080/status.php)
if [ "$STATUS" != "200" ]; then
  docker compose down
  docker compose up -d
  curl -s -F "title=nextcloud" -F "message=restarted after HTTP $STATUS" "https://gotify.example.org/message?token=AbCdEf123"
fi
