#!/bin/bash
# Node monitor: tell Telegram, restart the node when its RPC does not answer. Run under screen.
token="987654:ZZtokenZZ"
chat_id="424242"
tg_api="https://api.telegram.org/bot${token}/sendMessage?chat_id=${chat_id}"
while [ "true" ]
    do
        status=`curl -s http://localhost:26657/status | grep -E catching_up`
        echo "${status}"
        if ! curl -s --max-time 10 http://localhost:26657/status > /dev/null
        then
            crash_msg="node is not running. Restarting now"
            curl -s "${tg_api}" --data-urlencode "text=${crash_msg}"
            sudo systemctl restart cosmovisor
        fi
        sleep 1800
    done
