#!/bin/bash
HOST=127.0.0.1
PORT=5432
if ! timeout 3 bash -c "</dev/tcp/$HOST/$PORT" 2>/dev/null; then
  echo "postgres not accepting connections on $PORT"
  systemctl restart postgresql@15-main
fi
