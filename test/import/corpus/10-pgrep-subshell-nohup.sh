#!/bin/bash
# restart the node app when it is gone (cron, every minute)
APP_DIR=/srv/shop
pgrep -f "node /srv/shop/server.js" > /dev/null || (cd $APP_DIR && nohup node /srv/shop/server.js > /var/log/shop.log 2>&1 &)
