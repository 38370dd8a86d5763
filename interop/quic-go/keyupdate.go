package main

import _ "unsafe" // for go:linkname

// quic-go updates its 1-RTT keys on its own once 100 packets went either
// way under the first keys (internal/handshake's FirstKeyUpdateInterval;
// then every 100,000), and offers no call to ask for one. Against a
// server that also counts to 100, which side starts first is a race;
// quic-go's own interop client sets this variable for the keyupdate
// case, and this peer does the same through the linker (the package is
// internal to quic-go, so it cannot be imported).
//
//go:linkname firstKeyUpdateInterval github.com/quic-go/quic-go/internal/handshake.FirstKeyUpdateInterval
var firstKeyUpdateInterval uint64

// clientKeyUpdateAfter is the packets a --key-update client counts under
// its first 1-RTT keys before it updates them: fewer than any server's
// 100, so the client starts it (matrix/stacks.rs updates sift's client
// every 16 packets).
const clientKeyUpdateAfter = 16

func updateKeysEarly() {
	firstKeyUpdateInterval = clientKeyUpdateAfter
}
