#!/bin/bash
status=$(curl -s -o /dev/null -w '%{http_code}' -m 5 http://localhost:5000/)
if [ "$status" != 200 ]; then
  tmux respawn-pane -k -t work:api "cd ~/api && python3 app.py"
fi
