#!/bin/bash
cd "$(dirname "$0")/../../.."  # the repository root (the lead's checkout when this ran)
out=$1
for rep in 1 2 3; do for kind in sift quinn; do for bindir in /tmp/lead-before /tmp/lead-after; do
  load=$(cut -d' ' -f1 /proc/loadavg)
  line=$(benches/many_downloads.sh --server $kind --bin $bindir --peer-bin $bindir --load /tmp/lead-before/many_gets 2>&1 | tail -1)
  echo "rep=$rep bin=$bindir load1=$load $line" >> $out
done; done; done
