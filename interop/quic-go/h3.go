package main

// HTTP/3 on quic-go's http3 package: the server and client of the
// matrix's http3 case, as interop/src/peers/h3.rs serves and fetches
// (GET of files under a root: 200 with content-length, 404 outside it or
// for what is not a file, 405 for other methods; every URL of one call
// on one connection, concurrently).

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
)

func runH3Server(args []string) error {
	set := flag.NewFlagSet("quic-go-h3-server", flag.ContinueOnError)
	listen := set.String("listen", "127.0.0.1:4433", "address and UDP port to listen on")
	root := set.String("root", "", "directory whose files are served")
	certFile := set.String("cert", "", "certificate chain to present (PEM)")
	keyFile := set.String("key", "", "its private key (PEM)")
	if _, err := parseInterspersed(set, args); err != nil {
		return err
	}
	if err := required(set, "root"); err != nil {
		return err
	}
	if info, err := os.Stat(*root); err != nil || !info.IsDir() {
		return fmt.Errorf("--root %s is not a directory", *root)
	}
	cert, _, err := serverCertificate(*certFile, *keyFile, scratchDir("quic-go-h3-server"))
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
	server := &http3.Server{
		TLSConfig: http3.ConfigureTLSConfig(serverTLS(cert, http3.NextProtoH3)),
		QUICConfig: &quic.Config{
			Versions:       []quic.Version{quic.Version1},
			MaxIdleTimeout: idleTimeout,
			Tracer:         tracer(nil),
		},
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			serveH3File(w, r, *root)
		}),
	}
	fmt.Fprintf(os.Stderr, "listening on %s\n", udp.LocalAddr())
	return server.Serve(udp)
}

func serveH3File(w http.ResponseWriter, r *http.Request, root string) {
	if r.Method != http.MethodGet {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	full, err := fileUnder(root, r.URL.Path)
	if err != nil {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	file, err := os.Open(full)
	if err != nil {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	defer file.Close()
	info, err := file.Stat()
	if err != nil {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Length", strconv.FormatInt(info.Size(), 10))
	w.WriteHeader(http.StatusOK)
	if _, err := io.Copy(w, file); err != nil {
		fmt.Fprintf(os.Stderr, "a response failed: %s: %v\n", r.URL.Path, err)
	}
}

// h3Report is the client's report (h3.rs's Report).
type h3Report struct {
	Stack   string       `json:"stack"`
	Version string       `json:"version"`
	ALPN    string       `json:"alpn"`
	Files   []fileReport `json:"files"`
}

func runH3Client(args []string) error {
	set := flag.NewFlagSet("quic-go-h3-client", flag.ContinueOnError)
	outputDir := set.String("output-dir", "", "where the files go, each under its URL's path")
	ca := set.String("ca", "", "trust certificates chaining to these roots (PEM)")
	insecure := set.Bool("insecure", false, "accept any certificate")
	serverName := set.String("server-name", "", "name sent as SNI and checked with --ca [default: the URL's host]")
	asJSON := set.Bool("json", false, "print one JSON object (stack, version, alpn, files)")
	urls, targets, err := clientTargets(set, args, ca, insecure)
	if err != nil {
		return err
	}
	name := targets[0].serverName
	if *serverName != "" {
		name = *serverName
	}
	tlsConf, err := clientTLS(*ca, *insecure, name, http3.NextProtoH3)
	if err != nil {
		return err
	}
	var (
		mutex sync.Mutex
		conn  *quic.Conn
	)
	transport := &http3.Transport{
		TLSClientConfig: tlsConf,
		QUICConfig: &quic.Config{
			Versions:       []quic.Version{quic.Version1},
			MaxIdleTimeout: idleTimeout,
			Tracer:         tracer(nil),
		},
		// quic-go's own dial, keeping the connection to report its version.
		Dial: func(ctx context.Context, addr string, tlsCfg *tls.Config, cfg *quic.Config) (*quic.Conn, error) {
			dialed, err := quic.DialAddrEarly(ctx, addr, tlsCfg, cfg)
			if err == nil {
				mutex.Lock()
				conn = dialed
				mutex.Unlock()
			}
			return dialed, err
		},
	}
	defer transport.Close()
	files := make([]fileReport, len(targets))
	errs := make([]error, len(targets))
	var wait sync.WaitGroup
	for index, url := range urls {
		wait.Add(1)
		go func() {
			defer wait.Done()
			files[index], errs[index] = fetchH3(transport, url, targets[index].path, *outputDir)
		}()
	}
	wait.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	report := h3Report{Stack: "quic-go", Version: versionName(quic.Version1), ALPN: http3.NextProtoH3, Files: files}
	mutex.Lock()
	if conn != nil {
		report.Version = versionName(conn.ConnectionState().Version)
	}
	mutex.Unlock()
	if *asJSON {
		return printJSON(report)
	}
	for _, file := range report.Files {
		fmt.Printf("%s  %d bytes  sha256 %s\n", file.Path, file.Bytes, file.Sha256)
	}
	fmt.Fprintf(os.Stderr, "%d files over quic-go (%s, h3)\n", len(files), report.Version)
	return nil
}

func fetchH3(transport *http3.Transport, url, path, dir string) (fileReport, error) {
	output, err := outputPath(dir, path)
	if err != nil {
		return fileReport{}, err
	}
	d, err := createDownload(output, "/"+path)
	if err != nil {
		return fileReport{}, err
	}
	request, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		d.abandon()
		return fileReport{}, err
	}
	response, err := transport.RoundTrip(request)
	if err != nil {
		d.abandon()
		return fileReport{}, fmt.Errorf("/%s: %w", path, err)
	}
	defer response.Body.Close()
	if response.StatusCode != http.StatusOK {
		d.abandon()
		return fileReport{}, fmt.Errorf("/%s: the server answered %s", path, response.Status)
	}
	if _, err := io.Copy(d, response.Body); err != nil {
		d.abandon()
		return fileReport{}, fmt.Errorf("/%s: %w", path, err)
	}
	if response.ContentLength >= 0 && uint64(response.ContentLength) != d.bytes {
		d.abandon()
		return fileReport{}, fmt.Errorf("/%s: %d bytes announced, %d received", path, response.ContentLength, d.bytes)
	}
	return d.finish()
}
