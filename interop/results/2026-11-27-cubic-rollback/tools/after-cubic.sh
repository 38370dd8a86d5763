#!/bin/sh
# after-cubic.sh EXP: rerun every scenario of the before sweep that has a CUBIC flow with the fixed binary
exp=$1
for d in /tmp/cr/before/$exp/*/; do
  n=$(basename $d)
  [ -f $d/results.json ] || continue
  grep -q 'name = "cubic"' $d/scenario.toml || continue
  [ -f /tmp/cr/after/$exp/$n/results.json ] && continue
  nice -n 19 /tmp/cr/sift-lab-after run $d/scenario.toml --out /tmp/cr/after/$exp/$n > /dev/null 2>&1
done
