#!/bin/bash
# */5 * * * * /home/pi/domoticz_watchdog.sh
function message() {
    echo "Watchdog: $1"
}

if curl --output /dev/null --silent --head --fail --max-time 15 "http://localhost:8080"
then
    echo "Watchdog: Domoticz is running"
else
    message "Domoticz offline!!! Trying to start..."
    # doing restart is safer than start
    service domoticz.sh restart
    sleep 20
    if curl --output /dev/null --silent --head --fail --max-time 15 "http://localhost:8080"
    then
        message "Domoticz is running back again!"
    fi
fi
