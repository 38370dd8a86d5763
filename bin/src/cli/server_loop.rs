//! How `sift-server` spends threads: a fixed few, whatever the clients do.
//!
//! Every client connection and every stream is a task, over the async API
//! (`sift::tokio`). Each worker endpoint's driver (`--workers`,
//! `Endpoint::bind_workers_on`: one `SO_REUSEPORT` socket each, datagrams
//! steered by connection ID) runs on a thread of its own
//! ([`DriverThreads`]: a current-thread runtime each), so a busy driver
//! stays on its thread rather than hopping between the threads of a shared
//! runtime. A client that arrives while its worker serves no other is
//! served on that thread too, with nothing handed between threads; the
//! rest run on one serving runtime of a bounded number of threads
//! (`--threads`, default: half the cores, at least one), so under many
//! clients the packet path never queues behind thousands of stream tasks
//! ([`Placement`]).
//! File-system work that would wait for the disk runs on a blocking pool,
//! the serving runtime's (capped at `--io-threads`) or one thread per
//! worker for its lone client, one 64 KiB chunk per call, so a download
//! waiting for the disk holds no thread that serves tasks either.
//!
//! Why tasks and not a pool of blocking threads: a blocking stream holds
//! its thread while it waits, for a request that is slow to arrive, for
//! the client's flow-control credit, or for its next upload bytes. With a
//! thread per stream, 1000 clients × 100 streams would be 100 000 threads
//! (each with its stack); with a bounded pool of blocking threads, as many
//! slow clients as the pool has threads would starve everyone else. A
//! waiting task is a parked future of a few kilobytes and holds no thread:
//! the server has at most 1 + 2 × `--workers` + `--threads` +
//! `--io-threads` threads, fixed at start.
//!
//! What bounds the rest:
//! - Streams served at once: `--max-streams-per-client` per connection and
//!   `--max-streams` in all. A stream past the client's cap is not
//!   accepted until a place frees: it waits in the transport, which
//!   already bounds how many streams a client may open, and costs no task.
//!   Past the server's cap each connection holds at most one accepted
//!   stream waiting for a place; its request deadline starts once served.
//! - A request must arrive whole within `--request-timeout` of its stream
//!   being accepted (slowloris); otherwise the stream is answered with an
//!   error (or reset, if the client takes no answer), freed, and logged.
//!
//! A client's failure ends its own tasks only.
//!
//! The client's ALPN picks the protocol of all its streams: `sift/1`
//! (sift's file protocol) or `hq-interop` (HTTP/0.9, for any QUIC client:
//! downloads only).

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::Context;
use sift::tokio::{Connection, Endpoint};
use tokio::runtime::Handle;
use tokio::sync::{oneshot, OwnedSemaphorePermit, Semaphore};

use super::format;
use super::stream::AsyncSiftStream;
use crate::transfer::{hq, FileServer, SenderReport, ServedConnection, TransferRecord};

/// The ALPNs `sift-server` offers, most preferred first.
pub fn server_alpns() -> Vec<Vec<u8>> {
    vec![sift::crypto::tls::DEFAULT_ALPN.to_vec(), hq::ALPN.to_vec()]
}

/// The application protocol of one connection's streams.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Protocol {
    /// sift's own file protocol (also under Null protection, which has no
    /// ALPN).
    Sift,
    /// HTTP/0.9 (`hq-interop`).
    Hq,
}

impl Protocol {
    fn of(connection: &Connection) -> Self {
        match connection.alpn_protocol() {
            Some(alpn) if alpn == hq::ALPN => Protocol::Hq,
            _ => Protocol::Sift,
        }
    }
}

/// Where transfer lines go (stdout for `sift-server`).
pub type LineSink = Arc<dyn Fn(&str) + Send + Sync>;

/// Streams served at once per client connection, by default.
pub const DEFAULT_MAX_STREAMS_PER_CLIENT: usize = 16;
/// Streams served at once by the whole server, by default.
pub const DEFAULT_MAX_STREAMS: usize = 4096;

/// Bytes a read-only server lets a client's stream send: four of the
/// largest request (a sift request frame or an hq-interop request line,
/// 4096 bytes each).
pub const REQUEST_STREAM_WINDOW: u64 = 16 * 1024;
/// Bytes a read-only server lets one client send across its streams.
pub const REQUEST_CONNECTION_WINDOW: u64 = 64 * 1024;

