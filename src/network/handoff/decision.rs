//! The dry-run handoff decision: what a MOVING's endpoint resolves to, polled on an injected
//! clock and resolver until the address changes or the window ends, and the outcome told. Kept
//! apart from the folder's root, which is its map.

use crate::protocol::notification::check_host;
use serde::{Serialize, Serializer};
use std::fmt;
use std::future::Future;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Dry-runs running at once, at most: each polls DNS until its window ends, and a server that
/// sends a stream of distinct MOVINGs must not start one task per notification.
pub const MAX_DRY_RUNS: usize = 64;

/// The longest declared window a dry-run waits out, in scenario seconds. A server may declare
/// any window up to `i64::MAX` seconds; a dry-run still waiting after an hour tells nothing new.
pub const MAX_DRY_RUN_WINDOW_S: i64 = 3600;

/// One answer to "which addresses does this name advertise right now?".
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "resolution", rename_all = "snake_case")]
pub enum Resolution {
    /// The name resolved. An empty list (NXDOMAIN, no A/AAAA records) is kept as such but counts
    /// as "cannot tell", never as "the address is gone".
    Addresses {
        addrs: Vec<IpAddr>,
        /// Smallest TTL of the answer, in seconds, when the resolver reports one.
        ttl: Option<u32>,
    },
    /// The resolution failed (timeout, SERVFAIL, network error ...).
    Failed { reason: String },
}

impl Resolution {
    /// The advertised addresses, or `None` when this answer cannot tell (failed or empty).
    pub fn usable_addrs(&self) -> Option<&[IpAddr]> {
        match self {
            Resolution::Addresses { addrs, .. } if !addrs.is_empty() => Some(addrs),
            _ => None,
        }
    }
}

/// "Am I still advertised?" is tri-state (docs/protocol.md section 5, rule 6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Advertised {
    Yes,
    No,
    /// The resolution failed or returned nothing. Must never be read as `No`, or one DNS blip
    /// recycles every healthy connection.
    CannotTell,
}

/// Whether `addr` is among the addresses of `res`.
pub fn advertised(res: &Resolution, addr: IpAddr) -> Advertised {
    match res.usable_addrs() {
        None => Advertised::CannotTell,
        Some(addrs) if addrs.contains(&addr) => Advertised::Yes,
        Some(_) => Advertised::No,
    }
}

/// The DNS seam: resolve a host name to its A and AAAA addresses.
pub trait Resolve {
    fn resolve(&self, host: &str) -> impl Future<Output = Resolution> + Send;

    /// Who is asked, for "waiting for an answer from ...".
    fn source(&self) -> String {
        "the resolver".into()
    }
}

impl<R: Resolve + ?Sized> Resolve for &R {
    fn resolve(&self, host: &str) -> impl Future<Output = Resolution> + Send {
        (**self).resolve(host)
    }

    fn source(&self) -> String {
        (**self).source()
    }
}

impl<R: Resolve + ?Sized> Resolve for Arc<R> {
    fn resolve(&self, host: &str) -> impl Future<Output = Resolution> + Send {
        (**self).resolve(host)
    }

    fn source(&self) -> String {
        (**self).source()
    }
}

/// The time seam. `now` is measured from an arbitrary origin; only differences are used.
pub trait Clock {
    fn now(&self) -> Duration;
    fn sleep(&self, d: Duration) -> impl Future<Output = ()> + Send;
}

/// [`Clock`] on `tokio::time`, so that `tokio::time::pause` (and `start_paused` tests) drive it.
///
/// It carries its own origin because `tokio::time::Instant` has no epoch to measure from.
#[derive(Debug, Clone, Copy)]
pub struct TokioClock {
    pub(super) origin: tokio::time::Instant,
}

impl TokioClock {
    pub fn new() -> Self {
        Self {
            origin: tokio::time::Instant::now(),
        }
    }
}

impl Default for TokioClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for TokioClock {
    fn now(&self) -> Duration {
        tokio::time::Instant::now().saturating_duration_since(self.origin)
    }

    fn sleep(&self, d: Duration) -> impl Future<Output = ()> + Send {
        tokio::time::sleep(d)
    }
}

