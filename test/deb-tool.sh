#!/bin/sh
# deb-tool.sh PACKAGE INSIDE OUTPUT [FILE...]: one binary out of a Debian package, unpacked, not
# installed (no service is started). FILEs of the package under usr/share that the binary reads
# from fixed paths (its templates) go beside it, under share/ (the checkout's build/, nothing
# outside it): its wrapper shows them to it at their paths (see the Makefile's alertmanager).
set -eu
package=$1 inside=$2 output=$3
shift 3
work=$(dirname "$output")/deb-$package
rm -rf "$work" && mkdir -p "$work"
(cd "$work" && (apt-get download "$package" >/dev/null 2>&1 || (apt-get update -qq && apt-get download "$package" >/dev/null)))
dpkg -x "$work"/"$package"_*.deb "$work/x"
for file in "$@"; do
  beside=$(dirname "$output")/share/${file#usr/share/}
  mkdir -p "$(dirname "$beside")" && cp "$work/x/$file" "$beside"
done
cp "$work/x/$inside" "$output"
rm -rf "$work"
