#!/bin/bash
URL=http://127.0.0.1:8081/ready
if ! curl -sf --max-time 15 "$URL" > /dev/null; then
  systemctl restart api.service
fi
