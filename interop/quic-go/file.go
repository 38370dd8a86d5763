package main

// The comparison's file protocol (ALPN "sift-interop/1",
// interop/src/peers/file.rs): "GET <path>\n" → "OK <size>\n" and the
// file, or "ERR <reason>\n"; "STATS\n" → "OK <len>\n" and the sender's
// counters as JSON. The server and client quic-go-server and
// quic-go-client, driven by sift-compare as quinn-server and
// quinn-client are.
//
// quic-go as a user gets it otherwise: its CUBIC (the only controller
// its API has: --cc takes "cubic" alone), its pacer, GSO where the
// kernel has it. Like quinn it counts no retransmitted packets and no
// PTOs: the counters' retransmitted_packets is its lost packets (whose
// frames it resends), ptos is 0.

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/quic-go/quic-go"
)

const (
	fileALPN = "sift-interop/1"
	// fileMaxRequest bounds a request line (file.rs).
	fileMaxRequest = 4096
	// The links' datagram size, and the range --max-datagram takes
	// (interop/src/peers/settings.rs).
	maxDatagramSize      = 1350
	smallestDatagramSize = 1200
	largestDatagramSize  = 8972
	// quic-go's largest packet (internal/protocol's MaxPacketBufferSize):
	// its path MTU discovery searches no higher.
	quicGoLargestPacket = 1452
	// The comparison's shared windows (settings.rs's MAX_DATA,
	// MAX_STREAM_DATA).
	maxData       = 64 << 20
	maxStreamData = 32 << 20
)

// controllers quic-go offers through its API.
var controllers = []string{"cubic"}

func checkController(cc string) error {
	for _, name := range controllers {
		if cc == name {
			return nil
		}
	}
	return fmt.Errorf("--cc %s: quic-go v0.65.0 offers %s", cc, strings.Join(controllers, ", "))
}

func parseMaxDatagram(text string) (int, error) {
	bytes, err := strconv.Atoi(text)
	if err != nil || bytes < smallestDatagramSize || bytes > largestDatagramSize {
		return 0, fmt.Errorf("--max-datagram %s: a number of bytes from %d to %d", text, smallestDatagramSize, largestDatagramSize)
	}
	return bytes, nil
}

// likeForLike is the comparison's settings: 1350-byte datagrams (the
// links' size), or, when maxDatagram is larger, quic-go's path MTU
// discovery from there (up to its 1452); the shared windows.
func likeForLike(maxDatagram int, trace *counters) *quic.Config {
	return &quic.Config{
		Versions:                       []quic.Version{quic.Version1},
		MaxIdleTimeout:                 idleTimeout,
		InitialPacketSize:              maxDatagramSize,
		DisablePathMTUDiscovery:        maxDatagram <= maxDatagramSize,
		InitialStreamReceiveWindow:     maxStreamData,
		MaxStreamReceiveWindow:         maxStreamData,
		InitialConnectionReceiveWindow: maxData,
		MaxConnectionReceiveWindow:     maxData,
		MaxIncomingStreams:             16,
		MaxIncomingUniStreams:          16,
		Tracer:                         tracer(trace),
	}
}

// senderCounters is the STATS response (file.rs's SenderCounters).
type senderCounters struct {
	RetransmittedPackets uint64 `json:"retransmitted_packets"`
	LostPackets          uint64 `json:"lost_packets"`
	Ptos                 uint64 `json:"ptos"`
	SrttUs               uint64 `json:"srtt_us"`
	Cwnd                 uint64 `json:"cwnd"`
}

func countersOf(conn *quic.Conn) senderCounters {
	stats := conn.ConnectionStats()
	return senderCounters{
		RetransmittedPackets: stats.PacketsLost,
		LostPackets:          stats.PacketsLost,
		SrttUs:               uint64(stats.SmoothedRTT.Microseconds()),
		Cwnd:                 stats.CongestionWindow,
	}
}

// ---- server ----

