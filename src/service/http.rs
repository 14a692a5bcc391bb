//! The `/metrics` endpoint of `watch --metrics`: hyper's HTTP/1 server on the address given.
//!
//! A scraper is untrusted like any peer: a bounded number of connections at once (others are
//! closed at accept), a deadline on reading a request's headers, a cap on how long one
//! connection may live, and a small request buffer. Only `GET`/`HEAD /metrics` is served; the
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

/// Scrapers served at once; one more connection is closed as it is accepted.
pub const MAX_CONNECTIONS: usize = 16;
/// The time a client has to send a request's headers.
const HEADER_DEADLINE: Duration = Duration::from_secs(10);
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

async fn accept_loop(listener: tokio::net::TcpListener, metrics: Arc<Metrics>) {
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            // Out of descriptors and the like: wait rather than spin, then go on.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
            continue; // the stream is dropped: closed
        };
        let metrics = Arc::clone(&metrics);
        tokio::spawn(async move {
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
            drop(slot);
        });
    }
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
