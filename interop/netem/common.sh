# Shared by netns-up.sh, netns-down.sh and run-transfer.sh: names, addresses
# and helpers. Sourced, not run.
#
# Topology (all addresses live only inside the namespaces these scripts create):
#   with sch_netem:  sift-a [sift-a0 10.77.0.1/30] ── veth ── [sift-b0 10.77.0.2/30] sift-b
#                    tc netem on sift-a0 (forward) and sift-b0 (reverse)
#   without it:      sift-a [sift-a0 10.77.0.1/30] ── [sift-m0 10.77.0.2/30] sift-m
#                         sift-m [sift-m1 10.77.0.5/30] ── [sift-b0 10.77.0.6/30] sift-b
#                    sift-link in sift-m listens on 10.77.0.2:PORT, relays to 10.77.0.6:PORT
# Either way the client in sift-a sends to 10.77.0.2:PORT and the server in
# sift-b listens on 0.0.0.0:PORT.

NS_CLIENT=sift-a
NS_SERVER=sift-b
NS_MIDDLE=sift-m
CLIENT_IP=10.77.0.1
SERVER_IP=10.77.0.2          # what the client sends to, in both modes
STATE_DIR=/run/sift-netns
STATE_FILE=$STATE_DIR/state
RELAY_LOG=$STATE_DIR/sift-link.log

# sift extensions netem lacks: a spec using one needs sift-link.
SIFT_ONLY_OPTIONS='ber|corrupt-gemodel|corrupt-burst|corrupt-where|outage|limit-bytes'

say() { printf '%s\n' "$*" >&2; }
die() { say "$(basename "$0"): $*"; exit 1; }

require_root() {
    [ "$(id -u)" -eq 0 ] || die "must run as root: network namespaces, veth pairs and tc need CAP_NET_ADMIN (try sudo $0 $*)"
    command -v ip >/dev/null || die "the ip command (iproute2) is missing"
}

ns_exists() { ip netns list 2>/dev/null | awk '{print $1}' | grep -qx "$1"; }

# The sift-link binary: $SIFT_LINK, then PATH, then the cargo target dirs.
find_sift_link() {
    local here repo candidate
    here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
    repo=$(cd "$here/../.." && pwd)
    for candidate in "${SIFT_LINK:-}" "$(command -v sift-link 2>/dev/null || true)" \
        "${CARGO_TARGET_DIR:-$repo/target}/release/sift-link" \
        "${CARGO_TARGET_DIR:-$repo/target}/debug/sift-link" \
        "$repo/target/release/sift-link" "$repo/target/debug/sift-link"; do
        if [ -n "$candidate" ] && [ -x "$candidate" ]; then
            printf '%s\n' "$candidate"
            return 0
        fi
    done
    return 1
}

# True if the running kernel can add a netem qdisc. modprobe -n is only a
# hint (it may be absent, or the module built in): the real test is to add
# one, in a scratch namespace so nothing outside is touched.
kernel_has_netem() {
    if command -v modprobe >/dev/null && ! modprobe -n sch_netem 2>/dev/null; then
        say "modprobe -n sch_netem: no such module (checking for a built-in one)"
    fi
    local probe=sift-probe-$$ ok=1
    ip netns add "$probe" || return 1
    ip -n "$probe" link set lo up
    if ip netns exec "$probe" tc qdisc add dev lo root netem delay 1ms 2>/dev/null; then
        ok=0
    fi
    ip netns del "$probe"
    return $ok
}
