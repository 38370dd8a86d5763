package main

// hq-interop (HTTP/0.9 over QUIC, ALPN "hq-interop"), the interop
// runner's protocol, as interop/src/peers/hq.rs defines it: one
// bidirectional stream per file, "GET /path\r\n" and FIN; the file's
// bytes and FIN back, or the stream reset with 0x10b when there is no
// such file.

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/quic-go/quic-go"
)

const (
	hqALPN = "hq-interop"
	// hqMaxRequest is the longest request a server reads (hq.rs).
	hqMaxRequest = 4096
	// hqNotFound resets a refused request's stream (hq.rs's
	// NOT_FOUND_ERROR: HTTP/3's H3_REQUEST_REJECTED).
	hqNotFound = 0x10b
	// hqMaxStreams is the stream limit hq servers grant (hq.rs).
	hqMaxStreams = 256
	// ticketWait bounds the wait for the first connection's session
	// ticket before a resuming client moves on.
	ticketWait = 10 * time.Second
	// migrationWait bounds the probe of the new path.
	migrationWait = 10 * time.Second
)

func runHQ(args []string) error {
	if len(args) == 0 {
		return errors.New("say what to run: server or client")
	}
	switch args[0] {
	case "server":
		return hqServer(args[1:])
	case "client":
		return hqClient(args[1:])
	}
	return fmt.Errorf("no command %q (server, client)", args[0])
}

// ---- server ----

