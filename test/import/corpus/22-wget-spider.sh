#!/bin/sh
# jellyfin: */10 * * * * /home/media/bin/jf-watch.sh
if ! wget -q --spider -T 20 http://127.0.0.1:8096/health; then
  echo "jellyfin not answering, restarting" | mail -s "jellyfin restarted" media@example.net
  sudo /bin/systemctl restart jellyfin.service
fi
