#!/bin/bash
# Caddy in front of the app: restart caddy only on gateway errors (the app has its own watchdog).
code=$(curl -so /dev/null -w '%{http_code}' --max-time 6 https://app.example.net/)
if [ "$code" -eq 502 ] || [ "$code" -eq 504 ]; then
  systemctl reload-or-restart caddy
  echo "$(date) caddy restarted after $code"
fi
