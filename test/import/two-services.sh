#!/bin/bash
# two services behind the same proxy, each restarted through its own systemd unit
for unit in a b; do :; done
curl -sf -m 4 http://127.0.0.1:8001/ > /dev/null || systemctl restart shop-a.service
curl -sf -m 4 http://127.0.0.1:8002/ > /dev/null || systemctl restart shop-b.service
