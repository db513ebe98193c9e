#!/bin/bash
# service_monitor.sh: keep nginx up, tell Telegram when it had to be restarted.
# crontab: */2 * * * * /usr/local/bin/service_monitor.sh >> /var/log/service_monitor.log 2>&1

SERVICE="nginx"
BOT_TOKEN="123456:ABCdefGhIJKlmNoPQRsTuvWXyz"
CHAT_ID="-1001234567890"

send_telegram_message() {
    MESSAGE="🚨 $SERVICE is down on $(hostname)! Attempting restart..."
    curl -s -X POST "https://api.telegram.org/bot$BOT_TOKEN/sendMessage" \
        -d "chat_id=$CHAT_ID" \
        -d "text=$MESSAGE" > /dev/null
}

if systemctl is-active --quiet "$SERVICE"; then
    echo "$(date): $SERVICE is running."
else
    echo "$(date): $SERVICE is NOT running. Restarting..."
    send_telegram_message
    systemctl restart "$SERVICE"
    if systemctl is-active --quiet "$SERVICE"; then
        echo "$(date): Successfully restarted $SERVICE."
    else
        echo "$(date): Failed to restart $SERVICE!"
    fi
fi
