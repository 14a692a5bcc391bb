//! The `/metrics` endpoint of `watch --metrics`: hyper's HTTP/1 server on the address given.
//!
//! A scraper is untrusted like any peer: a bounded number of connections at once, a deadline on
//! reading a request's headers, a cap on how long one connection may live, and a small request
//! buffer. Idle peers must not lock a scraper out: a connection that has sent nothing gets a
//! short deadline for its first byte, and when every slot is taken a new connection evicts the
//! oldest of those that have still sent nothing (a scraper sends its request at once). Only `GET`/`HEAD /metrics` is served; the
//! format follows the scraper's `Accept` (OpenMetrics when it asks for
//! `application/openmetrics-text`, else the Prometheus text format 0.0.4).

use super::metrics::Metrics;
use http_body_util::Full;
use hyper::body::Bytes;
use hyper::header::{HeaderValue, ACCEPT, ALLOW, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// Connections served at once; past it an idle one is evicted, or the new one closed.
pub const MAX_CONNECTIONS: usize = 64;
/// The time a client has to send a request's headers.
const HEADER_DEADLINE: Duration = Duration::from_secs(10);
/// The time a connection has to send its first byte.
const FIRST_BYTE: Duration = Duration::from_secs(2);
/// How long a new connection waits for the slot an evicted idle one gives back.
const EVICTION_WAIT: Duration = Duration::from_secs(1);
/// The longest one connection is kept (a keep-alive scraper reconnects after it).
const CONNECTION_LIFETIME: Duration = Duration::from_secs(300);

const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Binds `addr` now (so a taken port fails the command before the watch starts) and serves
/// `metrics` on it from a task of the current runtime.
pub fn serve(addr: SocketAddr, metrics: Arc<Metrics>) -> anyhow::Result<ServerHandle> {
    let listener = std::net::TcpListener::bind(addr)
        .and_then(|l| l.set_nonblocking(true).map(|()| l))
        .and_then(tokio::net::TcpListener::from_std)
        .map_err(|e| anyhow::anyhow!("--metrics {addr}: {e}"))?;
    let local = listener.local_addr()?;
    let task = tokio::spawn(accept_loop(listener, metrics));
    Ok(ServerHandle { local, task })
}

/// The running server; dropping it stops accepting.
pub struct ServerHandle {
    local: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl ServerHandle {
    /// The address bound (the port the system chose for `:0`).
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The connections that have sent nothing yet, oldest first, each with its way to be told to
/// close.
#[derive(Default)]
struct Idle {
    next: u64,
    waiting: std::collections::VecDeque<(u64, Arc<tokio::sync::Notify>)>,
}

type SharedIdle = Arc<std::sync::Mutex<Idle>>;

fn idle_lock(idle: &SharedIdle) -> std::sync::MutexGuard<'_, Idle> {
    idle.lock().unwrap_or_else(|e| e.into_inner())
}

async fn accept_loop(listener: tokio::net::TcpListener, metrics: Arc<Metrics>) {
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    let idle = SharedIdle::default();
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            // Out of descriptors and the like: wait rather than spin, then go on.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let slot = match Arc::clone(&slots).try_acquire_owned() {
            Ok(slot) => slot,
            Err(_) => {
                let Some((_, evict)) = idle_lock(&idle).waiting.pop_front() else {
                    continue; // every slot is busy serving: the stream is dropped, closed
                };
                evict.notify_one();
                let freed = Arc::clone(&slots).acquire_owned();
                match tokio::time::timeout(EVICTION_WAIT, freed).await {
                    Ok(Ok(slot)) => slot,
                    _ => continue,
                }
            }
        };
        // Listed as idle here, not in its task: a burst of accepts runs before any task does,
        // and each must find the ones before it to evict.
        let evict = Arc::new(tokio::sync::Notify::new());
        let id = {
            let mut idle = idle_lock(&idle);
            let id = idle.next;
            idle.next += 1;
            idle.waiting.push_back((id, Arc::clone(&evict)));
            id
        };
        let (metrics, idle) = (Arc::clone(&metrics), Arc::clone(&idle));
        tokio::spawn(async move {
            if first_byte(&stream, &idle, id, &evict).await {
                serve_connection(stream, metrics).await;
            }
            drop(slot);
        });
    }
}

/// Waits for the connection's first byte (or its end), at most [`FIRST_BYTE`], unless it is
/// evicted meanwhile. Whether it is worth serving.
async fn first_byte(
    stream: &tokio::net::TcpStream,
    idle: &SharedIdle,
    id: u64,
    evict: &tokio::sync::Notify,
) -> bool {
    let mut byte = [0u8; 1];
    let sent = tokio::select! {
        // `readable()` may be ready with nothing to read; a peek waits for a byte (or the end).
        seen = tokio::time::timeout(FIRST_BYTE, stream.peek(&mut byte)) => {
            matches!(seen, Ok(Ok(n)) if n > 0)
        }
        () = evict.notified() => false,
    };
    idle_lock(idle).waiting.retain(|(other, _)| *other != id);
    sent
}

