#!/bin/bash
# Not a watchdog: a nightly backup. Nothing to map.
tar czf /var/backups/home.tgz /home
find /var/backups -mtime +7 -delete
