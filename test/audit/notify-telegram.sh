#!/bin/sh
# Called with a message: sends it to the phone.
curl -s "https://api.telegram.org/bot$TOKEN/sendMessage" -d chat_id="$CHAT" -d text="$1"
