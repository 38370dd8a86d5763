#!/bin/sh
# after.sh EXP PATTERN...: rerun the before sweep's scenarios matching a pattern with the fixed binary
exp=$1; shift
for pat in "$@"; do
  for d in /tmp/cr/before/$exp/*$pat*; do
    n=$(basename $d)
    [ -f /tmp/cr/after/$exp/$n/results.json ] && continue
    [ -f $d/results.json ] || continue
    nice -n 19 /tmp/cr/sift-lab-after run $d/scenario.toml --out /tmp/cr/after/$exp/$n > /dev/null 2>&1
  done
done