/// Receive windows for a server that takes no uploads: the clients send
/// only requests, so they are granted room for requests, not the 6 MiB a
/// connection starts with and the 64 MiB auto-tuning may grow it to
/// (`StreamConfig::default`), which any client could make the server hold
/// by sending and never letting it read.
pub fn grant_requests_only(streams: &mut sift::stream::StreamConfig) {
    streams.initial_max_stream_data = REQUEST_STREAM_WINDOW;
    streams.max_stream_receive_window = REQUEST_STREAM_WINDOW;
    streams.initial_max_data = REQUEST_CONNECTION_WINDOW;
    streams.max_receive_window = REQUEST_CONNECTION_WINDOW;
}

/// The one line per transfer the server prints, `key=value` fields:
/// client, op, path, bytes, time, goodput, result (and why, on failure).
pub fn transfer_line(client: SocketAddr, record: &TransferRecord) -> String {
    let mut line = format!(
        "client={client} op={} path={:?} bytes={} time={:.3}s goodput={} result={}",
        record.verb,
        record.path,
        record.bytes,
        record.elapsed.as_secs_f64(),
        format::rate(record.goodput_bps()).replace(' ', ""),
        record.result().replace(' ', "-"),
    );
    if !record.detail.is_empty() {
        line.push_str(&format!(" reason={:?}", record.detail));
    }
    line
}

/// The connection's sending time as a `sender=` field for a transfer line,
/// in percent: ` sender=busy:35,window:0,pacer:0,credit:37,application:28`
/// (what held the server's side back: `Stats::send_times`). Empty when
/// nothing was charged, as for an upload, where the server only receives.
pub fn sender_field(times: &sift::conn::SendTimes) -> String {
    super::report::send_time_shares(times).map_or_else(String::new, |shares| {
        let shares: Vec<String> = shares
            .iter()
            .map(|(what, share)| format!("{what}:{share:.0}"))
            .collect();
        format!(" sender={}", shares.join(","))
    })
}

/// The connection's ECN as an `ecn=` field for a transfer line: the
/// validation state of the server's path (` ecn=capable`), with the
/// reason after a colon when it failed (` ecn=failed:missing-counts`).
pub fn ecn_field(ecn: &sift::conn::ecn::EcnStats) -> String {
    let failure = match (ecn.state, ecn.failure) {
        (sift::conn::EcnState::Failed, Some(failure)) => serde_json::to_value(failure)
            .ok()
            .and_then(|v| v.as_str().map(|s| format!(":{s}")))
            .unwrap_or_default(),
        _ => String::new(),
    };
    format!(" ecn={}{failure}", ecn.state.name())
}

impl ServedConnection for Connection {
    fn sender_report(&self) -> Option<SenderReport> {
        Some(SenderReport::from_stats(&self.stats()))
    }

    fn use_controller(&self, cc: sift_cc::CcConfig) -> Result<(), String> {
        self.set_congestion_control(cc).map_err(|e| e.to_string())
    }

    fn client_key(&self) -> Option<sift::crypto::Fingerprint> {
        self.peer_certificate_fingerprint()
    }

    fn wait_for_handshake(&self) -> Pin<Box<dyn Future<Output = bool> + Send + '_>> {
        Box::pin(async move { self.handshake_completed().await.is_ok() })
    }
}

/// What every worker of a server shares: the files and the caps on
/// streams served at once.
pub struct Service {
    files: FileServer,
    max_streams_per_client: usize,
    /// Places for streams across the whole server (`--max-streams`).
    streams: Arc<Semaphore>,
}

impl Service {
    /// Serves `files`, at most `max_streams_per_client` streams of one
    /// connection and `max_streams` in all at once (each at least 1).
    pub fn new(files: FileServer, max_streams_per_client: usize, max_streams: usize) -> Self {
        Self {
            files,
            max_streams_per_client: max_streams_per_client.max(1),
            streams: Arc::new(Semaphore::new(max_streams.max(1))),
        }
    }

    /// The files served.
    pub fn files(&self) -> &FileServer {
        &self.files
    }
}

