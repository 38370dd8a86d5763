#!/usr/bin/env bash
# sift as a quic-interop-runner endpoint: the runner's conventions, so that
# sift can stand in its matrix beside quiche and quinn
# (github.com/quic-interop/quic-interop-runner, quic-network-simulator).
#
#   ROLE          client | server
#   TESTCASE      the runner's test case; exit 127 for one sift does not support
#   REQUESTS      client: space-separated https:// URLs to fetch
#   SSLKEYLOGFILE NSS key log (both roles, when set)
#   QLOGDIR       one qlog trace per connection (both roles, when set)
#
# Outside the runner's containers the folders and port can be moved:
#   WWW (/www)  DOWNLOADS (/downloads)  CERTS (/certs)  PORT (443)
#   SIFT_BIN    folder with sift-server, sift-client (default: beside this
#               script's repository's target/release, else $PATH)
#   SIFT_H3_BIN folder with sift-h3-server, sift-h3-client (http3 case)
#   SIFT_STATE  state folder (default: a fresh temporary one)
#   SERVER_IPV4, SERVER_IPV6, PREFERRED_PORT
#               connectionmigration: the server offers (and serves on)
#               SERVER_IPV4:PREFERRED_PORT and [SERVER_IPV6]:PREFERRED_PORT
#               as its preferred address (default: the runner's server
#               addresses 193.167.100.100 and fd00:cafe:cafe:100::100, port
#               4443). The runner gives the client TESTCASE=transfer here:
#               sift-client moves to a preferred address unless told not to.
set -u

role=${ROLE:-}
testcase=${TESTCASE:-}
www=${WWW:-/www}
downloads=${DOWNLOADS:-/downloads}
certs=${CERTS:-/certs}
port=${PORT:-443}
here=$(cd "$(dirname "$0")" && pwd)
bin=${SIFT_BIN:-$here/../../target/release}
h3_bin=${SIFT_H3_BIN:-$here/../target/release}
state=${SIFT_STATE:-$(mktemp -d)}

tool() {
    if [ -x "$bin/$1" ]; then echo "$bin/$1"; else command -v "$1"; fi
}

unsupported() {
    echo "sift: test case '$testcase' is not supported: $1" >&2
    exit 127
}

# The runner's network setup, when running in its endpoint image.
[ -x /setup.sh ] && /setup.sh

case "$testcase" in
    handshake | transfer | multiplexing | retry | chacha20 | keyupdate | ipv6 | \
        rebind-port | rebind-addr | connectionmigration | handshakeloss | multiconnect | \
        transferloss | handshakecorruption | transfercorruption | blackhole | \
        amplificationlimit | goodput | crosstraffic | http3) ;;
    # ECN is on by default in both roles (ECT(0), ACK-ECN counts, RFC 9000
    # §13.4): served as a transfer; the runner reads the marks from its pcap.
    ecn) ;;
    resumption | zerortt) unsupported "sift has no session resumption yet" ;;
    v2)
        # The runner's client starts in v1 and follows the server to v2
        # (RFC 9368); rustls makes a client's TLS session for one version.
        [ "$role" = server ] || unsupported "sift's client cannot follow an upgrade to QUIC v2 (rustls: a client's QUIC session is made for one version)"
        ;;
    "") echo "sift: TESTCASE is not set" >&2; exit 1 ;;
    *) unsupported "unknown to sift" ;;
esac

case "$role" in
server)
    if [ "$testcase" = http3 ]; then
        server=$h3_bin/sift-h3-server
        [ -x "$server" ] || unsupported "no sift-h3-server in $h3_bin"
        args=(--listen "[::]:$port" --root "$www")
        [ -f "$certs/cert.pem" ] && args+=(--cert "$certs/cert.pem" --key "$certs/priv.key")
        exec "$server" "${args[@]}"
    fi
    args=(--listen "[::]:$port" --root "$www" --state-dir "$state" --workers 1)
    [ -f "$certs/cert.pem" ] && args+=(--cert "$certs/cert.pem" --key "$certs/priv.key")
    [ "$testcase" = retry ] && args+=(--retry)
    # v2 first: a v1 client that offers v2 is moved there (RFC 9368).
    [ "$testcase" = v2 ] && args+=(--versions v2,v1)
    if [ "$testcase" = connectionmigration ]; then
        preferred_port=${PREFERRED_PORT:-4443}
        args+=(--preferred-address "${SERVER_IPV4:-193.167.100.100}:$preferred_port,[${SERVER_IPV6:-fd00:cafe:cafe:100::100}]:$preferred_port")
    fi
    exec "$(tool sift-server)" "${args[@]}"
    ;;
client)
    # Wait for the runner's simulator, when there is one.
    [ -x /wait-for-it.sh ] && /wait-for-it.sh sim:57832 -s -t 30
    mkdir -p "$downloads"
    # shellcheck disable=SC2206 # REQUESTS is a space-separated list.
    requests=(${REQUESTS:-})
    [ ${#requests[@]} -gt 0 ] || { echo "sift: REQUESTS is empty" >&2; exit 1; }
    if [ "$testcase" = http3 ]; then
        client=$h3_bin/sift-h3-client
        [ -x "$client" ] || unsupported "no sift-h3-client in $h3_bin"
        # The runner's certificates are its own CA's: its clients take any.
        exec "$client" "${requests[@]}" --output-dir "$downloads" --insecure
    fi
    args=(--output-dir "$downloads" --state-dir "$state")
    case "$testcase" in
        chacha20) args+=(--ciphers chacha20) ;;
        keyupdate) args+=(--key-update-every 100) ;;
    esac
    client=$(tool sift-client)
    case "$testcase" in
        # One connection per file: the runner counts the handshakes.
        handshakeloss | multiconnect | handshakecorruption)
            for url in "${requests[@]}"; do
                "$client" get "$url" "${args[@]}" || exit 1
            done
            ;;
        *) exec "$client" get "${requests[@]}" "${args[@]}" ;;
    esac
    ;;
*)
    echo "sift: ROLE must be client or server, not '$role'" >&2
    exit 1
    ;;
esac