async fn serve_connection(stream: tokio::net::TcpStream, metrics: Arc<Metrics>) {
    let service = hyper::service::service_fn(move |req| {
        let metrics = Arc::clone(&metrics);
        async move { Ok::<_, Infallible>(answer(metrics, req).await) }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_DEADLINE)
        .max_buf_size(16 * 1024);
    let connection = builder.serve_connection(TokioIo::new(stream), service);
    let _ = tokio::time::timeout(CONNECTION_LIFETIME, connection).await;
}

/// What a request gets: the metrics in one format, or a ready answer (404, 405).
enum Route {
    Metrics { openmetrics: bool },
    Answer(Response<Full<Bytes>>),
}

fn route<B>(req: &Request<B>) -> Route {
    if req.uri().path() != "/metrics" {
        return Route::Answer(plain(
            StatusCode::NOT_FOUND,
            "not found: the metrics are at /metrics\n",
        ));
    }
    if req.method() != Method::GET && req.method() != Method::HEAD {
        let mut r = plain(StatusCode::METHOD_NOT_ALLOWED, "GET /metrics\n");
        r.headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return Route::Answer(r);
    }
    Route::Metrics {
        openmetrics: wants_openmetrics(req.headers().get(ACCEPT)),
    }
}

/// Encoding 1,000 endpoints' series takes milliseconds of CPU: done on the blocking pool, so the
/// runtime's workers (the connections' readers) are not held up by a scrape.
async fn answer<B>(metrics: Arc<Metrics>, req: Request<B>) -> Response<Full<Bytes>> {
    let openmetrics = match route(&req) {
        Route::Answer(r) => return r,
        Route::Metrics { openmetrics } => openmetrics,
    };
    let Ok(body) = tokio::task::spawn_blocking(move || metrics.encode(openmetrics)).await else {
        return plain(StatusCode::INTERNAL_SERVER_ERROR, "encoding failed\n");
    };
    let content_type = if openmetrics {
        OPENMETRICS
    } else {
        prometheus_client::encoding::prometheus_text::CONTENT_TYPE
    };
    let mut r = Response::new(Full::new(Bytes::from(body)));
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

/// Whether `Accept` lists `application/openmetrics-text` (Prometheus does, first, by default).
/// A `q=0` on it is a refusal.
fn wants_openmetrics(accept: Option<&HeaderValue>) -> bool {
    let Some(text) = accept.and_then(|v| v.to_str().ok()) else {
        return false;
    };
    text.split(',').any(|item| {
        let mut parts = item.split(';').map(str::trim);
        let media = parts.next().unwrap_or_default();
        let refused = parts.any(|p| {
            p.strip_prefix("q=")
                .and_then(|q| q.parse::<f64>().ok())
                .is_some_and(|q| q <= 0.0)
        });
        media.eq_ignore_ascii_case("application/openmetrics-text") && !refused
    })
}

fn plain(status: StatusCode, text: &'static str) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from_static(text.as_bytes())));
    *r.status_mut() = status;
    r.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openmetrics_is_served_only_when_asked_for() {
        let v = |s: &'static str| HeaderValue::from_static(s);
        let prometheus = "application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.3,*/*;q=0.1";
        assert!(wants_openmetrics(Some(&v(prometheus))));
        assert!(!wants_openmetrics(Some(&v("text/plain"))));
        assert!(!wants_openmetrics(Some(&v("*/*"))));
        assert!(!wants_openmetrics(None));
        assert!(!wants_openmetrics(Some(&v(
            "application/openmetrics-text;q=0, text/plain"
        ))));
    }

    #[test]
    fn only_get_and_head_of_metrics_are_served() {
        let req = |method: Method, path: &str| {
            Request::builder()
                .method(method)
                .uri(path)
                .body(())
                .unwrap()
        };
        let status = |r: Route| match r {
            Route::Metrics { .. } => StatusCode::OK,
            Route::Answer(r) => r.status(),
        };
        assert_eq!(status(route(&req(Method::GET, "/metrics"))), 200);
        assert_eq!(status(route(&req(Method::HEAD, "/metrics"))), 200);
        assert_eq!(status(route(&req(Method::GET, "/"))), 404);
        assert_eq!(status(route(&req(Method::POST, "/metrics"))), 405);
    }
}
