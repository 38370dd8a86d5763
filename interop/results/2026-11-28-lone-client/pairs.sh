#!/bin/bash
# pairs.sh BASE_BIN NEW_BIN N: N interleaved pairs of one 1 GiB loopback
# download over hq-interop (../2026-11-27-file-in-place/run_hq_stat.sh, which
# serves /tmp/lbp/root/file), the file warmed before each.
BASE=$1; NEW=$2; N=${3:-6}; HERE=$(dirname "$0")
for i in $(seq 1 $N); do
  cat /tmp/lbp/root/file > /dev/null; bash $HERE/../2026-11-27-file-in-place/run_hq_stat.sh $BASE base-$i
  cat /tmp/lbp/root/file > /dev/null; bash $HERE/../2026-11-27-file-in-place/run_hq_stat.sh $NEW lone-$i
done
