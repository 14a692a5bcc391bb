//! The HTTP plumbing the simulator's two control APIs share: cae-resp-proxy's (`--proxy-api`,
//! [`super::proxy_api`]) and Redis Enterprise's fault injector (`--fault-injector-api`,
//! [`super::fault_injector`]).
//!
//! A request is untrusted like any peer's bytes: at most [`MAX_CONNECTIONS`] connections at once
//! (more are closed at once), a deadline on a request's head, a body of at most [`BODY_MAX`]
//! bytes, and a connection's life bounded. Each API routes its own requests; a malformed one
//! gets a 4xx with a JSON message, and the simulator goes on.

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use serde::Deserialize;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// Connections served at once; past it a new one is closed.
pub const MAX_CONNECTIONS: usize = 64;
/// The largest request body: frames to inject, interceptors and actions are small.
pub const BODY_MAX: usize = 1024 * 1024;
/// The time a connection has to send a whole request head.
const HEADER_DEADLINE: Duration = Duration::from_secs(10);
/// The longest one connection is kept (a keep-alive client reconnects after it).
const CONNECTION_LIFETIME: Duration = Duration::from_secs(600);

/// An answer.
pub(super) type Answer = Response<Full<Bytes>>;

/// Serves `listener` until `shutdown` is set, each request answered by `handler`.
pub(super) async fn serve<H, F>(
    listener: TcpListener,
    mut shutdown: watch::Receiver<bool>,
    handler: H,
) where
    H: Fn(Request<Incoming>) -> F + Send + Sync + 'static,
    F: Future<Output = Answer> + Send + 'static,
{
    let handler = Arc::new(handler);
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            _ = stopped(&mut shutdown) => return,
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            continue; // every slot is taken: the stream is dropped, closed
        };
        let handler = handler.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let answer = handler(req);
                async move { Ok::<_, Infallible>(answer.await) }
            });
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_DEADLINE)
                .max_buf_size(64 * 1024);
            let conn = builder.serve_connection(TokioIo::new(stream), service);
            let _ = tokio::time::timeout(CONNECTION_LIFETIME, conn).await;
            drop(slot);
        });
    }
}

/// Resolves once the flag is set, or its sender is gone.
async fn stopped(rx: &mut watch::Receiver<bool>) {
    let _ = rx.wait_for(|s| *s).await;
}

/// A 4xx or 5xx with its message.
#[derive(Debug)]
pub(super) struct Fail(pub(super) StatusCode, pub(super) String);

impl Fail {
    pub(super) fn bad(message: impl Into<String>) -> Fail {
        Fail(StatusCode::BAD_REQUEST, message.into())
    }

    pub(super) fn not_found(message: impl Into<String>) -> Fail {
        Fail(StatusCode::NOT_FOUND, message.into())
    }
}

/// A JSON answer.
pub(super) fn json(status: StatusCode, value: &serde_json::Value) -> Answer {
    let mut r = Response::new(Full::new(Bytes::from(value.to_string())));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

/// The body, whole, within [`BODY_MAX`].
pub(super) async fn body(req: Request<Incoming>) -> Result<Vec<u8>, Fail> {
    match Limited::new(req.into_body(), BODY_MAX).collect().await {
        Ok(b) => Ok(b.to_bytes().to_vec()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(Fail(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the body is larger than {BODY_MAX} bytes"),
        )),
        Err(e) => Err(Fail::bad(format!("reading the body: {e}"))),
    }
}

/// A query parameter, %-decoded (`+` is a space); `None` when absent.
pub(super) fn param(query: &str, name: &str) -> Result<Option<String>, Fail> {
    for pair in query.split('&') {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        if k == name {
            return percent_decode(&v.replace('+', " ")).map(Some);
        }
    }
    Ok(None)
}

/// The URL's own %-decoding (`redis://` URLs decode the same way).
pub(super) fn percent_decode(text: &str) -> Result<String, Fail> {
    crate::shared::url::percent_decode(text).map_err(|e| Fail::bad(format!("the URL: {e}")))
}

/// What a route matches on: the method and the path's %-decoded segments, with the path (for
/// the answer to a route nobody serves) and the query.
pub(super) struct Target {
    pub(super) method: hyper::Method,
    pub(super) path: String,
    pub(super) query: String,
    pub(super) segments: Vec<String>,
}

impl Target {
    pub(super) fn of<B>(req: &Request<B>) -> Result<Target, Fail> {
        let path = req.uri().path().to_string();
        let segments = path
            .trim_matches('/')
            .split('/')
            .map(percent_decode)
            .collect::<Result<_, _>>()?;
        Ok(Target {
            method: req.method().clone(),
            query: req.uri().query().unwrap_or("").to_string(),
            path,
            segments,
        })
    }

    /// The segments, to match on as a slice of `&str`.
    pub(super) fn segs(&self) -> Vec<&str> {
        self.segments.iter().map(String::as_str).collect()
    }

    /// The answer when no route matched.
    pub(super) fn no_route(&self) -> Fail {
        no_route(&self.method, &self.path)
    }
}

pub(super) fn parse_json<T: for<'de> Deserialize<'de>>(body: &[u8]) -> Result<T, Fail> {
    serde_json::from_slice(body).map_err(|e| Fail::bad(format!("the JSON body: {e}")))
}

/// The answer to a route nobody serves.
pub(super) fn no_route(method: &hyper::Method, path: &str) -> Fail {
    Fail::not_found(format!(
        "no route {method} {}",
        super::notation::escape(path.as_bytes())
    ))
}
