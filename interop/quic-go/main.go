// quic-go-peer: quic-go (github.com/quic-go/quic-go, pinned in go.mod) as
// a peer of sift's interop matrix and comparison runner, one binary that
// speaks the command lines the Rust peers speak (interop/src/peers/cli.rs).
//
// It is one program with five faces, picked by the name it is run under
// (the build links these names to it) or by its first argument:
//
//	quic-go-hq server|client ...   hq-interop (HTTP/0.9), as quinn-hq
//	quic-go-h3-server ...          HTTP/3 (quic-go's http3), as quinn-h3-server
//	quic-go-h3-client URL... ...   HTTP/3 client, as quinn-h3-client
//	quic-go-server ...             the comparison's file protocol, as quinn-server
//	quic-go-client get URL ...     its client, as quinn-client
//
// SSLKEYLOGFILE and QLOGDIR are honoured as every peer honours them
// (interop/src/peers/env.rs). Errors end the program with
// "PROGRAM: error: WHY" on stderr and exit status 1.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The faces, by the name each is run under.
var faces = map[string]func(args []string) error{
	"quic-go-hq":        runHQ,
	"quic-go-h3-server": runH3Server,
	"quic-go-h3-client": runH3Client,
	"quic-go-server":    runFileServer,
	"quic-go-client":    runFileClient,
}

const usage = `quic-go-peer: quic-go as a peer of sift's interop matrix and comparison

Usage (or run under one of these names, the build links them):
  quic-go-peer quic-go-hq server --listen ADDR --root DIR [--cert PEM --key PEM] [--retry]
  quic-go-peer quic-go-hq client URL... --output-dir DIR (--ca PEM | --insecure)
      [--chacha20] [--key-update] [--resume] [--zerortt] [--migrate] [--versions v1|v2|v2,v1] [--json]
  quic-go-peer quic-go-h3-server --listen ADDR --root DIR [--cert PEM --key PEM]
  quic-go-peer quic-go-h3-client URL... --output-dir DIR (--ca PEM | --insecure) [--server-name NAME] [--json]
  quic-go-peer quic-go-server --listen ADDR --root DIR [--cc cubic] [--cert-dir DIR] [--max-datagram BYTES]
  quic-go-peer quic-go-client get quic://HOST:PORT/PATH [-o FILE] (--ca PEM | --insecure-no-verify)
      [--cc cubic] [--server-name NAME] [--json] [--max-datagram BYTES]

Environment: SSLKEYLOGFILE (TLS secrets, NSS key log), QLOGDIR (a qlog per connection).
`

func main() {
	name := filepath.Base(os.Args[0])
	args := os.Args[1:]
	face, ok := faces[name]
	if !ok {
		if len(args) == 0 || args[0] == "--help" || args[0] == "-h" {
			fmt.Print(usage)
			if len(args) == 0 {
				os.Exit(2)
			}
			return
		}
		name = args[0]
		if !strings.HasPrefix(name, "quic-go-") {
			name = "quic-go-" + name
		}
		face, ok = faces[name]
		if !ok {
			fmt.Fprintf(os.Stderr, "quic-go-peer: error: no face %q\n\n%s", args[0], usage)
			os.Exit(2)
		}
		args = args[1:]
	}
	if err := face(args); err != nil {
		fmt.Fprintf(os.Stderr, "%s: error: %v\n", name, err)
		os.Exit(1)
	}
}
