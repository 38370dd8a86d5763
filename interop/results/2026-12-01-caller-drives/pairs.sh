#!/bin/bash
# usage: pairs.sh OLD_BINDIR NEW_BINDIR N: N interleaved pairs of one 1 GiB
# hq-interop download on loopback, the old build first in each pair
# (../2026-11-27-file-in-place/run_hq_stat.sh; the file at /tmp/lbp/root/file).
RUN=$(dirname "$0")/../2026-11-27-file-in-place/run_hq_stat.sh
for i in $(seq 1 "$3"); do
  bash "$RUN" "$1" old$i
  bash "$RUN" "$2" new$i
done
