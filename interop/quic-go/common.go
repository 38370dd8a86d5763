package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"hash"
	"io"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/qlog"
	"github.com/quic-go/quic-go/qlogwriter"
)

// localhost is the name self-signed certificates are made for, and the
// name a client checks when a URL gives an address (SNI carries no
// addresses): interop/src/peers/cert.rs's LOCALHOST.
const localhost = "localhost"

// idleTimeout is every peer's idle timeout (interop/src/peers/settings.rs).
const idleTimeout = 30 * time.Second

// closeGrace is how long a client waits for its close to go out
// (settings.rs's CLOSE_GRACE).
const closeGrace = time.Second

// ---- certificates ----

// serverCertificate loads the PEM chain and key given (--cert, --key go
// together), or makes a self-signed ECDSA P-256 certificate for
// localhost and writes it as cert.pem and key.pem into dir, as the Rust
// peers do (cert.rs).
func serverCertificate(certFile, keyFile, dir string) (tls.Certificate, string, error) {
	switch {
	case certFile != "" && keyFile != "":
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return tls.Certificate{}, "", fmt.Errorf("cannot load %s and %s: %w", certFile, keyFile, err)
		}
		return cert, certFile, nil
	case certFile != "" || keyFile != "":
		return tls.Certificate{}, "", errors.New("--cert and --key go together")
	}
	certPEM, keyPEM, err := selfSigned()
	if err != nil {
		return tls.Certificate{}, "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return tls.Certificate{}, "", fmt.Errorf("cannot create %s: %w", dir, err)
	}
	certPath := filepath.Join(dir, "cert.pem")
	if err := os.WriteFile(certPath, certPEM, 0o600); err != nil {
		return tls.Certificate{}, "", fmt.Errorf("cannot write %s: %w", certPath, err)
	}
	keyPath := filepath.Join(dir, "key.pem")
	if err := os.WriteFile(keyPath, keyPEM, 0o600); err != nil {
		return tls.Certificate{}, "", fmt.Errorf("cannot write %s: %w", keyPath, err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	return cert, certPath, err
}

// scratchDir is where a server writes the certificate it makes when
// given none: a fresh directory named after the program, under the
// temp dir (the matrix points TMPDIR at the cell's folder).
func scratchDir(program string) string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("%s-%d", program, os.Getpid()))
}

func selfSigned() (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot make a key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 64))
	if err != nil {
		return nil, nil, err
	}
	template := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: localhost},
		DNSNames:     []string{localhost},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(30 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot make a self-signed certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	return certPEM, keyPEM, nil
}

// serverTLS is a TLS 1.3 server configuration presenting cert for alpn.
func serverTLS(cert tls.Certificate, alpn string) *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{cert},
		NextProtos:   []string{alpn},
		KeyLogWriter: keyLog(),
	}
}

// clientTLS trusts the roots in ca (PEM), or with insecure nothing at
// all, for serverName and alpn.
func clientTLS(ca string, insecure bool, serverName, alpn string) (*tls.Config, error) {
	config := &tls.Config{
		MinVersion:   tls.VersionTLS13,
		ServerName:   serverName,
		NextProtos:   []string{alpn},
		KeyLogWriter: keyLog(),
	}
	switch {
	case ca != "":
		pemBytes, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("cannot read %s: %w", ca, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pemBytes) {
			return nil, fmt.Errorf("%s holds no PEM certificate", ca)
		}
		config.RootCAs = pool
	case insecure:
		config.InsecureSkipVerify = true
	default:
		return nil, errors.New("say how to trust the server: --ca PEM, or --insecure to verify nothing")
	}
	return config, nil
}

// ---- the environment (interop/src/peers/env.rs) ----

// keyLog is the NSS key log SSLKEYLOGFILE names, opened for appending,
// or nil: no key log is no reason to fail a connection.
func keyLog() io.Writer {
	path := os.Getenv("SSLKEYLOGFILE")
	if path == "" {
		return nil
	}
	file, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil
	}
	return file
}

// counters is what the tracer counts of a client's connections.
type counters struct {
	// Key updates this endpoint initiated (1-RTT).
	keyUpdates atomic.Uint64
}