func runFileServer(args []string) error {
	set := flag.NewFlagSet("quic-go-server", flag.ContinueOnError)
	listen := set.String("listen", "0.0.0.0:4433", "address and UDP port to listen on")
	root := set.String("root", "", "directory whose files are served")
	cc := set.String("cc", "cubic", "congestion controller for the data the server sends: "+strings.Join(controllers, ", "))
	certDir := set.String("cert-dir", "", "where to write the certificate (cert.pem) and key (key.pem) [default: a new directory under the temp dir]")
	maxDatagramText := set.String("max-datagram", strconv.Itoa(maxDatagramSize), "the largest UDP payload, both ways, 1200 to 8972 bytes (quic-go reaches 1452 at most)")
	if _, err := parseInterspersed(set, args); err != nil {
		return err
	}
	if err := required(set, "root"); err != nil {
		return err
	}
	if info, err := os.Stat(*root); err != nil || !info.IsDir() {
		return fmt.Errorf("--root %s is not a directory", *root)
	}
	if err := checkController(*cc); err != nil {
		return err
	}
	maxDatagram, err := parseMaxDatagram(*maxDatagramText)
	if err != nil {
		return err
	}
	dir := *certDir
	if dir == "" {
		dir = scratchDir("quic-go-server")
	}
	cert, _, err := serverCertificate("", "", dir)
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
	transport := &quic.Transport{Conn: udp}
	listener, err := transport.Listen(serverTLS(cert, fileALPN), likeForLike(maxDatagram, nil))
	if err != nil {
		return err
	}
	fmt.Printf("listening on %s (root %s, cc %s, certificate %s)\n",
		udp.LocalAddr(), *root, *cc, filepath.Join(dir, "cert.pem"))
	for {
		conn, err := listener.Accept(context.Background())
		if err != nil {
			return err
		}
		go serveFiles(conn, *root)
	}
}

func serveFiles(conn *quic.Conn, root string) {
	for {
		stream, err := conn.AcceptStream(context.Background())
		if err != nil {
			break
		}
		go answerFile(conn, stream, root)
	}
	stats := conn.ConnectionStats()
	fmt.Printf("client=%s closed: sent %d packets, lost %d\n", conn.RemoteAddr(), stats.PacketsSent, stats.PacketsLost)
}

func answerFile(conn *quic.Conn, stream *quic.Stream, root string) {
	request, err := io.ReadAll(io.LimitReader(stream, fileMaxRequest+1))
	if err != nil {
		stream.CancelWrite(0)
		return
	}
	refuse := func(reason string) {
		stream.Write([]byte("ERR " + strings.ReplaceAll(reason, "\n", " ") + "\n"))
		stream.Close()
	}
	if len(request) > fileMaxRequest {
		refuse(fmt.Sprintf("request longer than %d bytes", fileMaxRequest))
		return
	}
	line := strings.TrimSuffix(string(request), "\n")
	if line == "STATS" {
		body, _ := json.Marshal(countersOf(conn))
		stream.Write(append([]byte(fmt.Sprintf("OK %d\n", len(body))), body...))
		stream.Close()
		return
	}
	path, ok := strings.CutPrefix(line, "GET ")
	if !ok || path == "" || strings.Contains(path, "\n") {
		refuse(fmt.Sprintf("request is not `GET <path>` or `STATS`: %q", line))
		return
	}
	full, err := fileUnder(root, path)
	if err != nil {
		refuse(err.Error())
		return
	}
	file, err := os.Open(full)
	if err != nil {
		refuse(fmt.Sprintf("%s: %v", path, err))
		return
	}
	defer file.Close()
	info, err := file.Stat()
	if err != nil {
		refuse(fmt.Sprintf("%s: %v", path, err))
		return
	}
	fmt.Printf("client=%s GET %s (%d bytes)\n", conn.RemoteAddr(), path, info.Size())
	if _, err := stream.Write([]byte(fmt.Sprintf("OK %d\n", info.Size()))); err != nil {
		return
	}
	// A read error ends the body early; the client sees fewer bytes than
	// announced and fails.
	io.Copy(stream, file)
	stream.Close()
}

// ---- client ----

