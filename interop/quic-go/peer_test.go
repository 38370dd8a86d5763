package main

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

func TestFlagsMayComeAfterTheURLs(t *testing.T) {
	set := flag.NewFlagSet("client", flag.ContinueOnError)
	dir := set.String("output-dir", "", "")
	insecure := set.Bool("insecure", false, "")
	urls, err := parseInterspersed(set, []string{"https://a/1", "--output-dir", "d", "https://a/2", "--insecure"})
	if err != nil {
		t.Fatal(err)
	}
	if len(urls) != 2 || urls[1] != "https://a/2" || *dir != "d" || !*insecure {
		t.Fatalf("urls %v, output-dir %q, insecure %v", urls, *dir, *insecure)
	}
	if _, err := parseInterspersed(set, []string{"--bogus"}); err == nil {
		t.Fatal("an unknown flag was taken")
	}
}

func TestHQRequestsEndAtCRLFLFOrFINAndOthersAreRefused(t *testing.T) {
	for request, want := range map[string]string{"GET /a/b.bin\r\n": "a/b.bin", "GET /x\n": "x", "GET /x": "x"} {
		if got, err := parseHQRequest([]byte(request)); err != nil || got != want {
			t.Errorf("%q: %q, %v", request, got, err)
		}
	}
	for _, bad := range []string{"PUT /x\r\n", "GET x\r\n", "GET /\r\n", "GET /a b\r\n", string(make([]byte, hqMaxRequest+1))} {
		if _, err := parseHQRequest([]byte(bad)); err == nil {
			t.Errorf("%q was taken", bad)
		}
	}
}

func TestServedPathsStayUnderTheRoot(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "sub", "file"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(outside, []byte("s"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if _, err := fileUnder(root, "/sub/file"); err != nil {
		t.Errorf("a file under the root was refused: %v", err)
	}
	for _, bad := range []string{"../etc/passwd", "sub/../../x", "missing", "sub", "link"} {
		if _, err := fileUnder(root, bad); err == nil {
			t.Errorf("%q was served", bad)
		}
	}
}

func TestDownloadsStayUnderTheirDirectory(t *testing.T) {
	if got, err := outputPath("/downloads", "/sub/f.bin?x=1"); err != nil || got != "/downloads/sub/f.bin" {
		t.Errorf("got %q, %v", got, err)
	}
	for _, bad := range []string{"/../etc/passwd", "/a/../../b", "/", "/./f", "../x"} {
		if _, err := outputPath("/downloads", bad); err == nil {
			t.Errorf("%q was taken", bad)
		}
	}
}

func TestURLsNameOneServerAndAnAddressIsCheckedAsLocalhost(t *testing.T) {
	targets, err := parseTargets([]string{"https://127.0.0.1:4433/a", "https://127.0.0.1:4433/b/c"}, "https")
	if err != nil {
		t.Fatal(err)
	}
	if targets[1].path != "b/c" || targets[0].serverName != localhost {
		t.Fatalf("%+v", targets)
	}
	if v6, err := parseTargets([]string{"https://[::1]/a"}, "https"); err != nil || v6[0].address.Port != 4433 {
		t.Fatalf("%+v, %v", v6, err)
	}
	if _, err := parseTargets([]string{"https://127.0.0.1:1/a", "https://127.0.0.1:2/b"}, "https"); err == nil {
		t.Fatal("two servers were taken")
	}
	if _, err := parseTargets([]string{"quic://127.0.0.1:1/a"}, "https"); err == nil {
		t.Fatal("another scheme was taken")
	}
}

func TestOnlyChaCha20LeavesOneTLS13Suite(t *testing.T) {
	onlyChaCha20()
	if len(cipherSuitesTLS13) != 1 || len(defaultCipherSuitesTLS13) != 1 || defaultCipherSuitesTLS13[0] != 0x1303 {
		t.Fatalf("%d suites, defaults %x", len(cipherSuitesTLS13), defaultCipherSuitesTLS13)
	}
}

func TestTheKeyUpdateIntervalIsQuicGosOwnVariable(t *testing.T) {
	// quic-go's default is 100; a linkname to the wrong symbol reads 0.
	if firstKeyUpdateInterval != 100 {
		t.Fatalf("FirstKeyUpdateInterval reads %d", firstKeyUpdateInterval)
	}
	updateKeysEarly()
	if firstKeyUpdateInterval != clientKeyUpdateAfter {
		t.Fatal("the interval did not change")
	}
}
