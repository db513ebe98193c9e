#!/bin/bash
# Home Assistant + zigbee2mqtt on a Pi. cron: */5 * * * * /home/pi/scripts/ha-watch.sh
PO_TOKEN=azGDORePK8gMaC0QOYAMyEEuzJnyUi
PO_USER=uQiRzpo4DXghDmr9QzzfQu27cmVRsG

push() {
  curl -s --form-string "token=$PO_TOKEN" --form-string "user=$PO_USER" --form-string "message=$1" \
    https://api.pushover.net/1/messages.json > /dev/null
}

HA=$(curl -s -o /dev/null -w "%{http_code}" --connect-timeout 5 --max-time 10 http://localhost:8123/manifest.json)
if [[ "$HA" == "200" ]]; then
  :
elif [[ "$HA" == "000" ]]; then
  push "Home Assistant not answering, restarting"
  docker restart homeassistant
else
  push "Home Assistant answered $HA"
fi

if ! pidof -x zigbee2mqtt >/dev/null && ! pgrep -f "node index.js" >/dev/null; then
  push "zigbee2mqtt is not running"
  sudo systemctl start zigbee2mqtt
fi