// tracer writes a qlog per connection into QLOGDIR (quic-go's own
// qlog.DefaultConnectionTracer) when it names a directory, and counts
// into c (when not nil) what a report needs: quic-go says when it
// updated its keys only through these events. nil when there is
// nothing to trace, so that quic-go records no events at all.
func tracer(c *counters) func(context.Context, bool, quic.ConnectionID) qlogwriter.Trace {
	qlogDir := os.Getenv("QLOGDIR")
	if qlogDir == "" && c == nil {
		return nil
	}
	return func(ctx context.Context, isClient bool, id quic.ConnectionID) qlogwriter.Trace {
		var file qlogwriter.Trace
		if qlogDir != "" {
			file = qlog.DefaultConnectionTracer(ctx, isClient, id)
		}
		if c == nil {
			return file
		}
		return &countingTrace{file: file, counters: c}
	}
}

type countingTrace struct {
	file     qlogwriter.Trace
	counters *counters
}

func (t *countingTrace) AddProducer() qlogwriter.Recorder {
	recorder := &countingRecorder{counters: t.counters}
	if t.file != nil {
		recorder.inner = t.file.AddProducer()
	}
	return recorder
}

type countingRecorder struct {
	inner    qlogwriter.Recorder
	counters *counters
}

func (r *countingRecorder) RecordEvent(event qlogwriter.Event) {
	// One local update rolls both directions' keys: count the client's.
	if update, ok := event.(qlog.KeyUpdated); ok &&
		update.Trigger == qlog.KeyUpdateLocal && update.KeyType == qlog.KeyTypeClient1RTT {
		r.counters.keyUpdates.Add(1)
	}
	if r.inner != nil {
		r.inner.RecordEvent(event)
	}
}

func (r *countingRecorder) Close() error {
	if r.inner != nil {
		return r.inner.Close()
	}
	return nil
}

// ---- versions ----

// parseVersions reads --versions: v1, v2, or both in preference order.
func parseVersions(text string) ([]quic.Version, error) {
	var versions []quic.Version
	for _, name := range strings.Split(text, ",") {
		switch strings.TrimSpace(name) {
		case "v1":
			versions = append(versions, quic.Version1)
		case "v2":
			versions = append(versions, quic.Version2)
		case "":
		default:
			return nil, fmt.Errorf("--versions: no version %q (v1, v2)", name)
		}
	}
	if len(versions) == 0 {
		return nil, errors.New("--versions names none")
	}
	return versions, nil
}

// versionName names a version as sift-client's report does.
func versionName(version quic.Version) string {
	switch version {
	case quic.Version1:
		return "QUIC v1"
	case quic.Version2:
		return "QUIC v2"
	}
	return fmt.Sprintf("0x%08x", uint32(version))
}

// ---- URLs and files ----

// target is one URL: the address to dial, the name to send, the path.
type target struct {
	address    *net.UDPAddr
	authority  string
	serverName string
	// path without its leading '/'.
	path string
}

// parseTargets reads URLs of scheme (default port 4433, as url.rs), all
// naming one server.
func parseTargets(urls []string, scheme string) ([]target, error) {
	if len(urls) == 0 {
		return nil, errors.New("no URL given")
	}
	var targets []target
	for _, raw := range urls {
		parsed, err := url.Parse(raw)
		if err != nil {
			return nil, fmt.Errorf("URL %q: %w", raw, err)
		}
		if parsed.Scheme != scheme {
			return nil, fmt.Errorf("URL %q: the scheme must be %s://", raw, scheme)
		}
		path := strings.TrimPrefix(parsed.EscapedPath(), "/")
		if path == "" {
			return nil, fmt.Errorf("URL %q names no file", raw)
		}
		host, port := parsed.Hostname(), parsed.Port()
		if port == "" {
			port = "4433"
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("URL %q: port %q is not a number from 1 to 65535", raw, port)
		}
		address, err := net.ResolveUDPAddr("udp", net.JoinHostPort(host, port))
		if err != nil {
			return nil, fmt.Errorf("cannot resolve %s: %w", host, err)
		}
		serverName := host
		if net.ParseIP(host) != nil {
			serverName = localhost
		}
		targets = append(targets, target{address, parsed.Host, serverName, path})
	}
	for _, t := range targets[1:] {
		if t.address.String() != targets[0].address.String() {
			return nil, fmt.Errorf("all URLs must name one server (one connection fetches them): %s and %s differ",
				targets[0].authority, t.authority)
		}
	}
	return targets, nil
}

