#!/bin/bash
# No pkill -f here: tend safe-kill by the pidfile it wrote.
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 20 http://127.0.0.1:8080/health)
if [ "$code" != 200 ]; then
  tend safe-kill --escalate 5s app
  curl -fsS -d "app restarted (HTTP $code)" https://ntfy.sh/my-topic > /dev/null || echo "notify failed" >&2
fi
