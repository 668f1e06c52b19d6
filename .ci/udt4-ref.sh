#!/usr/bin/env bash
# Builds UDT 4.11's stock programs (appserver, appclient, sendfile, recvfile) from Debian's
# libudt-dev package, and our own test peer .ci/udt4/udt4peer.cpp (rendezvous and message mode,
# on the library's public API), into the directory given as $1, for the interop tests in
# conn/interop_test.go and conn/interop_udt4peer_test.go (run them with UDT4_REF_BIN=$1). Nothing of
# UDT is kept in this repository: the library and the example sources come from the Debian
# package. Exits non-zero (and says why) if it cannot.
set -euo pipefail
out=${1:?usage: udt4-ref.sh OUTDIR}
if [ ! -f /usr/lib/libudt.a ] || ! command -v g++ >/dev/null; then
  if [ "$(id -u)" != 0 ]; then echo "udt4-ref: libudt-dev/g++ missing and not root to install them"; exit 1; fi
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libudt-dev g++ >/dev/null) ||
    { echo "udt4-ref: could not install libudt-dev"; exit 1; }
fi
src=/usr/share/doc/libudt-dev/examples
mkdir -p "$out"
for p in appserver appclient sendfile recvfile; do
  if [ -f "$src/$p.cpp.gz" ]; then gunzip -c "$src/$p.cpp.gz" >"$out/$p.cpp"; else cp "$src/$p.cpp" "$out/"; fi
done
cp "$src/cc.h" "$src/test_util.h" "$out/" 2>/dev/null || true
for p in appserver appclient sendfile recvfile; do
  g++ -w -DLINUX -DAMD64 -I/usr/include/udt -I"$out" -O2 "$out/$p.cpp" -o "$out/$p" /usr/lib/libudt.a -lpthread -lm
done
g++ -w -DLINUX -DAMD64 -I/usr/include/udt -O2 "$(dirname "$0")/udt4/udt4peer.cpp" -o "$out/udt4peer" /usr/lib/libudt.a -lpthread -lm
echo "udt4-ref: built UDT 4.11 programs and udt4peer in $out"