// fileUnder is the regular file under root a request for path names, or
// an error when it would leave root (absolute, .., a symlink out) or is
// no regular file (files.rs's file_under).
func fileUnder(root, path string) (string, error) {
	outside := fmt.Errorf("path %q leaves the served directory", path)
	relative := strings.TrimLeft(path, "/")
	for _, part := range strings.Split(relative, "/") {
		if part == ".." || part == "" {
			return "", outside
		}
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", outside
	}
	full, err := filepath.EvalSymlinks(filepath.Join(realRoot, relative))
	if err != nil || !strings.HasPrefix(full, realRoot+string(filepath.Separator)) {
		return "", outside
	}
	info, err := os.Stat(full)
	if err != nil || !info.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a file", path)
	}
	return full, nil
}

// outputPath is where the file fetched for path goes under dir, refusing
// anything that would leave dir; a query or fragment is not part of the
// name (files.rs's output_path).
func outputPath(dir, path string) (string, error) {
	name := strings.SplitN(strings.SplitN(path, "?", 2)[0], "#", 2)[0]
	relative := strings.TrimLeft(name, "/")
	if relative == "" {
		return "", fmt.Errorf("%q does not name a file under %s", path, dir)
	}
	for _, part := range strings.Split(relative, "/") {
		if part == "" || part == "." || part == ".." {
			return "", fmt.Errorf("%q does not name a file under %s", path, dir)
		}
	}
	return filepath.Join(dir, relative), nil
}

// fileReport is one file a client fetched whole, as every client's
// --json report lists it (files.rs's FileReport).
type fileReport struct {
	Path      string `json:"path"`
	Bytes     uint64 `json:"bytes"`
	Sha256    string `json:"sha256"`
	ElapsedUs uint64 `json:"elapsed_us"`
}

// download is a file being written and hashed.
type download struct {
	path      string
	output    string
	file      *os.File
	digest    hash.Hash
	bytes     uint64
	requested time.Time
}

func createDownload(output, path string) (*download, error) {
	if err := os.MkdirAll(filepath.Dir(output), 0o755); err != nil {
		return nil, fmt.Errorf("cannot create %s: %w", filepath.Dir(output), err)
	}
	file, err := os.Create(output)
	if err != nil {
		return nil, fmt.Errorf("cannot create %s: %w", output, err)
	}
	return &download{path: path, output: output, file: file, digest: sha256.New(), requested: time.Now()}, nil
}

func (d *download) Write(p []byte) (int, error) {
	d.digest.Write(p)
	d.bytes += uint64(len(p))
	n, err := d.file.Write(p)
	if err != nil {
		return n, fmt.Errorf("cannot write %s: %w", d.output, err)
	}
	return n, nil
}

// finish closes the file and reports it, timed from the request.
func (d *download) finish() (fileReport, error) {
	if err := d.file.Close(); err != nil {
		return fileReport{}, fmt.Errorf("cannot write %s: %w", d.output, err)
	}
	return fileReport{
		Path:      d.path,
		Bytes:     d.bytes,
		Sha256:    hex.EncodeToString(d.digest.Sum(nil)),
		ElapsedUs: uint64(time.Since(d.requested).Microseconds()),
	}, nil
}

// abandon removes a file that did not come whole.
func (d *download) abandon() {
	d.file.Close()
	os.Remove(d.output)
}

// printJSON prints v as one line of JSON.
func printJSON(v any) error {
	line, err := json.Marshal(v)
	if err != nil {
		return err
	}
	fmt.Println(string(line))
	return nil
}

// anyAddress is the unspecified address of addr's family, port 0.
func anyAddress(addr *net.UDPAddr) *net.UDPAddr {
	if addr.IP.To4() == nil {
		return &net.UDPAddr{IP: net.IPv6unspecified}
	}
	return &net.UDPAddr{IP: net.IPv4zero}
}
