//! h3 over sift end to end, through the adapter alone: request and
//! response bodies cross whole in both directions, and a stream either
//! end abandons reaches the other end's h3 with the code it was given
//! (RESET_STREAM and STOP_SENDING carried by sift).

use bytes::{Buf, Bytes};
use h3::error::{Code, StreamError};
use sift::crypto::{ServerIdentity, TlsConfig};
use sift::tokio::Endpoint;
use sift::Config;
use tokio::sync::oneshot;

type Error = Box<dyn std::error::Error + Send + Sync>;
type Server = h3::server::Connection<sift_h3::Connection, Bytes>;
type Requests = h3::client::SendRequest<sift_h3::OpenStreams, Bytes>;

/// A server endpoint and an h3 client connected to it over sift (ALPN
/// h3, sift/1 between two sift ends); `serve` runs on the server's first
/// connection.
async fn connected<F, Fut>(serve: F) -> Result<(Requests, Endpoint), Error>
where
    F: FnOnce(Server) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let identity = ServerIdentity::self_signed(&["localhost"])?;
    let tls = TlsConfig {
        alpn_protocols: vec![sift_h3::ALPN.to_vec()],
        ..TlsConfig::loopback(identity)
    };
    let config = Config {
        tls,
        ..Config::default()
    };
    let server = Endpoint::server("127.0.0.1:0".parse()?, config.clone())?;
    let address = server.local_addr();
    tokio::spawn(async move {
        let Some(connection) = server.accept().await else {
            return;
        };
        if let Ok(h3) = Server::new(sift_h3::Connection::new(connection)).await {
            serve(h3).await;
        }
    });
    let client = Endpoint::client("127.0.0.1:0".parse()?, config)?;
    let connection = client.connect(address, "localhost").await?;
    let (mut driver, requests) = h3::client::new(sift_h3::Connection::new(connection)).await?;
    tokio::spawn(async move { std::future::poll_fn(|cx| driver.poll_close(cx)).await });
    Ok((requests, client))
}

/// The bytes of a body, `len` long, that no two offsets repeat within a
/// frame.
fn body(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

#[tokio::test]
async fn a_request_body_comes_back_whole_in_the_response() -> Result<(), Error> {
    let (mut requests, _client) = connected(|mut h3| async move {
        while let Ok(Some(resolver)) = h3.accept().await {
            let Ok((_, mut stream)) = resolver.resolve_request().await else {
                return;
            };
            let mut echo = Vec::new();
            while let Ok(Some(mut data)) = stream.recv_data().await {
                echo.extend_from_slice(&data.copy_to_bytes(data.remaining()));
            }
            let _ = stream.send_response(http::Response::new(())).await;
            for chunk in echo.chunks(10_000) {
                let _ = stream.send_data(Bytes::copy_from_slice(chunk)).await;
            }
            let _ = stream.finish().await;
        }
    })
    .await?;
    let sent = body(1_000_003);
    let request = http::Request::post("https://localhost/echo").body(())?;
    let mut stream = requests.send_request(request).await?;
    for chunk in sent.chunks(30_000) {
        stream.send_data(Bytes::copy_from_slice(chunk)).await?;
    }
    stream.finish().await?;
    assert_eq!(stream.recv_response().await?.status(), 200);
    let mut echoed = Vec::new();
    while let Some(mut data) = stream.recv_data().await? {
        echoed.extend_from_slice(&data.copy_to_bytes(data.remaining()));
    }
    assert_eq!(echoed.len(), sent.len());
    assert!(echoed == sent, "the echo differs from the request body");
    Ok(())
}

#[tokio::test]
async fn a_request_the_client_resets_ends_at_the_server_with_the_clients_code() -> Result<(), Error>
{
    let (resolved, request_seen) = oneshot::channel();
    let (seen, seen_by_server) = oneshot::channel();
    let (mut requests, _client) = connected(|mut h3| async move {
        let Ok(Some(resolver)) = h3.accept().await else {
            return;
        };
        let Ok((_, mut stream)) = resolver.resolve_request().await else {
            return;
        };
        let _ = resolved.send(());
        let ended = loop {
            match stream.recv_data().await {
                Ok(Some(_)) => continue,
                other => break other.map(|_| ()),
            }
        };
        let _ = seen.send(ended);
    })
    .await?;
    let request = http::Request::post("https://localhost/upload").body(())?;
    let mut stream = requests.send_request(request).await?;
    stream.send_data(Bytes::from(body(5_000))).await?;
    // Reset only once the server has the request: a reset that overtakes
    // the headers cancels a request the server never sees.
    request_seen.await?;
    stream.stop_stream(Code::H3_REQUEST_CANCELLED);
    match seen_by_server.await? {
        Err(StreamError::RemoteTerminate { code }) => {
            assert_eq!(code, Code::H3_REQUEST_CANCELLED)
        }
        other => panic!("the server saw {other:?}, not the client's reset"),
    }
    Ok(())
}

#[tokio::test]
async fn a_response_the_client_stops_fails_the_servers_writes_with_the_clients_code(
) -> Result<(), Error> {
    let (seen, seen_by_server) = oneshot::channel();
    let (mut requests, _client) = connected(|mut h3| async move {
        let Ok(Some(resolver)) = h3.accept().await else {
            return;
        };
        let Ok((_, mut stream)) = resolver.resolve_request().await else {
            return;
        };
        let _ = stream.send_response(http::Response::new(())).await;
        // Far more than sift's windows and buffers hold: the writes must
        // fail once the client's STOP_SENDING arrives.
        let chunk = Bytes::from(body(64 * 1024));
        let mut ended = Ok(());
        for _ in 0..4096 {
            if let Err(error) = stream.send_data(chunk.clone()).await {
                ended = Err(error);
                break;
            }
        }
        let _ = seen.send(ended);
    })
    .await?;
    let request = http::Request::get("https://localhost/endless").body(())?;
    let mut stream = requests.send_request(request).await?;
    stream.finish().await?;
    assert_eq!(stream.recv_response().await?.status(), 200);
    stream.stop_sending(Code::H3_REQUEST_REJECTED);
    match seen_by_server.await? {
        Err(StreamError::RemoteTerminate { code }) => {
            assert_eq!(code, Code::H3_REQUEST_REJECTED)
        }
        other => panic!("the server's writes ended with {other:?}, not the client's stop"),
    }
    Ok(())
}