// flowReport is what the client prints with --json (interop/src/flow.rs).
type flowReport struct {
	ID                        uint64  `json:"id"`
	Path                      string  `json:"path"`
	CC                        string  `json:"cc"`
	CorruptionNotices         bool    `json:"corruption_notices"`
	Bytes                     uint64  `json:"bytes"`
	CompletionS               float64 `json:"completion_s"`
	GoodputBps                float64 `json:"goodput_bps"`
	RetransmittedPackets      uint64  `json:"retransmitted_packets"`
	Ptos                      uint64  `json:"ptos"`
	CorruptionNoticesReceived uint64  `json:"corruption_notices_received"`
	SrttUs                    uint64  `json:"srtt_us"`
	Cwnd                      uint64  `json:"cwnd"`
	LostPackets               uint64  `json:"lost_packets"`
	Sha256                    string  `json:"sha256"`
	Version                   string  `json:"version"`
}

func runFileClient(args []string) error {
	if len(args) == 0 || args[0] != "get" {
		return errors.New("say what to do: get quic://HOST:PORT/PATH")
	}
	set := flag.NewFlagSet("get", flag.ContinueOnError)
	var output string
	set.StringVar(&output, "o", "", "where to write it [default: the file's name, here]")
	set.StringVar(&output, "output", "", "where to write it [default: the file's name, here]")
	cc := set.String("cc", "cubic", "congestion controller for what this client sends: "+strings.Join(controllers, ", "))
	ca := set.String("ca", "", "trust the server certificate in this PEM file")
	insecure := set.Bool("insecure-no-verify", false, "do not verify the server's certificate")
	serverName := set.String("server-name", localhost, "name to check the certificate against")
	asJSON := set.Bool("json", false, "print one JSON object (the flow fields, sha256 and path)")
	maxDatagramText := set.String("max-datagram", strconv.Itoa(maxDatagramSize), "the largest UDP payload, both ways, 1200 to 8972 bytes")
	urls, err := parseInterspersed(set, args[1:])
	if err != nil {
		return err
	}
	if len(urls) != 1 {
		return errors.New("get takes one quic://HOST:PORT/PATH")
	}
	if (*ca == "") == !*insecure {
		return errors.New("say how to trust the server: --ca PEM, or --insecure-no-verify (not both)")
	}
	if err := checkController(*cc); err != nil {
		return err
	}
	maxDatagram, err := parseMaxDatagram(*maxDatagramText)
	if err != nil {
		return err
	}
	targets, err := parseTargets(urls, "quic")
	if err != nil {
		return err
	}
	t := targets[0]
	if output == "" {
		output = filepath.Base(t.path)
	}
	tlsConf, err := clientTLS(*ca, *insecure, *serverName, fileALPN)
	if err != nil {
		return err
	}
	report, err := getFile(t, tlsConf, likeForLike(maxDatagram, nil), output, *cc)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(report)
	}
	fmt.Printf("get %s (%s)\n  bytes        %d\n  time         %.2f s\n  goodput      %.2f Mb/s\n  retransmits  %d packets, %d lost, %d PTOs (sender)\n  srtt         %.1f ms\n  cwnd         %d bytes\n  cc           %s\n  sha256       %s\n",
		report.Path, output, report.Bytes, report.CompletionS, report.GoodputBps/1e6,
		report.RetransmittedPackets, report.LostPackets, report.Ptos,
		float64(report.SrttUs)/1000, report.Cwnd, report.CC, report.Sha256)
	return nil
}