func hqServer(args []string) error {
	set := flag.NewFlagSet("server", flag.ContinueOnError)
	listen := set.String("listen", "127.0.0.1:4433", "address and UDP port to listen on")
	root := set.String("root", "", "directory whose files are served")
	certFile := set.String("cert", "", "certificate chain to present (PEM)")
	keyFile := set.String("key", "", "its private key (PEM)")
	retry := set.Bool("retry", false, "make every new client prove its address with a Retry first")
	versions := set.String("versions", "v1,v2", "QUIC versions accepted: v1, v2 or both (quic-go's default: both)")
	if _, err := parseInterspersed(set, args); err != nil {
		return err
	}
	if err := required(set, "root"); err != nil {
		return err
	}
	if info, err := os.Stat(*root); err != nil || !info.IsDir() {
		return fmt.Errorf("--root %s is not a directory", *root)
	}
	accepted, err := parseVersions(*versions)
	if err != nil {
		return err
	}
	cert, certPath, err := serverCertificate(*certFile, *keyFile, scratchDir("quic-go-hq"))
	if err != nil {
		return err
	}
	address, err := net.ResolveUDPAddr("udp", *listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", *listen, err)
	}
	udp, err := net.ListenUDP("udp", address)
	if err != nil {
		return fmt.Errorf("cannot listen on %s: %w", *listen, err)
	}
	forceRetry := *retry
	transport := &quic.Transport{
		Conn:                udp,
		VerifySourceAddress: func(net.Addr) bool { return forceRetry },
	}
	listener, err := transport.ListenEarly(serverTLS(cert, hqALPN), &quic.Config{
		Versions:           accepted,
		MaxIdleTimeout:     idleTimeout,
		MaxIncomingStreams: hqMaxStreams,
		// QUIC takes 0-RTT whole or not at all (RFC 9001 §4.6.1).
		Allow0RTT: true,
		Tracer:    tracer(nil),
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "listening on %s (root %s, certificate %s)\n", udp.LocalAddr(), *root, certPath)
	for {
		conn, err := listener.Accept(context.Background())
		if err != nil {
			return err
		}
		go serveHQ(conn, *root)
	}
}

func serveHQ(conn *quic.Conn, root string) {
	for {
		stream, err := conn.AcceptStream(context.Background())
		if err != nil {
			break
		}
		go answerHQ(stream, root)
	}
	stats := conn.ConnectionStats()
	fmt.Fprintf(os.Stderr, "client=%s closed: sent %d packets, lost %d\n",
		conn.RemoteAddr(), stats.PacketsSent, stats.PacketsLost)
}

func answerHQ(stream *quic.Stream, root string) {
	request, err := io.ReadAll(io.LimitReader(stream, hqMaxRequest+1))
	if err != nil {
		stream.CancelWrite(hqNotFound)
		return
	}
	path, err := parseHQRequest(request)
	var full string
	if err == nil {
		full, err = fileUnder(root, path)
	}
	if err != nil {
		// HTTP/0.9 has no status: a refused request is a reset stream.
		stream.CancelWrite(hqNotFound)
		return
	}
	file, err := os.Open(full)
	if err != nil {
		stream.CancelWrite(hqNotFound)
		return
	}
	defer file.Close()
	if _, err := io.Copy(stream, file); err != nil {
		stream.CancelWrite(hqNotFound)
		return
	}
	stream.Close()
	fmt.Fprintf(os.Stderr, "GET /%s\n", path)
}

// parseHQRequest is the path of "GET /path" (ended by CRLF, LF or the
// stream's end), without its leading '/' (hq.rs's parse_request).
func parseHQRequest(request []byte) (string, error) {
	if len(request) > hqMaxRequest {
		return "", fmt.Errorf("request longer than %d bytes", hqMaxRequest)
	}
	line, _, _ := bytes.Cut(request, []byte("\n"))
	line = bytes.TrimSuffix(line, []byte("\r"))
	if i := bytes.IndexByte(line, '\r'); i >= 0 {
		line = line[:i]
	}
	path, ok := strings.CutPrefix(string(line), "GET /")
	if !ok || path == "" || strings.Contains(path, " ") {
		return "", fmt.Errorf("not an hq-interop request: %q", line)
	}
	return path, nil
}

// ---- client ----

// hqReport is what a client did, as hq.rs's ClientReport prints it.
type hqReport struct {
	Stack           string       `json:"stack"`
	Version         string       `json:"version"`
	ALPN            string       `json:"alpn"`
	Handshakes      uint32       `json:"handshakes"`
	Resumed         *bool        `json:"resumed"`
	ZeroRTTAccepted *bool        `json:"zero_rtt_accepted"`
	KeyUpdates      uint64       `json:"key_updates"`
	Cipher          *string      `json:"cipher"`
	Migrated        bool         `json:"migrated"`
	Files           []fileReport `json:"files"`
}

type hqClientOptions struct {
	outputDir string
	chacha20  bool
	keyUpdate bool
	resume    bool
	zeroRTT   bool
	migrate   bool
}

func hqClient(args []string) error {
	set := flag.NewFlagSet("client", flag.ContinueOnError)
	outputDir := set.String("output-dir", "", "where to write the files (under their paths)")
	ca := set.String("ca", "", "trust servers whose certificate chains to this PEM bundle")
	insecure := set.Bool("insecure", false, "verify no certificate (interop testing only)")
	chacha20 := set.Bool("chacha20", false, "offer only TLS_CHACHA20_POLY1305_SHA256")
	keyUpdate := set.Bool("key-update", false, "update the 1-RTT keys once 16 packets went either way (quic-go does after 100 on its own)")
	resume := set.Bool("resume", false, "fetch the first URL, close, then the rest on a connection resuming the first's session")
	zeroRTT := set.Bool("zerortt", false, "as --resume, with the second connection's requests in 0-RTT")
	migrate := set.Bool("migrate", false, "move to a new local port once the first response bytes are in")
	versions := set.String("versions", "v1", "QUIC versions offered, first one first: v1, v2 or both")
	asJSON := set.Bool("json", false, "print one JSON object (what was done, each file's size and SHA-256)")
	_, targets, err := clientTargets(set, args, ca, insecure)
	if err != nil {
		return err
	}
	offered, err := parseVersions(*versions)
	if err != nil {
		return err
	}
	tlsConf, err := clientTLS(*ca, *insecure, targets[0].serverName, hqALPN)
	if err != nil {
		return err
	}
	if *chacha20 {
		onlyChaCha20()
	}
	if *keyUpdate {
		updateKeysEarly()
	}
	options := hqClientOptions{*outputDir, *chacha20, *keyUpdate, *resume, *zeroRTT, *migrate}
	report, err := fetchHQ(targets, tlsConf, offered, options)
	if report != nil && *asJSON {
		if printErr := printJSON(report); printErr != nil && err == nil {
			err = printErr
		}
	} else if report != nil {
		for _, file := range report.Files {
			fmt.Printf("/%s %d bytes sha256 %s\n", file.Path, file.Bytes, file.Sha256)
		}
	}
	return err
}

// ticketCache tells when a session ticket has come.
type ticketCache struct {
	tls.ClientSessionCache
	put chan struct{}
}

func (c *ticketCache) Put(key string, state *tls.ClientSessionState) {
	c.ClientSessionCache.Put(key, state)
	select {
	case c.put <- struct{}{}:
	default:
	}
}

func fetchHQ(targets []target, tlsConf *tls.Config, versions []quic.Version, options hqClientOptions) (*hqReport, error) {
	udp, err := net.ListenUDP("udp", anyAddress(targets[0].address))
	if err != nil {
		return nil, fmt.Errorf("cannot bind a socket: %w", err)
	}
	transport := &quic.Transport{Conn: udp}
	defer transport.Close()
	var seen counters
	config := &quic.Config{
		Versions:       versions,
		MaxIdleTimeout: idleTimeout,
		Tracer:         tracer(&seen),
	}
	resuming := options.resume || options.zeroRTT
	var tickets *ticketCache
	if resuming {
		tickets = &ticketCache{tls.NewLRUClientSessionCache(4), make(chan struct{}, 1)}
		tlsConf.ClientSessionCache = tickets
	}
	report := &hqReport{Stack: "quic-go", Version: versionName(versions[0]), ALPN: hqALPN, Files: []fileReport{}}
	groups := [][]target{targets}
	if resuming && len(targets) > 1 {
		groups = [][]target{targets[:1], targets[1:]}
	}
	ctx := context.Background()
	for index, group := range groups {
		early := index > 0 && options.zeroRTT
		var conn *quic.Conn
		if early {
			conn, err = transport.DialEarly(ctx, group[0].address, tlsConf, config)
		} else {
			conn, err = transport.Dial(ctx, group[0].address, tlsConf, config)
		}
		if err != nil {
			return report, fmt.Errorf("handshake failed: %w", err)
		}
		report.Handshakes++
		files, err := fetchAllHQ(conn, group, options, report)
		if early && errors.Is(err, quic.Err0RTTRejected) {
			// The server refused the early data: the requests go again,
			// in 1-RTT, on the connection the handshake goes on with.
			next, nextErr := conn.NextConnection(ctx)
			if nextErr != nil {
				return report, fmt.Errorf("handshake failed after 0-RTT was rejected: %w", nextErr)
			}
			conn = next
			files, err = fetchAllHQ(conn, group, options, report)
		}
		state := conn.ConnectionState()
		report.Version = versionName(state.Version)
		if resuming {
			resumed := state.TLS.DidResume
			report.Resumed = &resumed
		}
		if early {
			accepted := state.Used0RTT
			report.ZeroRTTAccepted = &accepted
		}
		if options.chacha20 {
			cipher := tls.CipherSuiteName(state.TLS.CipherSuite)
			report.Cipher = &cipher
		}
		report.Files = append(report.Files, files...)
		if err == nil && index < len(groups)-1 {
			// The next connection resumes: wait for the ticket.
			select {
			case <-tickets.put:
			case <-time.After(ticketWait):
				err = fmt.Errorf("no session ticket within %v", ticketWait)
			}
		}
		conn.CloseWithError(0, "done")
		if err != nil {
			return report, err
		}
	}
	report.KeyUpdates = seen.keyUpdates.Load()
	return report, nil
}

// fetchAllHQ requests every file on conn at once (requests back to back,
// so that a resumed connection sends them in 0-RTT) and reads each
// response on a goroutine of its own; past the stream limit, opening
// waits for responses to end.
func fetchAllHQ(conn *quic.Conn, group []target, options hqClientOptions, report *hqReport) ([]fileReport, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		wait      sync.WaitGroup
		mutex     sync.Mutex
		firstErr  error
		firstData sync.Once
		migration = make(chan error, 1)
	)
	files := make([]*fileReport, len(group))
	fail := func(err error) {
		mutex.Lock()
		defer mutex.Unlock()
		if firstErr == nil {
			firstErr = err
			cancel()
		}
	}
	onData := func() {
		firstData.Do(func() {
			if options.migrate && !report.Migrated {
				go func() { migration <- migrate(conn) }()
			} else {
				migration <- nil
			}
		})
	}
	for index, t := range group {
		stream, err := conn.OpenStreamSync(ctx)
		if err != nil {
			fail(fmt.Errorf("/%s: cannot open a stream: %w", t.path, err))
			break
		}
		if _, err := stream.Write([]byte("GET /" + t.path + "\r\n")); err != nil {
			fail(fmt.Errorf("/%s: cannot send the request: %w", t.path, err))
			break
		}
		stream.Close()
		wait.Add(1)
		go func(index int, t target, stream *quic.Stream) {
			defer wait.Done()
			file, err := fetchHQFile(stream, t.path, options.outputDir, onData)
			if err != nil {
				fail(fmt.Errorf("/%s: %w", t.path, err))
				return
			}
			files[index] = &file
		}(index, t, stream)
	}
	wait.Wait()
	if firstErr == nil && len(group) > 0 {
		// Every response is in; the migration, if any, must have ended.
		select {
		case err := <-migration:
			if err != nil {
				fail(err)
			} else if options.migrate {
				report.Migrated = true
			}
		case <-time.After(migrationWait):
			fail(errors.New("the migration did not end"))
		}
	}
	var done []fileReport
	for _, file := range files {
		if file != nil {
			done = append(done, *file)
		}
	}
	return done, firstErr
}

