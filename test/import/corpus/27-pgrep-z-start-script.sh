#!/bin/bash
# valheim: start it again when the process is gone
if [ -z "$(pgrep -f valheim_server.x86_64)" ]; then
  echo "$(date) valheim not running, starting" >> /home/steam/watch.log
  /home/steam/valheim/start_server.sh
fi