func getFile(t target, tlsConf *tls.Config, config *quic.Config, output, cc string) (*flowReport, error) {
	udp, err := net.ListenUDP("udp", anyAddress(t.address))
	if err != nil {
		return nil, fmt.Errorf("cannot bind a socket: %w", err)
	}
	transport := &quic.Transport{Conn: udp}
	defer transport.Close()
	ctx := context.Background()
	conn, err := transport.Dial(ctx, t.address, tlsConf, config)
	if err != nil {
		return nil, fmt.Errorf("handshake failed: %w", err)
	}
	defer conn.CloseWithError(0, "done")
	d, err := createDownload(output, t.path)
	if err != nil {
		return nil, err
	}
	stream, err := conn.OpenStreamSync(ctx)
	if err != nil {
		d.abandon()
		return nil, fmt.Errorf("cannot open a stream: %w", err)
	}
	d.requested = time.Now()
	if _, err := stream.Write([]byte("GET " + t.path + "\n")); err != nil {
		d.abandon()
		return nil, fmt.Errorf("cannot send the request: %w", err)
	}
	stream.Close()
	size, err := readHeader(stream)
	if err != nil {
		d.abandon()
		return nil, err
	}
	if _, err := io.Copy(d, stream); err != nil {
		d.abandon()
		return nil, fmt.Errorf("download stream failed: %w", err)
	}
	if d.bytes != size {
		d.abandon()
		return nil, fmt.Errorf("server announced %d bytes and sent %d", size, d.bytes)
	}
	file, err := d.finish()
	if err != nil {
		return nil, err
	}
	counters, err := askCounters(ctx, conn)
	if err != nil {
		return nil, err
	}
	seconds := float64(file.ElapsedUs) / 1e6
	goodput := 0.0
	if seconds > 0 {
		goodput = float64(file.Bytes) * 8 / seconds
	}
	return &flowReport{
		Path:                 file.Path,
		CC:                   cc,
		Bytes:                file.Bytes,
		CompletionS:          seconds,
		GoodputBps:           goodput,
		RetransmittedPackets: counters.RetransmittedPackets,
		Ptos:                 counters.Ptos,
		SrttUs:               counters.SrttUs,
		Cwnd:                 counters.Cwnd,
		LostPackets:          counters.LostPackets,
		Sha256:               file.Sha256,
		Version:              versionName(conn.ConnectionState().Version),
	}, nil
}

// readHeader reads a response's header line, byte by byte (it is short
// and what follows is the body): the size of "OK <size>", or the
// server's refusal.
func readHeader(stream io.Reader) (uint64, error) {
	var line []byte
	one := make([]byte, 1)
	for {
		if _, err := io.ReadFull(stream, one); err != nil {
			return 0, errors.New("server ended the response before its header")
		}
		if one[0] == '\n' {
			break
		}
		if len(line) > fileMaxRequest {
			return 0, fmt.Errorf("response header is not `OK <size>` or `ERR <reason>`: %q", line[:64])
		}
		line = append(line, one[0])
	}
	if reason, ok := bytes.CutPrefix(line, []byte("ERR ")); ok {
		return 0, fmt.Errorf("server refused: %s", reason)
	}
	size, ok := bytes.CutPrefix(line, []byte("OK "))
	if !ok {
		return 0, fmt.Errorf("response header is not `OK <size>` or `ERR <reason>`: %q", line)
	}
	n, err := strconv.ParseUint(string(size), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("response header is not `OK <size>` or `ERR <reason>`: %q", line)
	}
	return n, nil
}

// askCounters asks the server for its sender counters (STATS).
func askCounters(ctx context.Context, conn *quic.Conn) (senderCounters, error) {
	var counters senderCounters
	stream, err := conn.OpenStreamSync(ctx)
	if err != nil {
		return counters, fmt.Errorf("cannot ask for the server's counters: %w", err)
	}
	if _, err := stream.Write([]byte("STATS\n")); err != nil {
		return counters, fmt.Errorf("cannot ask for the server's counters: %w", err)
	}
	stream.Close()
	response, err := io.ReadAll(io.LimitReader(stream, fileMaxRequest))
	if err != nil {
		return counters, fmt.Errorf("counters stream failed: %w", err)
	}
	header, body, ok := bytes.Cut(response, []byte("\n"))
	if !ok || !bytes.HasPrefix(header, []byte("OK ")) {
		return counters, fmt.Errorf("server's counters came without a header: %q", response)
	}
	if err := json.Unmarshal(body, &counters); err != nil {
		return counters, fmt.Errorf("server's counters are not JSON: %w", err)
	}
	return counters, nil
}
