#!/bin/sh
# Termux: check sshd and the syncthing GUI, restart through termux-services.
# crontab -e:  */10 * * * * $HOME/bin/check.sh
if ! nc -z 127.0.0.1 8022; then
  sv restart sshd
fi
code=$(curl -s -o /dev/null -w '%{http_code}' -m 10 http://127.0.0.1:8384/rest/noauth/health)
[ "$code" = "200" ] || sv restart syncthing
