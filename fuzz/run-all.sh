#!/usr/bin/env bash
# Builds every cargo-fuzz target of sift and runs each for N seconds.
#
#   fuzz/run-all.sh [N] [TARGET...]     N defaults to 60; targets default to
#                                        every file in fuzz/fuzz_targets/
#   FUZZ_PARALLEL=2 fuzz/run-all.sh 300  runs two targets at a time
#
# Needs cargo-fuzz (`cargo install cargo-fuzz`) and a nightly toolchain; with
# no nightly installed it falls back to RUSTC_BOOTSTRAP=1 on stable.
# Each run starts from the checked-in seeds (fuzz/corpus/TARGET, never
# written to) plus a working corpus kept in fuzz/target/corpus-work/TARGET
# (ignored by git), with debug assertions on, -rss_limit_mb=2048 and
# -timeout=10. Prints executions and coverage per target from libFuzzer's
# final lines; logs go to fuzz/target/logs/TARGET.log and crashing inputs to
# fuzz/artifacts/TARGET/. Exits non-zero if any target crashed, leaked, timed
# out or failed to build.
set -u -o pipefail

seconds=${1:-60}
shift || true
case "$seconds" in
'' | *[!0-9]*)
    echo "run-all.sh: N must be a whole number of seconds, got '$seconds'" >&2
    exit 2
    ;;
esac
parallel=${FUZZ_PARALLEL:-1}

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo" || exit 2

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "run-all.sh: cargo-fuzz is missing; install it with 'cargo install cargo-fuzz'" >&2
    exit 2
fi
if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
    fuzz=(cargo +nightly fuzz)
else
    echo "run-all.sh: no nightly toolchain; using RUSTC_BOOTSTRAP=1 on the default one" >&2
    fuzz=(env RUSTC_BOOTSTRAP=1 cargo fuzz)
fi

if [ "$#" -gt 0 ]; then
    targets=("$@")
else
    targets=()
    for file in fuzz/fuzz_targets/*.rs; do
        targets+=("$(basename "$file" .rs)")
    done
fi

echo "run-all.sh: building ${#targets[@]} targets" >&2
for target in "${targets[@]}"; do
    if ! "${fuzz[@]}" build -a "$target"; then
        echo "run-all.sh: building $target failed" >&2
        exit 1
    fi
done

mkdir -p fuzz/target/logs
run_one() {
    local target=$1
    local work="fuzz/target/corpus-work/$target"
    local seeds="fuzz/corpus/$target"
    mkdir -p "$work" "$seeds" "fuzz/artifacts/$target"
    "${fuzz[@]}" run -a "$target" "$work" "$seeds" -- \
        -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
        -print_final_stats=1 >"fuzz/target/logs/$target.log" 2>&1
    echo $? >"fuzz/target/logs/$target.status"
}

summarise() {
    local target=$1
    local log="fuzz/target/logs/$target.log"
    local status
    status=$(cat "fuzz/target/logs/$target.status" 2>/dev/null || echo 1)
    local execs cov ft verdict
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    # The last status line, e.g. "#123 DONE cov: 456 ft: 789 corp: ...".
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
    ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
    if [ "$status" = 0 ]; then
        verdict=ok
    else
        verdict="FAILED (exit $status; see $log)"
    fi
    printf '%-24s execs %-12s cov %-7s ft %-7s %s\n' \
        "$target" "${execs:-?}" "${cov:-?}" "${ft:-?}" "$verdict"
    [ "$status" = 0 ]
}

index=0
while [ "$index" -lt "${#targets[@]}" ]; do
    batch=("${targets[@]:index:parallel}")
    for target in "${batch[@]}"; do
        echo "run-all.sh: fuzzing $target for ${seconds}s" >&2
        run_one "$target" &
    done
    wait
    index=$((index + parallel))
done

failed=0
for target in "${targets[@]}"; do
    summarise "$target" || failed=1
done
exit "$failed"