/// Where a worker runs the tasks that serve its clients' streams.
#[derive(Clone, Debug)]
pub enum Placement {
    /// On the runtime that accepts them.
    Here,
    /// The accepting runtime is the worker's own thread, beside its
    /// driver ([`DriverThreads`]). A client that arrives while the worker
    /// serves no other is served there too; the rest on `pool`, the
    /// serving threads.
    ///
    /// Why: a lone download's file reads and its packets then share one
    /// thread, and nothing is handed between threads. Served from the pool,
    /// every refill of the send buffer woke the serving thread and every
    /// refill woke the driver back, each wake-up 100–250 µs on this
    /// project's two-core VM; on the worker's thread a loopback GiB moved
    /// 12% faster. Under many clients the drivers are the busy threads and
    /// the pool takes the file work off them: every client on its worker's
    /// thread made 1000 concurrent 1 MB downloads a quarter slower, with
    /// half again the memory (`interop/results/2026-11-28-lone-client`).
    LoneOnWorker {
        /// The serving threads' runtime.
        pool: Handle,
    },
}

/// Spawns the tasks that serve one worker's clients where its
/// [`Placement`] says, counting the clients it serves.
pub struct Placer {
    placement: Placement,
    /// One clone per client being served, besides this one.
    served: Arc<()>,
}

impl Placer {
    pub fn new(placement: Placement) -> Self {
        Self {
            placement,
            served: Arc::new(()),
        }
    }

    /// Spawns `task`, which serves one client, from a task of the
    /// accepting runtime.
    pub fn spawn(
        &self,
        task: impl Future<Output = ()> + Send + 'static,
    ) -> tokio::task::JoinHandle<()> {
        let mark = Arc::clone(&self.served);
        // Only a guide: clients that end meanwhile on other threads make
        // it stale, never unsound.
        let alone = Arc::strong_count(&self.served) == 2;
        let task = async move {
            task.await;
            drop(mark);
        };
        match &self.placement {
            Placement::LoneOnWorker { pool } if !alone => pool.spawn(task),
            _ => tokio::spawn(task),
        }
    }
}

/// Accepts clients on `endpoint` until it stops, each served by a task of
/// its own placed as `placement` says, one line per transfer to `lines`.
/// Returns why it stopped.
pub async fn serve(
    endpoint: Endpoint,
    service: Arc<Service>,
    lines: LineSink,
    placement: Placement,
) -> anyhow::Error {
    let placer = Placer::new(placement);
    while let Some(connection) = endpoint.accept().await {
        placer.spawn(serve_connection(
            connection,
            Arc::clone(&service),
            Arc::clone(&lines),
        ));
    }
    anyhow::anyhow!("the server socket on {} stopped", endpoint.local_addr())
}

/// One current-thread runtime per worker endpoint's driver, each on a
/// thread of its own named `sift-worker N`: bind the workers on
/// [`DriverThreads::handles`] (`Endpoint::bind_workers_on`).
///
/// On one multi-threaded runtime of `--workers` threads, the one busy
/// driver of a single download hopped between the threads, which woke each
/// other for it about 5 000 times per GiB; with a thread each, a loopback
/// GiB cost the server 0.84 CPU-s rather than 0.89
/// (`interop/results/2026-11-27-pacing-burst`).
pub struct DriverThreads {
    handles: Vec<Handle>,
    stops: Vec<oneshot::Sender<()>>,
    threads: Vec<JoinHandle<()>>,
}

impl DriverThreads {
    /// Starts `workers` threads; [`DriverThreads::shutdown`] gives their
    /// tasks `grace` to end.
    pub fn start(workers: usize, grace: Duration) -> anyhow::Result<Self> {
        let mut drivers = Self {
            handles: Vec::with_capacity(workers),
            stops: Vec::with_capacity(workers),
            threads: Vec::with_capacity(workers),
        };
        for index in 0..workers {
            // Its blocking thread reads files for the client the worker
            // serves alone ([`Placement::LoneOnWorker`]).
            let runtime = tokio::runtime::Builder::new_current_thread()
                .max_blocking_threads(1)
                .thread_name(format!("sift-files {index}"))
                .enable_all()
                .build()
                .context("starting a worker's runtime")?;
            let (stop, stopped) = oneshot::channel::<()>();
            drivers.handles.push(runtime.handle().clone());
            drivers.stops.push(stop);
            let thread = std::thread::Builder::new()
                .name(format!("sift-worker {index}"))
                .spawn(move || {
                    // Until `shutdown`, or until the owner is dropped.
                    let _ = runtime.block_on(stopped);
                    runtime.shutdown_timeout(grace);
                })
                .context("starting a worker's thread")?;
            drivers.threads.push(thread);
        }
        Ok(drivers)
    }

