#!/bin/bash
# many.sh BASE_BIN NEW_BIN N: N interleaved runs of 1000 concurrent 1 MB
# downloads over hq-interop from one sift-server (benches/many_downloads.sh).
BASE=$1; NEW=$2; N=${3:-4}; ROOT=$(git rev-parse --show-toplevel)
for i in $(seq 1 $N); do
  for v in base:$BASE lone:$NEW; do
    echo -n "${v%%:*}-$i "
    bash $ROOT/benches/many_downloads.sh --server sift-hq --bin ${v#*:} --load /tmp/lbp/many_gets_now 2>&1 | grep "server="
  done
done
