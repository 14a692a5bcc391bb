//! The `/metrics` endpoint of `watch --metrics`: hyper's HTTP/1 server on the address given.
//!
//! A scraper is untrusted like any peer: a bounded number of connections at once, a short
//! deadline on a request's head, a cap on how long one connection may live, and a small request
//! buffer. Idle and slow peers must not lock a scraper out, whether they send nothing or stop in
//! the middle of a request head: every connection that is not being answered is *waiting*, and
//! when every slot is taken a new connection closes the one that has waited longest (a scraper
//! sends its whole request at once, so it is answered before anything newer can push it out).
//! Only `GET`/`HEAD /metrics` is served; the format follows the scraper's `Accept` (OpenMetrics
//! when it asks for `application/openmetrics-text`, else the Prometheus text format 0.0.4).

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

/// Connections served at once; past it the one that has waited longest is closed.
pub const MAX_CONNECTIONS: usize = 64;
/// The time a connection has to send a whole request head, from its start or from the end of
/// its last answer (a scraper sends one in a single packet).
const HEADER_DEADLINE: Duration = Duration::from_secs(5);
/// How long a new connection waits for the slot a closed one gives back.
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

/// The connections waiting for a request (silent, half-sent, or idle between two), in the order
/// they began to wait, each with its way to be told to close. One being answered is not listed.
#[derive(Default)]
struct Waiting {
    next: u64,
    queue: std::collections::VecDeque<(u64, Arc<tokio::sync::Notify>)>,
}

#[derive(Clone, Default)]
struct SharedWaiting(Arc<std::sync::Mutex<Waiting>>);

impl SharedWaiting {
    fn lock(&self) -> std::sync::MutexGuard<'_, Waiting> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A new connection, waiting from now: its id and how it is told to close.
    fn join(&self) -> (u64, Arc<tokio::sync::Notify>) {
        let evict = Arc::new(tokio::sync::Notify::new());
        let mut w = self.lock();
        let id = w.next;
        w.next += 1;
        w.queue.push_back((id, Arc::clone(&evict)));
        (id, evict)
    }

    /// `id` waits again (after an answer), behind every other.
    fn wait_again(&self, id: u64, evict: &Arc<tokio::sync::Notify>) {
        let mut w = self.lock();
        w.queue.retain(|(other, _)| *other != id);
        w.queue.push_back((id, Arc::clone(evict)));
    }

    /// `id` is being answered, or gone: it cannot be closed for another.
    fn leave(&self, id: u64) {
        self.lock().queue.retain(|(other, _)| *other != id);
    }

    /// Tells the connection that has waited longest to close; whether there was one.
    fn evict_oldest(&self) -> bool {
        let Some((_, evict)) = self.lock().queue.pop_front() else {
            return false;
        };
        // A permit is stored if its task is not polling yet: it closes when it does.
        evict.notify_one();
        true
    }
}

async fn accept_loop(listener: tokio::net::TcpListener, metrics: Arc<Metrics>) {
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    let waiting = SharedWaiting::default();
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            // Out of descriptors and the like: wait rather than spin, then go on.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let Some(slot) = slot(&slots, &waiting).await else {
            continue; // every slot is being answered: the stream is dropped, closed
        };
        // Listed as waiting here, not in its task: a burst of accepts runs before any task
        // does, and each must find the ones before it to close.
        let (id, evict) = waiting.join();
        let (metrics, waiting) = (Arc::clone(&metrics), waiting.clone());
        tokio::spawn(async move {
            tokio::select! {
                () = serve_connection(stream, metrics, &waiting, id, &evict) => {}
                () = evict.notified() => {}
            }
            waiting.leave(id);
            drop(slot);
        });
    }
}

/// A free slot, or the one the longest-waiting connection gives back when told to close.
async fn slot(
    slots: &Arc<tokio::sync::Semaphore>,
    waiting: &SharedWaiting,
) -> Option<tokio::sync::OwnedSemaphorePermit> {
    if let Ok(slot) = Arc::clone(slots).try_acquire_owned() {
        return Some(slot);
    }
    if !waiting.evict_oldest() {
        return None;
    }
    let freed = Arc::clone(slots).acquire_owned();
    tokio::time::timeout(EVICTION_WAIT, freed).await.ok()?.ok()
}

/// Serves one connection (bounded by [`CONNECTION_LIFETIME`]): while a request is answered it is
/// off the waiting list, and back at its end once the answer is handed to hyper.
async fn serve_connection(
    stream: tokio::net::TcpStream,
    metrics: Arc<Metrics>,
    waiting: &SharedWaiting,
    id: u64,
    evict: &Arc<tokio::sync::Notify>,
) {
    let service = hyper::service::service_fn(|req| {
        waiting.leave(id);
        let metrics = Arc::clone(&metrics);
        async move {
            let response = answer(metrics, req).await;
            waiting.wait_again(id, evict);
            Ok::<_, Infallible>(response)
        }
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
    fn the_connection_that_has_waited_longest_is_closed_first_and_one_answered_never() {
        let w = SharedWaiting::default();
        let (a, evict_a) = w.join();
        let (b, evict_b) = w.join();
        let (c, _) = w.join();
        // `a` is answered, then waits again: behind `b` and `c`.
        w.leave(a);
        w.wait_again(a, &evict_a);
        w.leave(c); // `c` is being answered
        let ids = |w: &SharedWaiting| w.lock().queue.iter().map(|(id, _)| *id).collect::<Vec<_>>();
        assert_eq!(ids(&w), [b, a]);
        assert!(w.evict_oldest());
        assert_eq!(ids(&w), [a]);
        // The permit is kept for `b`'s task: it closes as soon as it looks.
        let woke = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap()
            .block_on(async {
                tokio::time::timeout(Duration::from_secs(5), evict_b.notified())
                    .await
                    .is_ok()
            });
        assert!(woke);
        assert!(w.evict_oldest());
        assert!(!w.evict_oldest(), "only `c`, being answered, is left");
    }

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
