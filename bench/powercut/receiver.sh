#!/bin/busybox sh
# One HTTP request on stdin (nc -e): what it delivered (the body's message, the flush round) is
# marked on the disk, flushed, before the 200 goes back.
length=0
while IFS= read -r line; do
  line=$(printf '%s' "$line" | tr -d '\r')
  [ -z "$line" ] && break
  case $line in [Cc]ontent-[Ll]ength:*) length=${line#*: } ;; esac
done
body=$(dd bs=1 count="$length" 2>/dev/null | head -n 1)
n=$(($(cat /tmp/received 2>/dev/null || echo 0) + 1))
echo $n > /tmp/received
printf 'MARK R%s delivered %s round %s\n' "$n" "$body" "$(cat /tmp/round)" |
  dd of=/dev/vda bs=512 seek=$((126976 + 1024 + n)) count=1 conv=sync,notrunc,fsync 2>/dev/null
printf 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok'
