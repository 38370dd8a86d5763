#!/usr/bin/env bash
# The pre-fix bench path (rate/queue/loss on client → server, data over a bare 300 ms delay):
# sift cubic base vs new, and quiche, interleaved; first connections only.
W=${W:-.}  # the repository root (the sat-first checkout when this ran)
for i in 1 2 3; do
  for v in base new; do
    mkdir -p /tmp/satfirst/old/$v-$i
    TRACE_OUT=/tmp/satfirst/old/$v-$i ONLY=sift REPEAT=1 bash /tmp/satfirst/oldpath.sh --reps 1 --mb 20 --sift-cc cubic --bin /tmp/satfirst/$v --peer-bin $W/interop/target/release | grep '^sift' | sed "s/^/$v /"
  done
  mkdir -p /tmp/satfirst/old/q-$i
  TRACE_OUT=/tmp/satfirst/old/q-$i ONLY=quiche REPEAT=1 bash /tmp/satfirst/oldpath.sh --reps 1 --mb 20 --bin /tmp/satfirst/base --peer-bin $W/interop/target/release | grep '^quiche'
done
uptime
