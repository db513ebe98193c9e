#!/bin/bash
# The tunnel is up when its process is.
if ! pgrep -f "ngrok http" > /dev/null; then
  nohup ngrok http 8080 > ~/ngrok.log 2>&1 &
  curl -sf -d "ngrok restarted" https://ntfy.sh/my-topic
fi
