#!/bin/sh
# build/tools/alertmanager: Debian's Alertmanager (alertmanager.bin beside it), shown its templates
# (share/ beside it) at /usr/share/prometheus/alertmanager, where it reads them, through an overlay
# in a mount namespace of its own: nothing is written outside the checkout. Installed ones are used
# as they are.
here=$(dirname "$(readlink -f "$0")")
if [ -e /usr/share/prometheus/alertmanager/default.tmpl ]; then exec "$here/alertmanager.bin" "$@"; fi
exec unshare -m sh -c 'mount -t overlay overlay -o "lowerdir=$1/share:/usr/share" /usr/share && shift && exec "$@"' \
  sh "$here" "$here/alertmanager.bin" "$@"
