//! `simulate --proxy-api`: the HTTP API of cae-resp-proxy, the Docker proxy the client
//! libraries' own maintenance test suites drive (redis-py's `tests/maint_notifications`,
//! go-redis' `maintnotifications/e2e`), served by the simulator.
//!
//! Those suites need Docker and an image only to have a RESP relay in front of a real Redis whose
//! HTTP API writes frames into the clients' connections. Served here, they run with one binary,
//! and every frame they inject is part of the simulator's record ([`What::Injected`],
//! [`What::Sent`] with [`Why::Api`]): narrated, graded, drawn by `--report`.
//!
//! The shapes (paths, methods, query parameters, JSON bodies, status codes) are cae-resp-proxy
//! 0.1.9's, read from its source; docs/proxy-api.md lists them and every place this differs.
//! Three parts:
//!
//! - the nodes ([`relay`]): one listener each, a transparent relay per connection to the
//!   upstream, commands cut into whole frames and offered to the interceptors first, injected
//!   frames written between two frames;
//! - the interceptors ([`intercept`]): the API's own (match a command, answer in place of the
//!   upstream), `/scenarios`' queue of answers, and the proxy's defaults `cluster`, `hitless`,
//!   `logger`;
//! - the HTTP server ([`http`]): hyper, bounded like the metrics endpoint (a connection limit, a
//!   body limit, deadlines), loopback unless an address is given.

mod api;
mod http;
mod intercept;
mod relay;

pub use intercept::DEFAULT_INTERCEPTORS;

pub(in crate::simulator::sim) use api::{start, Api};
pub use api::{ApiHandle, ApiOptions};
// For the folder's own files, until each imports from where a name is defined.
use api::{connections, stats, stopped, Conn, Msg};
