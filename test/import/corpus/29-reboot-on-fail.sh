#!/bin/bash
# Raspberry Pi: reboot when the network is gone (*/10 * * * * /usr/local/bin/netcheck.sh)
if ! ping -c 3 -W 5 192.168.1.1 > /dev/null; then
  if ! curl -sf -m 10 http://127.0.0.1:8123/ > /dev/null; then
    /sbin/reboot
  fi
fi