    /// A handle on each worker's runtime, in worker order.
    pub fn handles(&self) -> &[Handle] {
        &self.handles
    }

    /// Stops every driver (their sockets close) and waits for the threads.
    pub fn shutdown(self) {
        for stop in self.stops {
            let _ = stop.send(());
        }
        for thread in self.threads {
            let _ = thread.join();
        }
    }
}

/// Serves `service` on `addr` from a thread of its own (one runtime
/// thread, two for files), for a tool that serves beside other work
/// (`sift-demo`). Returns the bound address once the endpoint is up.
pub fn spawn_server(
    addr: SocketAddr,
    config: sift::Config,
    service: Service,
    lines: LineSink,
) -> anyhow::Result<SocketAddr> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .max_blocking_threads(2)
        .enable_all()
        .build()
        .context("starting the server's runtime")?;
    let endpoint = runtime
        .block_on(async { Endpoint::server(addr, config) })
        .with_context(|| format!("cannot listen on {addr}"))?;
    let local = endpoint.local_addr();
    std::thread::Builder::new()
        .name("sift server".into())
        .spawn(move || {
            let stopped =
                runtime.block_on(serve(endpoint, Arc::new(service), lines, Placement::Here));
            tracing::warn!(error = %stopped, "the server stopped");
        })
        .context("starting the server thread")?;
    Ok(local)
}

/// Accepts the client's streams while it stays connected, each served by
/// a task once the caps give it a place.
async fn serve_connection(connection: Connection, service: Arc<Service>, lines: LineSink) {
    let client = connection.remote_address();
    let stats = connection.stats();
    let protocol = Protocol::of(&connection);
    tracing::info!(
        %client,
        version = %stats.version,
        ?protocol,
        corruption_notices = stats.corruption_notices_negotiated,
        "client connected"
    );
    let places = Arc::new(Semaphore::new(service.max_streams_per_client));
    let reason = loop {
        // The client's place first, then its stream: a stream over the
        // client's cap waits in the transport, not as a task. A place
        // under the server's cap is taken only for a stream that came,
        // so an idle client holds none. A client that leaves meanwhile
        // ends either wait.
        let client_place = tokio::select! {
            place = take_place(&places) => place,
            reason = connection.closed() => break reason,
        };
        let (send, recv) = match connection.accept_bi().await {
            Ok(halves) => halves,
            Err(reason) => break reason,
        };
        let server_place = tokio::select! {
            place = take_place(&service.streams) => place,
            reason = connection.closed() => break reason,
        };
        tracing::debug!(%client, stream = %send.id(), "stream has its place");
        let stream = AsyncSiftStream::new((send, recv));
        let permits = (client_place, server_place);
        tokio::spawn(serve_stream(
            stream,
            protocol,
            connection.clone(),
            Arc::clone(&service),
            Arc::clone(&lines),
            permits,
        ));
    };
    tracing::info!(%client, %reason, "client gone");
}

/// A place under a cap on streams served at once.
async fn take_place(places: &Arc<Semaphore>) -> OwnedSemaphorePermit {
    Arc::clone(places)
        .acquire_owned()
        .await
        .expect("the stream caps' semaphores are never closed")
}

