//! What an observer of the path sees (issue 11): a relay between client and
//! server records every datagram both ways while a file moves over real
//! loopback sockets. Under TLS no stretch of the file appears in any
//! datagram; under Null it does (so the check can fail).

#![cfg(target_os = "linux")]

use std::io::{Read, Write};
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::Duration;

use sift::blocking::{self, Listener};
use sift::conn::Protection;
use sift::Config;

const STEP_LIMIT: Duration = Duration::from_secs(60);
/// How long a run of the file must be to count as "seen on the wire".
const WINDOW: usize = 16;

/// A UDP relay that forwards between one client and `server`, keeping a
/// copy of every datagram. Stops (and joins its threads) on drop.
struct RecordingRelay {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Vec<u8>>>>,
    stop: Arc<AtomicBool>,
    threads: Vec<thread::JoinHandle<()>>,
}

impl RecordingRelay {
    fn start(server: SocketAddr) -> Self {
        let front = UdpSocket::bind("127.0.0.1:0").unwrap();
        let back = UdpSocket::bind("127.0.0.1:0").unwrap();
        back.connect(server).unwrap();
        for socket in [&front, &back] {
            // Bounds each receive so the threads notice `stop`.
            socket
                .set_read_timeout(Some(Duration::from_millis(20)))
                .unwrap();
        }
        let addr = front.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let client: Arc<Mutex<Option<SocketAddr>>> = Arc::new(Mutex::new(None));
        let (front, back) = (Arc::new(front), Arc::new(back));
        let to_server = {
            let (front, back, seen, stop, client) = (
                front.clone(),
                back.clone(),
                seen.clone(),
                stop.clone(),
                client.clone(),
            );
            thread::spawn(move || {
                let mut buf = vec![0u8; 65_536];
                while !stop.load(Ordering::Relaxed) {
                    if let Ok((n, from)) = front.recv_from(&mut buf) {
                        *client.lock().unwrap() = Some(from);
                        seen.lock().unwrap().push(buf[..n].to_vec());
                        let _ = back.send(&buf[..n]);
                    }
                }
            })
        };
        let to_client = {
            let (seen, stop) = (seen.clone(), stop.clone());
            thread::spawn(move || {
                let mut buf = vec![0u8; 65_536];
                while !stop.load(Ordering::Relaxed) {
                    if let Ok(n) = back.recv(&mut buf) {
                        seen.lock().unwrap().push(buf[..n].to_vec());
                        if let Some(client) = *client.lock().unwrap() {
                            let _ = front.send_to(&buf[..n], client);
                        }
                    }
                }
            })
        };
        Self {
            addr,
            seen,
            stop,
            threads: vec![to_server, to_client],
        }
    }

    fn datagrams(&self) -> Vec<Vec<u8>> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for RecordingRelay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

/// A file an observer would recognise: numbered lines of text.
fn recognisable_file(len: usize) -> Vec<u8> {
    let mut text = Vec::with_capacity(len + 64);
    let mut line = 0u64;
    while text.len() < len {
        text.extend_from_slice(format!("secret line {line:08} of the report\n").as_bytes());
        line += 1;
    }
    text.truncate(len);
    text
}

/// Moves `file` from client to server through a recording relay under
/// `protection`; returns what the server read and every datagram seen.
fn transfer_through_relay(protection: Protection, file: &[u8]) -> (Vec<u8>, Vec<Vec<u8>>) {
    let config = Config {
        protection,
        tls: sift::crypto::tls::process_loopback_config(),
        ..Config::default()
    };
    let listener = Listener::bind("127.0.0.1:0".parse().unwrap(), config.clone()).unwrap();
    let relay = RecordingRelay::start(listener.local_addr());
    let (done_tx, done) = mpsc::channel();
    thread::spawn(move || {
        let read = (|| -> Result<Vec<u8>, String> {
            let connection = listener.accept().map_err(|e| e.to_string())?;
            let mut stream = connection.accept_bi().map_err(|e| e.to_string())?;
            let mut received = Vec::new();
            stream
                .read_to_end(&mut received)
                .map_err(|e| e.to_string())?;
            stream.write_all(b"ok").map_err(|e| e.to_string())?;
            stream.finish().map_err(|e| e.to_string())?;
            let _ = connection.accept_bi(); // until the client closes
            Ok(received)
        })();
        let _ = done_tx.send(read);
    });
    let connection = blocking::connect(relay.addr, config).unwrap();
    let mut stream = connection.open_bi().unwrap();
    stream.write_all(file).unwrap();
    stream.finish().unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    assert_eq!(answer, b"ok");
    connection.close(0, "done");
    let received = done.recv_timeout(STEP_LIMIT).unwrap().unwrap();
    (received, relay.datagrams())
}

/// How many datagrams contain some WINDOW-byte run of `file`.
fn file_windows_on_the_wire(file: &[u8], datagrams: &[Vec<u8>]) -> usize {
    let windows: std::collections::HashSet<&[u8]> = file.windows(WINDOW).collect();
    datagrams
        .iter()
        .filter(|datagram| datagram.windows(WINDOW).any(|w| windows.contains(w)))
        .count()
}

#[test]
fn a_transferred_file_never_appears_on_the_wire_under_tls() {
    let file = recognisable_file(300_000);
    let (received, datagrams) = transfer_through_relay(Protection::Tls, &file);
    assert_eq!(received, file);
    // The file crossed the relay (in however many datagrams path MTU
    // discovery made of it).
    let on_wire: usize = datagrams.iter().map(Vec::len).sum();
    assert!(
        on_wire > file.len(),
        "{on_wire} bytes in {} datagrams",
        datagrams.len()
    );
    assert_eq!(
        file_windows_on_the_wire(&file, &datagrams),
        0,
        "datagrams carrying {WINDOW}-byte runs of the file"
    );
    // Not even the text's fixed words leak.
    assert!(!datagrams
        .iter()
        .any(|d| d.windows(11).any(|w| w == b"secret line")));
}

#[test]
fn the_recording_relay_does_see_a_null_protected_file() {
    let file = recognisable_file(100_000);
    let (received, datagrams) = transfer_through_relay(Protection::Null, &file);
    assert_eq!(received, file);
    assert!(file_windows_on_the_wire(&file, &datagrams) > 50);
}