func fetchHQFile(stream *quic.Stream, path, dir string, onData func()) (fileReport, error) {
	output, err := outputPath(dir, path)
	if err != nil {
		return fileReport{}, err
	}
	d, err := createDownload(output, path)
	if err != nil {
		return fileReport{}, err
	}
	buffer := make([]byte, 32*1024)
	for {
		n, err := stream.Read(buffer)
		if n > 0 {
			onData()
			if _, werr := d.Write(buffer[:n]); werr != nil {
				d.abandon()
				return fileReport{}, werr
			}
		}
		if err == io.EOF {
			return d.finish()
		}
		if err != nil {
			d.abandon()
			return fileReport{}, fmt.Errorf("response stream failed: %w", err)
		}
	}
}

// migrate moves conn to a new local port: a new socket, the path probed
// (PATH_CHALLENGE with a new connection ID), then switched to.
func migrate(conn *quic.Conn) error {
	local, ok := conn.LocalAddr().(*net.UDPAddr)
	if !ok {
		return errors.New("the connection has no UDP address")
	}
	udp, err := net.ListenUDP("udp", anyAddress(local))
	if err != nil {
		return fmt.Errorf("cannot bind a socket to migrate to: %w", err)
	}
	path, err := conn.AddPath(&quic.Transport{Conn: udp})
	if err != nil {
		return fmt.Errorf("cannot add the new path: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), migrationWait)
	defer cancel()
	if err := path.Probe(ctx); err != nil {
		return fmt.Errorf("the new path was not validated: %w", err)
	}
	if err := path.Switch(); err != nil {
		return fmt.Errorf("cannot switch to the new path: %w", err)
	}
	return nil
}
