package main

import (
	"crypto/tls"
	"unsafe"
)

// crypto/tls offers no way to choose TLS 1.3 cipher suites. quic-go's own
// interop client narrows them through these variables
// (internal/qtls/cipher_suite.go), which crypto/tls keeps linkable for
// quic-go ("hall of shame", go.dev/issue/67401); so does this peer.

//go:linkname cipherSuitesTLS13 crypto/tls.cipherSuitesTLS13
var cipherSuitesTLS13 []unsafe.Pointer

//go:linkname defaultCipherSuitesTLS13 crypto/tls.defaultCipherSuitesTLS13
var defaultCipherSuitesTLS13 []uint16

//go:linkname defaultCipherSuitesTLS13NoAES crypto/tls.defaultCipherSuitesTLS13NoAES
var defaultCipherSuitesTLS13NoAES []uint16

// onlyChaCha20 makes TLS_CHACHA20_POLY1305_SHA256 the one TLS 1.3 suite
// this process offers: cipherSuitesTLS13 lists AES-128-GCM, ChaCha20,
// AES-256-GCM in that order (crypto/tls/cipher_suites.go).
func onlyChaCha20() {
	cipherSuitesTLS13 = cipherSuitesTLS13[1:2]
	defaultCipherSuitesTLS13 = []uint16{tls.TLS_CHACHA20_POLY1305_SHA256}
	defaultCipherSuitesTLS13NoAES = []uint16{tls.TLS_CHACHA20_POLY1305_SHA256}
}
