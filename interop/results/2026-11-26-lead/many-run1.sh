#!/bin/bash
# usage: many.sh OUT BINDIR kinds...
cd "$(dirname "$0")/../../.."  # the repository root (the lead's checkout when this ran)
out=$1; bindir=$2; shift 2
for rep in 1 2 3; do for kind in "$@"; do
  rb=$(awk '/^Udp:/ && $2 ~ /^[0-9]/ {print $6}' /proc/net/snmp)
  load=$(cut -d' ' -f1 /proc/loadavg)
  line=$(benches/many_downloads.sh --server $kind --bin $bindir --load /tmp/lead-before/many_gets 2>&1 | tail -1)
  ra=$(awk '/^Udp:/ && $2 ~ /^[0-9]/ {print $6}' /proc/net/snmp)
  echo "rep=$rep bin=$bindir load1=$load snmp_rcvbuf_errors_delta=$((ra-rb)) $line" >> $out
done; done