/// The randomness seam for the pre-action jitter.
pub trait Jitter {
    /// A duration uniform in `[0, upper)`; zero when `upper` is zero.
    fn pick(&mut self, upper: Duration) -> Duration;
}

/// [`Jitter`] from the thread-local `rand` generator.
#[derive(Debug, Clone, Copy, Default)]
pub struct RandJitter;

impl Jitter for RandJitter {
    fn pick(&mut self, upper: Duration) -> Duration {
        use rand::Rng;
        // Sampled in whole nanoseconds so the half-open upper bound is exact.
        let nanos = u64::try_from(upper.as_nanos()).unwrap_or(u64::MAX);
        if nanos == 0 {
            return Duration::ZERO;
        }
        Duration::from_nanos(rand::rng().random_range(0..nanos))
    }
}

/// A [`Jitter`] that always picks the same value (clamped into `[0, upper)`), for reproducible
/// dry runs and tests.
#[derive(Debug, Clone, Copy)]
pub struct FixedJitter(pub Duration);

impl Jitter for FixedJitter {
    fn pick(&mut self, upper: Duration) -> Duration {
        if upper.is_zero() {
            Duration::ZERO
        } else {
            self.0.min(upper - Duration::from_nanos(1))
        }
    }
}

/// Upper bound of the pre-action jitter: `min(window / 10, 1 s)`, zero for a window <= 0.
pub fn jitter_upper(window_secs: i64) -> Duration {
    if window_secs <= 0 {
        return Duration::ZERO;
    }
    // window / 10 in milliseconds; saturating so an absurd window still caps at 1 s.
    let tenth_ms = u64::try_from(window_secs)
        .unwrap_or(u64::MAX)
        .saturating_mul(100);
    Duration::from_millis(tenth_ms).min(Duration::from_secs(1))
}

/// The endpoint as the user configured it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EndpointHost {
    Name(String),
    Ip(IpAddr),
}

impl EndpointHost {
    /// An IP literal (bracketed IPv6 included) is an address; anything else is a name.
    pub fn parse(host: &str) -> Self {
        let bare = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host);
        match bare.parse::<IpAddr>() {
            Ok(ip) => EndpointHost::Ip(ip),
            Err(_) => EndpointHost::Name(host.to_string()),
        }
    }
}

/// Everything the decision needs, captured when the `MOVING` arrived.
#[derive(Debug, Clone)]
pub struct HandoffInput {
    pub endpoint: EndpointHost,
    pub port: u16,
    /// The address the connection that received the `MOVING` is connected to.
    pub current: Option<IpAddr>,
    /// The `host:port` named by the `MOVING`, if any (usually none in the field).
    pub successor: Option<(String, u16)>,
    /// The window announced by the `MOVING`, in seconds; 0 or negative means "already under way".
    pub window_secs: i64,
    /// Interval between DNS polls; the reference client uses 1 s.
    pub poll_interval: Duration,
}

/// Why a handoff falls back to reconnecting on the clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClockReason {
    /// The endpoint is an address: there is no name to re-resolve.
    AddressEndpoint,
    /// The connected address is unknown, so "an address that is not mine" means nothing.
    UnknownCurrent,
}

