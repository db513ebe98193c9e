#!/bin/bash
# keepalive for the telegram bot: */5 * * * * /opt/bot/keepalive.sh
PIDFILE=/opt/bot/bot.pid
LOGFILE=/opt/bot/bot.log

if [ -f "$PIDFILE" ] && kill -0 $(cat "$PIDFILE") 2>/dev/null; then
    exit 0
fi

echo "$(date) bot not running, starting" >> "$LOGFILE"
cd /opt/bot
nohup python3 bot.py >> "$LOGFILE" 2>&1 &
echo $! > "$PIDFILE"
