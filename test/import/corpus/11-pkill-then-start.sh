#!/bin/bash
fails=$(cat /var/tmp/app-fails 2> /dev/null || echo 0)
if curl -sf --max-time 30 http://127.0.0.1:5000/health > /dev/null; then
  echo 0 > /var/tmp/app-fails
else
  fails=$((fails + 1)); echo $fails > /var/tmp/app-fails
  if [ $fails -gt 2 ]; then
    pkill -f "gunicorn app:app"
    cd /srv/flask && nohup gunicorn app:app -b 127.0.0.1:5000 &
    echo 0 > /var/tmp/app-fails
  fi
fi