/// Serves one stream to its end and logs its line; the places it held
/// free when it returns, and dropping the stream frees its transport state.
async fn serve_stream(
    mut stream: AsyncSiftStream,
    protocol: Protocol,
    connection: Connection,
    service: Arc<Service>,
    lines: LineSink,
    _places: (OwnedSemaphorePermit, OwnedSemaphorePermit),
) {
    let record = match protocol {
        Protocol::Sift => service.files.serve(&mut stream, &connection).await,
        Protocol::Hq => service.files.serve_hq(&mut stream).await,
    };
    let mut line = transfer_line(connection.remote_address(), &record);
    let stats = connection.stats();
    line.push_str(&sender_field(&stats.send_times));
    line.push_str(&ecn_field(&stats.ecn));
    lines(&line);
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_read_only_server_grants_room_for_requests_not_uploads() {
        let mut streams = sift::stream::StreamConfig::default();
        assert_eq!(streams.max_receive_window, 64 * 1024 * 1024);
        super::grant_requests_only(&mut streams);
        let largest_request =
            crate::transfer::hq::MAX_REQUEST_LEN.max(crate::transfer::frame::MAX_FRAME_LEN) as u64;
        assert!(streams.initial_max_stream_data >= largest_request);
        assert!(streams.max_receive_window <= 64 * 1024);
        assert!(streams.max_stream_receive_window <= streams.max_receive_window);
        assert!(streams.initial_max_data <= streams.max_receive_window);
    }

    use super::*;
    use crate::transfer::Status;
    use std::time::Duration;

    #[test]
    fn a_transfer_line_names_client_op_path_bytes_time_goodput_result() {
        let record = TransferRecord {
            verb: "GET",
            path: "dir/f.bin".into(),
            bytes: 5_000_000,
            elapsed: Duration::from_secs(2),
            status: Some(Status::Ok),
            detail: String::new(),
        };
        // 5 000 000 B · 8 / 2 s = 20 Mb/s
        assert_eq!(
            transfer_line("127.0.0.1:5000".parse().unwrap(), &record),
            "client=127.0.0.1:5000 op=GET path=\"dir/f.bin\" bytes=5000000 time=2.000s goodput=20.00Mb/s result=ok"
        );
        let refused = TransferRecord {
            status: Some(Status::RefusedPath),
            detail: "`..` is not allowed".into(),
            ..record
        };
        assert!(transfer_line("127.0.0.1:5000".parse().unwrap(), &refused)
            .ends_with("result=refused-path reason=\"`..` is not allowed\""));
    }

    #[test]
    fn a_lone_client_is_served_on_its_workers_thread_and_the_rest_on_the_pool() {
        let pool = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("the pool")
            .build()
            .unwrap();
        // The worker's runtime runs on this test's thread.
        let worker = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let here = std::thread::current().name().map(str::to_owned);
        let thread_name = || std::thread::current().name().map(str::to_owned);
        worker.block_on(async {
            let placer = Placer::new(Placement::LoneOnWorker {
                pool: pool.handle().clone(),
            });
            let (first_ran, ran) = oneshot::channel();
            let (end_first, ended) = oneshot::channel::<()>();
            let first = placer.spawn(async move {
                first_ran.send(thread_name()).unwrap();
                let _ = ended.await;
            });
            assert_eq!(ran.await.unwrap(), here, "the first client, alone");
            let (second_ran, ran) = oneshot::channel();
            placer
                .spawn(async move { second_ran.send(thread_name()).unwrap() })
                .await
                .unwrap();
            assert_eq!(ran.await.unwrap().as_deref(), Some("the pool"));
            end_first.send(()).unwrap();
            first.await.unwrap();
            let (third_ran, ran) = oneshot::channel();
            placer.spawn(async move { third_ran.send(thread_name()).unwrap() });
            assert_eq!(ran.await.unwrap(), here, "alone again");
        });
    }

    #[test]
    fn placed_here_every_client_runs_on_the_accepting_runtime() {
        let worker = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let here = std::thread::current().name().map(str::to_owned);
        worker.block_on(async {
            let placer = Placer::new(Placement::Here);
            let (end_first, ended) = oneshot::channel::<()>();
            let _first = placer.spawn(async move {
                let _ = ended.await;
            });
            let (second_ran, ran) = oneshot::channel();
            placer.spawn(async move {
                second_ran
                    .send(std::thread::current().name().map(str::to_owned))
                    .unwrap()
            });
            assert_eq!(ran.await.unwrap(), here);
            end_first.send(()).unwrap();
        });
    }

    #[test]
    fn the_sender_field_gives_each_share_in_percent_or_nothing() {
        let times = sift::conn::SendTimes {
            busy_us: 350,
            credit_limited_us: 370,
            app_limited_us: 280,
            ..Default::default()
        };
        assert_eq!(
            sender_field(&times),
            " sender=busy:35,window:0,pacer:0,credit:37,application:28"
        );
        assert_eq!(sender_field(&Default::default()), "");
    }

    #[test]
    fn the_ecn_field_gives_the_state_and_why_it_failed() {
        use sift::conn::ecn::{EcnFailure, EcnStats};
        use sift::conn::EcnState;
        let capable = EcnStats {
            state: EcnState::Capable,
            ..Default::default()
        };
        assert_eq!(ecn_field(&capable), " ecn=capable");
        let failed = EcnStats {
            state: EcnState::Failed,
            failure: Some(EcnFailure::MissingCounts),
            ..Default::default()
        };
        assert_eq!(ecn_field(&failed), " ecn=failed:missing-counts");
    }
}
