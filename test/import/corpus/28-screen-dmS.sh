#!/bin/bash
# discord bot in a screen session; cron: */5 * * * * /home/bot/keep.sh
if ! screen -list | grep -q "\.musicbot"; then
  cd /home/bot/MusicBot
  screen -dmS musicbot python3 run.py
fi