/// What the reference client would do. Every `at` is the offset since the `MOVING` (more exactly,
/// since [`run`] was called, which the caller does on receipt).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    /// Rule 1: the `MOVING` named a successor; move to it at once.
    MoveToSuccessor {
        host: String,
        port: u16,
        #[serde(rename = "at_s", serialize_with = "secs")]
        at: Duration,
    },
    /// Rule 2: nothing to re-resolve; `at` is when the reconnect is due (half the window, 0 for a
    /// window <= 0). The decision itself is immediate.
    ReconnectOnClock {
        #[serde(rename = "at_s", serialize_with = "secs")]
        at: Duration,
        reason: ClockReason,
    },
    /// The first answer already named a live sibling (the multi-proxy norm).
    SteppedSideways {
        to: IpAddr,
        #[serde(rename = "at_s", serialize_with = "secs")]
        at: Duration,
    },
    /// The record stopped naming only the retiring address after `polls` polls.
    Moved {
        to: IpAddr,
        #[serde(rename = "at_s", serialize_with = "secs")]
        at: Duration,
        polls: u32,
    },
    /// The budget ran out with the record still stale: a normal outcome, not an error; the
    /// client reconnects after the server closes the socket. `cannot_tell` counts the polls that
    /// failed, came back empty, or were still unanswered when the budget ran out.
    StaleAtExpiry {
        #[serde(rename = "at_s", serialize_with = "secs")]
        at: Duration,
        polls: u32,
        cannot_tell: u32,
        /// The window the budget was; `at` beyond it means a query was still out when it ended.
        #[serde(rename = "window_s", serialize_with = "secs")]
        window: Duration,
    },
    /// Not one poll got an address: the name does not resolve, or the nameserver never answered.
    /// Not "the record was stale": DNS told nothing, so a client cannot hand off by it and
    /// reconnects only after the server closes.
    Unresolved {
        host: String,
        #[serde(rename = "at_s", serialize_with = "secs")]
        at: Duration,
        polls: u32,
        /// What the last poll got (`timed out`, `no A or AAAA records` ...).
        reason: String,
        #[serde(rename = "window_s", serialize_with = "secs")]
        window: Duration,
    },
    /// The caller cancelled the handoff (socket closed, shutdown ...).
    Cancelled {
        #[serde(rename = "at_s", serialize_with = "secs")]
        at: Duration,
        polls: u32,
    },
}

impl Outcome {
    /// The offset since the `MOVING` at which this outcome happened (or, for
    /// [`Outcome::ReconnectOnClock`], is due).
    pub fn at(&self) -> Duration {
        match self {
            Outcome::MoveToSuccessor { at, .. }
            | Outcome::ReconnectOnClock { at, .. }
            | Outcome::SteppedSideways { at, .. }
            | Outcome::Moved { at, .. }
            | Outcome::StaleAtExpiry { at, .. }
            | Outcome::Unresolved { at, .. }
            | Outcome::Cancelled { at, .. } => *at,
        }
    }

    /// Where a client would go: the named successor as `host:port`, or the address DNS gave.
    pub fn destination(&self) -> Option<String> {
        match self {
            Outcome::MoveToSuccessor { host, port, .. } => Some(host_port(host, *port)),
            Outcome::SteppedSideways { to, .. } | Outcome::Moved { to, .. } => Some(to.to_string()),
            _ => None,
        }
    }
}

/// `host:port`, with brackets around a bare IPv6 address.
pub(super) fn host_port(host: &str, port: u16) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// When the outcome came after the window ended (by more than scheduling noise): the words that
/// say why, since "expired at +4.2 s" of a 2 s window reads as a bug otherwise.
pub(super) fn overran(at: Duration, window: Duration) -> Option<String> {
    (at > window + Duration::from_millis(100)).then(|| {
        format!(
            "; the window ended at {} while a DNS query was still out, and its timeout ran past it",
            Offset(window)
        )
    })
}

pub(super) fn secs<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

/// `+9.8 s`: one decimal is the resolution the measurements in docs/protocol.md are quoted at.
pub(super) struct Offset(Duration);

impl fmt::Display for Offset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "+{:.1} s", self.0.as_secs_f64())
    }
}

