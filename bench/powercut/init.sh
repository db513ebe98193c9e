#!/bin/busybox sh
# The power-cut VM's /init (bench/powercut.ts). mode=work runs the workload on /dev/vda with tend
# from /dev/vdb and marks what it was promised in the disk's last MiBs; mode=check mounts each
# crash image the replayer makes from /dev/vdc (base) and /dev/vdd (the write log), the points listed
# on /dev/vda, and prints what tend would find. Kernel command line: mode=work|check fs=ext4|f2fs opts=... rounds=N
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for m in virtio_ring virtio virtio_pci_legacy_dev virtio_pci_modern_dev virtio_pci virtio_blk loop crc16 mbcache \
  jbd2 crc32c_generic crc32_generic ext4 lz4_compress lz4hc_compress zstd_compress f2fs; do
  insmod /lib/modules/$m.ko || echo "insmod $m failed" >&2
done
for arg in $(cat /proc/cmdline); do case $arg in mode=*|fs=*|opts=*|rounds=*) eval "$arg";; esac; done
MARKS=126976 # 62 MiB in 512-byte sectors: after the file system, before the disk's end
mkdir -p /t /lib64 /lib/x86_64-linux-gnu
mount -o ro /dev/vdb /t && ln -sf /t/lib64/ld-linux-x86-64.so.2 /lib64/ &&
  for f in /t/lib/x86_64-linux-gnu/*; do ln -sf "$f" /lib/x86_64-linux-gnu/; done
ip link set lo up
seq=0
# A mark: one sector, written and flushed before the next command: it is in the log after every
# write the command's fsyncs made durable.
mark() {
  seq=$((seq + 1))
  printf 'MARK %s %s\n' "$seq" "$*" | dd of=/dev/vda bs=512 seek=$((MARKS + seq)) count=1 conv=sync,notrunc,fsync 2>/dev/null
}

cat > /tmp/tend.toml <<TOML
[watchdog]
state_dir = "/mnt/state"
[notify]
url = "http://127.0.0.1:8080/topic"
retries = 0
timeout = "2s"
min_interval = "1s"
[[service]]
name = "svc"
pidfile = "svc.pid"
grace = "0s"
cooldown = "0s"
# Killed every round on purpose: never given up (a given-up service stays down after a reboot, by design).
max_restarts = 1000
[service.check]
process = true
[service.restart]
spawn = ["sleep", "100000"]
TOML
export TEND_CONFIG=/tmp/tend.toml HOME=/tmp

if [ "$mode" = work ]; then
  mount -t "$fs" -o "$opts" /dev/vda /mnt || { echo "MOUNT FAILED"; poweroff -f; }
  mkdir -p /mnt/state
  i=0
  while [ $i -lt "$rounds" ]; do
    i=$((i + 1))
    [ -s /mnt/state/svc.pid ] && kill -9 "$(cat /mnt/state/svc.pid)" 2>/dev/null
    /t/tend watchdog >/dev/null 2>&1
    mark "pass $i pid $(cat /mnt/state/svc.pid 2>/dev/null)"
    /t/tend notify "m$i" >/dev/null 2>&1
    mark "spooled m$i"
    if [ $((i % 3)) = 0 ]; then
      echo "$i" > /tmp/round
      # The receiver: answers 200 to each request, marking what it was given first.
      nc -ll -p 8080 -e /bin/receiver.sh &
      receiver=$!
      sleep 0.2
      /t/tend notify --flush >/dev/null 2>&1
      mark "flushed $i"
      kill $receiver 2>/dev/null
    fi
  done
  mark "end"
  echo "WORK DONE $seq"
  sync
  poweroff -f
fi

if [ "$mode" = check ]; then
  mkdir -p /scratch && mount -t tmpfs -o size=200m tmpfs /scratch
  # The crash points: a list on /dev/vda (the kernel command line is too short for 250 of them).
  for point in $(tr -d '\000' < /dev/vda); do
    /bin/replay /dev/vdc /dev/vdd /scratch/disk "$point" >/dev/null
    dev=$(losetup -f) && losetup "$dev" /scratch/disk
    echo "POINT $point"
    if mount -t "$fs" "$dev" /mnt 2>/dev/null; then
      s=/mnt/state
      printf 'PIDFILE %s\n' "$( [ -e $s/svc.pid ] && (tr -cd '0-9' < $s/svc.pid; printf ' %s' "$(wc -c < $s/svc.pid)") || echo missing)"
      printf 'STATE %s\n' "$( [ -e $s/services/svc.json ] && wc -c < $s/services/svc.json || echo missing)"
      head -c 200 $s/services/svc.json 2>/dev/null | tr -d '\n' | sed 's/^/STATEHEAD /'; echo
      if [ -e $s/notify-spool.jsonl ]; then sed 's/^/SPOOL /' $s/notify-spool.jsonl; fi
      # Power back: the first pass after the cut (a new boot). Is the service running after it?
      if [ -d $s ]; then
        timeout 90 /t/tend watchdog > /tmp/pass.out 2>&1
        pid=$(tr -cd '0-9' < $s/svc.pid 2>/dev/null)
        if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
          echo "UP yes"
          kill -9 "$pid"
        else
          echo "UP no"
          sed 's/^/PASSOUT /' /tmp/pass.out | head -n 6
        fi
      fi
      umount /mnt
    else
      echo "UNMOUNTABLE"
    fi
    dd if="$dev" bs=512 skip=$MARKS count=2048 2>/dev/null | tr -d '\000' | grep '^MARK' | tail -n 400
    losetup -d "$dev"
    echo "END $point"
  done
  echo "CHECK DONE"
  poweroff -f
fi
