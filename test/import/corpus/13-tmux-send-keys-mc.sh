#!/bin/bash
# Minecraft server in tmux window mc:0; cron every 5 minutes: */5 * * * * ~/mc/check.sh
PORT=25565
if ! nc -z -w 3 localhost $PORT; then
  tmux send-keys -t mc:0 C-c
  sleep 5
  tmux send-keys -t mc:0 "cd ~/mc && java -Xmx4G -jar server.jar nogui" Enter
fi