pub(super) fn plural(n: u32, word: &str) -> String {
    if n == 1 {
        format!("{n} {word}")
    } else {
        format!("{n} {word}s")
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::MoveToSuccessor { host, port, at } => {
                // A bare IPv6 host needs brackets to stay readable as host:port.
                write!(
                    f,
                    "move to the named successor {} at {}",
                    host_port(host, *port),
                    Offset(*at)
                )
            }
            Outcome::ReconnectOnClock { at, reason } => {
                let why = match reason {
                    ClockReason::AddressEndpoint => {
                        "the endpoint is an address, nothing to re-resolve"
                    }
                    ClockReason::UnknownCurrent => "the connected address is unknown",
                };
                write!(
                    f,
                    "reconnect on the clock at {} (half the window; {why})",
                    Offset(*at)
                )
            }
            Outcome::SteppedSideways { to, at } => {
                write!(f, "stepped sideways to {to} at {}", Offset(*at))
            }
            Outcome::Moved { to, at, polls } => {
                write!(
                    f,
                    "moved to {to} after {} at {}",
                    plural(*polls, "poll"),
                    Offset(*at)
                )
            }
            Outcome::StaleAtExpiry {
                at,
                polls,
                cannot_tell,
                window,
            } => {
                write!(
                    f,
                    "window expired at {} with the record still stale after {}",
                    Offset(*at),
                    plural(*polls, "poll")
                )?;
                if *cannot_tell > 0 {
                    write!(f, ", {cannot_tell} could not tell")?;
                }
                f.write_str(" (a normal outcome: reconnect after the server closes)")?;
                f.write_str(&overran(*at, *window).unwrap_or_default())
            }
            Outcome::Unresolved {
                host,
                at,
                polls,
                reason,
                window,
            } => {
                write!(
                    f,
                    "{host} could not be resolved at all: {} until {} gave no address (last: {reason}); \
                     a client cannot follow DNS here and reconnects after the server closes",
                    if *polls == 1 {
                        "the one poll".to_string()
                    } else {
                        format!("all {polls} polls")
                    },
                    Offset(*at)
                )?;
                f.write_str(&overran(*at, *window).unwrap_or_default())
            }
            Outcome::Cancelled { at, polls } => {
                write!(
                    f,
                    "handoff cancelled at {} after {}",
                    Offset(*at),
                    plural(*polls, "poll")
                )
            }
        }
    }
}

/// Run the handoff decision of docs/protocol.md section 5 to its outcome.
///
/// `cancel` completing at any await point ends the run with [`Outcome::Cancelled`].
pub async fn run<R: Resolve, C: Clock, J: Jitter>(
    input: &HandoffInput,
    resolver: &R,
    clock: &C,
    jitter: &mut J,
    cancel: impl Future<Output = ()>,
) -> Outcome {
    let origin = clock.now();
    let (host, current) = match without_polling(input) {
        Ok(polling) => polling,
        Err(outcome) => return outcome,
    };
    // One place for cancellation: whatever the poll is awaiting (the jitter, a resolution, the
    // pause between polls), `cancel` wins and the outcome says how many polls were made. The
    // count is atomic only so that the run stays `Send`; one task touches it.
    let polls = AtomicU32::new(0);
    let poller = Poller {
        host,
        current,
        input,
        resolver,
        clock,
        origin,
        polls: &polls,
    };
    tokio::select! {
        biased;
        () = cancel => Outcome::Cancelled {
            at: clock.now().saturating_sub(origin),
            polls: polls.load(Ordering::Relaxed),
        },
        outcome = poller.run(jitter) => outcome,
    }
}

/// Rules 1 and 2: the outcomes that need no DNS, or the host name and current address to poll
/// for (rule 3).
pub(super) fn without_polling(input: &HandoffInput) -> Result<(&str, IpAddr), Outcome> {
    let window = Duration::from_secs(u64::try_from(input.window_secs).unwrap_or(0));
    // Rule 1, for a successor that is an address at all: garbage from a server (a 10 KB name,
    // bytes that are no host name) is no place to move to, and the other rules decide.
    let usable = |(host, port): &&(String, u16)| *port != 0 && check_host(host).is_ok();
    if let Some((host, port)) = input.successor.as_ref().filter(usable) {
        return Err(Outcome::MoveToSuccessor {
            host: host.clone(),
            port: *port,
            at: Duration::ZERO,
        });
    }
    // Rule 2.
    match (&input.endpoint, input.current) {
        (EndpointHost::Ip(_), _) => Err(Outcome::ReconnectOnClock {
            at: window / 2,
            reason: ClockReason::AddressEndpoint,
        }),
        (EndpointHost::Name(_), None) => Err(Outcome::ReconnectOnClock {
            at: window / 2,
            reason: ClockReason::UnknownCurrent,
        }),
        (EndpointHost::Name(host), Some(current)) => Ok((host.as_str(), current)),
    }
}

/// Rule 3 with the jitter of rule 4: poll DNS until it names an address that is not ours, or
/// the window ends.
pub(super) struct Poller<'a, R, C> {
    pub(super) host: &'a str,
    pub(super) current: IpAddr,
    pub(super) input: &'a HandoffInput,
    pub(super) resolver: &'a R,
    pub(super) clock: &'a C,
    pub(super) origin: Duration,
    /// Shared with [`run`], which reports it when cancelled.
    pub(super) polls: &'a AtomicU32,
}

