#!/bin/bash
# healthy when the status endpoint says ok
if curl -s --max-time 10 http://127.0.0.1:7070/status | grep -q '"status":"ok"'; then
  exit 0
else
  systemctl restart worker.service
fi
