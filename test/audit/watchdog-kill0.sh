#!/bin/sh
PIDFILE=/run/blog.pid
if kill -0 "$(cat $PIDFILE)" 2> /dev/null; then
  echo "blog ok"
else
  /usr/local/bin/blog --daemon
fi
