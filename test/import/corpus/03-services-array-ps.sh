#!/bin/bash
# Services to check
SERVICES=('php8.2-fpm' 'mariadb' 'redis-server')
EMAIL="admin@example.com"
HOST=$HOSTNAME
STATUS="Service-Status {$HOSTNAME}"

for SERVICE in "${SERVICES[@]}"; do
        var=`ps -Af | grep -v grep | grep ${SERVICE} | awk '{ print $2 }'`
        echo "1) ${SERVICE} has a PID of -> $var "
        if [ -z "${var}" ]; then
                systemctl restart ${SERVICE}
                var=`ps -Af | grep -v grep | grep ${SERVICE} | awk '{ print $2 }'`
                if [ -z "${var}" ]; then
                       echo "${HOST}: ${SERVICE} can't be restarted!"  | mail -s "$STATUS" $EMAIL
                else
                       echo "${HOST}: ${SERVICE} has been restarted OK."  | mail -s "$STATUS" $EMAIL
                fi
        else
                echo "${SERVICE} is already ACTIVE."
        fi
done
