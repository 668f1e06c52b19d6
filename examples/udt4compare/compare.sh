#!/usr/bin/env bash
# Loopback bulk transfer, side by side in one run: the UDT 4.11 C++ reference (appclient →
# appserver, built from Debian's libudt-dev by .ci/udt4-ref.sh) and udtperf's self mode (udt with
# the default Config — default pacer backend and controller — and kernel TCP; both ends of every
# udtperf row hash the stream with SHA-256, appclient sends a constant buffer and hashes nothing).
# The two alternate ROUNDS times, so that load from others on a shared machine drifts over both
# alike; the summary gives the medians and the ratios udt/UDT4 and udt/TCP.
#
#   examples/udt4compare/compare.sh [-t SECONDS] [-n ROUNDS]     (defaults: 10 s, 3 rounds)
#
# UDT4's rate is appclient's own perfmon figure (mbpsSendRate: payload sent per second,
# retransmissions included; loopback loses almost nothing), averaged over its 1-second lines
# after the first (connection start-up). udtperf's is goodput: bytes delivered and verified.
# Needs g++ and libudt-dev (installed with apt-get when run as root), and Go.
set -euo pipefail
secs=10
rounds=3
while getopts "t:n:h" opt; do
  case $opt in
    t) secs=$OPTARG ;;
    n) rounds=$OPTARG ;;
    *) sed -n '2,15p' "$0"; exit 2 ;;
  esac
done
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

bash "$root/.ci/udt4-ref.sh" "$work/ref" >/dev/null
(cd "$root" && go build -o "$work/udtperf" ./examples/udtperf)

# udt4 prints the average of appclient's perfmon SendRate lines after the first, in Mbit/s.
udt4() {
  local port
  port=$(( (RANDOM % 20000) + 30000 ))
  "$work/ref/appserver" "$port" >"$work/appserver.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 50); do grep -q "server is ready" "$work/appserver.log" 2>/dev/null && break; sleep 0.1; done
  timeout "$((secs + 1))" "$work/ref/appclient" 127.0.0.1 "$port" >"$work/appclient.log" 2>&1 || true
  kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
  awk '$1 ~ /^[0-9.]+$/ && NF == 6 { n++; if (n > 1) { s += $1; k++ } } END { if (k) printf "%.0f\n", s / k; else print "nan" }' "$work/appclient.log"
}

# udtperf prints "udt tcp" goodputs in Mbit/s from one self-mode run.
udtperf() {
  "$work/udtperf" -proto udt,tcp -pacer hybrid -time "${secs}s" -interval 0 -no-progress 2>"$work/udtperf.err" |
    awk '$1 == "udt/hybrid" { u = $2 } $1 ~ /^tcp/ { t = $2 } END { print u, t }'
}

median() { sort -g | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

echo "loopback, $rounds rounds of $secs s each; $(uptime | sed 's/.*load average/load average/')"
printf '%-6s %12s %12s %12s\n' round "UDT4 Mbit/s" "udt Mbit/s" "TCP Mbit/s"
: >"$work/rows"
for r in $(seq "$rounds"); do
  a=$(udt4)
  read -r u t < <(udtperf)
  printf '%-6s %12s %12s %12s\n' "$r" "$a" "${u:-fail}" "${t:-fail}"
  echo "$a ${u:-nan} ${t:-nan}" >>"$work/rows"
done
ma=$(awk '{ print $1 }' "$work/rows" | median)
mu=$(awk '{ print $2 }' "$work/rows" | median)
mt=$(awk '{ print $3 }' "$work/rows" | median)
printf '%-6s %12s %12s %12s\n' median "$ma" "$mu" "$mt"
awk -v a="$ma" -v u="$mu" -v t="$mt" 'BEGIN { printf "udt/UDT4 %.2f×   udt/TCP %.2f×   (targets ≥ 1.5× and ≥ 0.5×)\n", u / a, u / t }'
echo "after: $(uptime | sed 's/.*load average/load average/')"