/// What the polls saw that did not decide the outcome.
#[derive(Default)]
pub(super) struct Unanswered {
    /// Polls that could not tell (failed, empty, or cut by the deadline).
    pub(super) cannot_tell: u32,
    /// Whether any poll got an address.
    pub(super) answered: bool,
    /// What the latest failing poll got instead.
    pub(super) last_failure: String,
}

impl<R: Resolve, C: Clock> Poller<'_, R, C> {
    pub(super) fn elapsed(&self) -> Duration {
        self.clock.now().saturating_sub(self.origin)
    }

    pub(super) async fn run<J: Jitter>(&self, jitter: &mut J) -> Outcome {
        let window = Duration::from_secs(u64::try_from(self.input.window_secs).unwrap_or(0));
        // A window <= 0 has no jitter at all; the source is not even asked, so a custom `Jitter`
        // cannot delay an "act now". A pick outside its range is clamped for the same reason.
        let upper = jitter_upper(self.input.window_secs);
        let wait = if upper.is_zero() {
            Duration::ZERO
        } else {
            jitter.pick(upper).min(upper)
        };
        if !wait.is_zero() {
            self.clock.sleep(wait).await;
        }
        // The budget is window minus jitter, so polling ends at the window itself.
        let deadline = window.max(wait);
        // A zero interval would hammer the nameserver in a tight loop; 1 ms is still "as fast
        // as possible" for any real resolver.
        let interval = self.input.poll_interval.max(Duration::from_millis(1));
        let mut seen = Unanswered::default();
        loop {
            let started = self.elapsed();
            if let Some(outcome) = self.poll(deadline.saturating_sub(started), &mut seen).await {
                return outcome;
            }
            let now = self.elapsed();
            let next = (started + interval).max(now);
            if next >= deadline {
                if now < deadline {
                    self.clock.sleep(deadline - now).await;
                }
                return self.expired(seen, window);
            }
            if next > now {
                self.clock.sleep(next - now).await;
            }
        }
    }

    /// One resolution: the outcome when it names an address that is not ours.
    pub(super) async fn poll(&self, left: Duration, seen: &mut Unanswered) -> Option<Outcome> {
        let first = self.polls.load(Ordering::Relaxed) == 0;
        let resolution = if first {
            // The first attempt is never cut short: a window <= 0 means "act now", and acting
            // needs at least one answer (rule 4).
            Some(self.resolver.resolve(self.host).await)
        } else {
            tokio::select! {
                biased;
                r = self.resolver.resolve(self.host) => Some(r),
                // A resolution still in flight when the budget runs out cannot change the outcome.
                () = self.clock.sleep(left) => None,
            }
        };
        let polls = self.polls.fetch_add(1, Ordering::Relaxed) + 1;
        match resolution.as_ref().and_then(Resolution::usable_addrs) {
            Some(addrs) => {
                seen.answered = true;
                // "Any address that isn't mine", not "prefer the newcomer": a live sibling is
                // available now, the newcomer only once DNS moves.
                let to = *addrs.iter().find(|a| **a != self.current)?;
                let at = self.elapsed();
                Some(if polls == 1 {
                    Outcome::SteppedSideways { to, at }
                } else {
                    Outcome::Moved { to, at, polls }
                })
            }
            // Failed, empty or cut by the deadline: cannot tell, never "gone"; keep polling.
            None => {
                seen.cannot_tell += 1;
                seen.last_failure = match &resolution {
                    Some(Resolution::Failed { reason }) => reason.clone(),
                    Some(Resolution::Addresses { .. }) => "no A or AAAA records".into(),
                    None => "no answer before the window ended".into(),
                };
                None
            }
        }
    }

    /// The window ended with no address but ours: stale, or never answered at all.
    pub(super) fn expired(&self, seen: Unanswered, window: Duration) -> Outcome {
        let (at, polls) = (self.elapsed(), self.polls.load(Ordering::Relaxed));
        if !seen.answered {
            return Outcome::Unresolved {
                host: self.host.to_string(),
                at,
                polls,
                reason: seen.last_failure,
                window,
            };
        }
        Outcome::StaleAtExpiry {
            at,
            polls,
            cannot_tell: seen.cannot_tell,
            window,
        }
    }
}
