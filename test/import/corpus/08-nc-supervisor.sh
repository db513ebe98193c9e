#!/bin/sh
# redis queue worker watchdog (*/5 in root's crontab)
nc -z -w 5 127.0.0.1 6379 || supervisorctl restart queue-worker
nc -z -w 5 127.0.0.1 11211 || echo "memcached down" | mail -s "memcached down" root@localhost
