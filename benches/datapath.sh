#!/usr/bin/env bash
# The datapath table of issue 17 in one command: one download of 1 GiB over
# loopback, no impairment, goodput and CPU seconds (user + system of client
# and server together) per GiB, quiche beside sift with TLS and corruption
# notices on (the default) and off, and under Null protection.
#
#   benches/datapath.sh [--reps 5] [--bytes 1GiB] [--out DIR] [--sift-only]
#                       [--baseline BINDIR] [--qlog]
#
# With cmake and libclang present (quiche builds BoringSSL), this is
# `interop/compare.sh --only loopback` and quiche's row is measured in the
# same run. Without them it says so and measures sift's rows alone, the same
# way (fresh server, 1 GiB file, client hashes and discards into /dev/null);
# --sift-only does that on purpose, for a quick look at a branch.
# --baseline BINDIR adds TLS rows measured with the sift-server and
# sift-client in BINDIR (another build, e.g. main's), and --qlog a TLS row
# with qlog traces written on both ends; each repetition runs every row in
# turn, so the rows share the machine's state (sift's rows only).
set -euo pipefail

reps=5 bytes=1GiB out="" sift_only=0 baseline="" qlog=0
root="$(cd "$(dirname "$0")/.." && pwd)"
while [ $# -gt 0 ]; do
    case "$1" in
        --reps) reps=$2; shift 2 ;;
        --bytes) bytes=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --sift-only) sift_only=1; shift ;;
        --baseline) baseline=$2; sift_only=1; shift 2 ;;
        --qlog) qlog=1; sift_only=1; shift ;;
        -h|--help) sed -n 2,19p "$0"; exit 0 ;;
        *) echo "datapath.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
out=${out:-$root/target/datapath}

have_libclang() {
    compgen -G '/usr/lib/llvm-*/lib/libclang.so*' >/dev/null \
        || compgen -G '/usr/lib/*/libclang-[0-9]*.so*' >/dev/null
}

if [ "$sift_only" = 0 ] && command -v cmake >/dev/null 2>&1 && have_libclang; then
    exec "$root/interop/compare.sh" --only loopback --reps "$reps" \
        --quiche-cc cubic --sift-cc cubic --loopback-bytes "$bytes" --out "$out"
fi

[ "$sift_only" = 1 ] || echo "datapath.sh: cmake or libclang missing, so quiche cannot be built: sift's rows only" >&2
case "$bytes" in
    *GiB) size=$(( ${bytes%GiB} * 1024 * 1024 * 1024 )) ;;
    *MiB) size=$(( ${bytes%MiB} * 1024 * 1024 )) ;;
    *) size=$bytes ;;
esac
(cd "$root" && cargo build --release --locked -q -p sift-bin --bin sift-server --bin sift-client)
bin="$root/target/release"
work=$(mktemp -d /tmp/sift-datapath.XXXXXX)
trap 'pkill -P $$ 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir -p "$work/root" "$out"
head -c "$size" /dev/urandom > "$work/root/f.bin"
want=$(sha256sum "$work/root/f.bin" | cut -d' ' -f1)
tick=$(getconf CLK_TCK)
cpu_of() { awk -v t="$tick" '{ sub(/.*\) /, ""); print ($12 + $13) / t }' "$1"; }

# One download; prints "goodput_gbps cpu_s_per_gib". A third argument
# names the binaries' directory (default: this build); a fourth, "qlog",
# has both ends write qlog traces.
run_once() {
    local protection=$1 notices=$2 bin=${3:-$bin} trace=${4:-} state="$work/state-$RANDOM"
    local extra=()
    [ "$protection" = null ] && extra+=(--insecure-null-crypto)
    mkdir -p "$state"
    [ "$trace" = qlog ] && extra+=(--qlog "$state/qlog")
    "$bin/sift-server" --listen 127.0.0.1:0 --root "$work/root" --state-dir "$state" \
        --workers 1 --corruption-notices "$notices" "${extra[@]}" > "$state/server.log" 2>&1 &
    local server=$!
    for _ in $(seq 100); do grep -q '^listening' "$state/server.log" && break; sleep 0.05; done
    local address pin
    address=$(grep -o 'listening on [^ ]*' "$state/server.log" | cut -d' ' -f3)
    pin=$(grep -o 'SHA256:[0-9a-f]*' "$state/server.log" | head -1)
    local pins=()
    [ -n "$pin" ] && pins+=(--pin "$pin")
    /usr/bin/time -f '%U %S' -o "$state/client.time" "$bin/sift-client" --json \
        --corruption-notices "$notices" "${extra[@]}" "${pins[@]}" \
        get "sift://$address/f.bin" -o /dev/null > "$state/client.json" 2> "$state/client.err" \
        || { echo "datapath.sh: the download failed: $(tail -1 "$state/client.err")" >&2; exit 1; }
    local server_cpu
    server_cpu=$(cpu_of "/proc/$server/stat")
    kill "$server"; wait "$server" 2>/dev/null || true
    grep -q "\"sha256\":\"$want\"" "$state/client.json" || { echo "datapath.sh: download differs from the source" >&2; exit 1; }
    awk -v size="$size" -v server="$server_cpu" '
        NR == FNR { client = $1 + $2; next }
        { match($0, /"goodput_bps":[0-9.e+]*/); g = substr($0, RSTART + 14, RLENGTH - 14) }
        END { printf "%.2f %.2f\n", g / 1e9, (client + server) / (size / 1073741824) }
    ' "$state/client.time" "$state/client.json"
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# Rows: "label protection notices bindir trace".
rows=("sift tls on $bin -" "sift tls off $bin -" "sift null on $bin -" "sift null off $bin -")
if [ -n "$baseline" ]; then
    baseline=$(cd "$baseline" && pwd)
    rows=("baseline tls on $baseline -" "sift tls on $bin -" "baseline tls off $baseline -" "sift tls off $bin -")
fi
[ "$qlog" = 1 ] && rows+=("sift+qlog tls on $bin qlog")
for i in "${!rows[@]}"; do : > "$work/runs-$i"; done
for rep in $(seq "$reps"); do
    for i in "${!rows[@]}"; do
        set -- ${rows[$i]}
        line=$(run_once "$2" "$3" "$4" "$5")
        echo "$1 $2 notices $3 rep $rep: ${line% *} Gb/s, ${line#* } CPU s/GiB" >&2
        echo "$line" >> "$work/runs-$i"
        rm -rf "$work"/state-*/qlog
    done
done
{
    echo "| stack | protection | notices | goodput (Gb/s) | CPU s/GiB |"
    echo "|---|---|---|---|---|"
    for i in "${!rows[@]}"; do
        set -- ${rows[$i]}
        echo "| $1 | $2 | $3 | $(cut -d' ' -f1 "$work/runs-$i" | median) | $(cut -d' ' -f2 "$work/runs-$i" | median) |"
    done
} | tee "$out/datapath.md"
echo "written to $out/datapath.md" >&2
