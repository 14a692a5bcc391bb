//! The handoff decision's tests: scripted DNS answers on a virtual clock, so every offset they
//! assert is exact.

use super::*;
use std::collections::VecDeque;
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const OLD: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
const NEW: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 3));

/// Virtual time for [`drive`]: sleeping registers a deadline, and time only moves when the
/// driven future can make no progress without it. Tests therefore run instantly and assert
/// exact offsets that cannot depend on machine load.
#[derive(Clone, Default)]
struct FakeClock(Arc<Mutex<FakeTime>>);

#[derive(Default)]
struct FakeTime {
    now: Duration,
    /// Deadlines of the sleeps found pending during the latest poll.
    waiting: Vec<Duration>,
}

impl Clock for FakeClock {
    fn now(&self) -> Duration {
        self.0.lock().unwrap().now
    }

    fn sleep(&self, d: Duration) -> impl Future<Output = ()> + Send {
        let deadline = self.now() + d;
        let time = self.0.clone();
        std::future::poll_fn(move |_| {
            let mut t = time.lock().unwrap();
            if t.now >= deadline {
                std::task::Poll::Ready(())
            } else {
                t.waiting.push(deadline);
                std::task::Poll::Pending
            }
        })
    }
}

/// Poll `fut` to completion, advancing the fake clock to the earliest pending sleep whenever
/// the future is stuck. Panics if it is stuck with no sleep pending (it would hang forever).
fn drive<F: Future>(clock: &FakeClock, fut: F) -> F::Output {
    let mut fut = std::pin::pin!(fut);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    loop {
        clock.0.lock().unwrap().waiting.clear();
        if let std::task::Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
            return out;
        }
        let mut t = clock.0.lock().unwrap();
        let next = t.waiting.iter().min().copied();
        t.now = next.expect("future is stuck with no sleep pending");
    }
}

fn addrs(list: &[IpAddr]) -> Resolution {
    Resolution::Addresses {
        addrs: list.to_vec(),
        ttl: Some(5),
    }
}

fn failed() -> Resolution {
    Resolution::Failed {
        reason: "request timed out".into(),
    }
}

/// Answers from a script, one per call; once the script runs out it repeats the last
/// answer. Records the clock offset of every call so tests can assert the poll schedule.
struct Scripted {
    clock: FakeClock,
    script: Mutex<VecDeque<Resolution>>,
    last: Mutex<Option<Resolution>>,
    calls: Mutex<Vec<(String, Duration)>>,
}

impl Scripted {
    fn new(clock: FakeClock, script: Vec<Resolution>) -> Self {
        Self {
            clock,
            script: Mutex::new(script.into()),
            last: Mutex::new(None),
            calls: Mutex::new(Vec::new()),
        }
    }

    fn call_times(&self) -> Vec<Duration> {
        self.calls.lock().unwrap().iter().map(|c| c.1).collect()
    }
}

impl Resolve for Scripted {
    fn resolve(&self, host: &str) -> impl Future<Output = Resolution> + Send {
        self.calls
            .lock()
            .unwrap()
            .push((host.to_string(), self.clock.now()));
        let next = self.script.lock().unwrap().pop_front();
        let answer = match next {
            Some(r) => {
                *self.last.lock().unwrap() = Some(r.clone());
                r
            }
            None => self.last.lock().unwrap().clone().expect("empty script"),
        };
        std::future::ready(answer)
    }
}

/// Never answers: a resolver stuck on a dead nameserver.
struct Hung;

impl Resolve for Hung {
    fn resolve(&self, _host: &str) -> impl Future<Output = Resolution> + Send {
        std::future::pending()
    }
}

/// A window <= 0 must not wait, so it must not even ask for a jitter.
struct MustNotJitter;

impl Jitter for MustNotJitter {
    fn pick(&mut self, upper: Duration) -> Duration {
        panic!("jitter asked for with upper bound {upper:?}")
    }
}

fn input(window_secs: i64) -> HandoffInput {
    HandoffInput {
        endpoint: EndpointHost::Name("db.example.test".into()),
        port: 12000,
        current: Some(OLD),
        successor: None,
        window_secs,
        poll_interval: Duration::from_secs(1),
    }
}

fn never() -> std::future::Pending<()> {
    std::future::pending()
}

/// The dry-run for a window of `window_secs` over `dns`, driven to its end on `clock`.
fn poll(
    clock: &FakeClock,
    dns: &impl Resolve,
    window_secs: i64,
    jitter: &mut impl Jitter,
) -> Outcome {
    poll_until(clock, dns, window_secs, jitter, never())
}

/// [`poll`], cancelled when `cancel` completes.
fn poll_until(
    clock: &FakeClock,
    dns: &impl Resolve,
    window_secs: i64,
    jitter: &mut impl Jitter,
    cancel: impl Future<Output = ()>,
) -> Outcome {
    drive(clock, run(&input(window_secs), dns, clock, jitter, cancel))
}

fn cancelled(at: Duration, polls: u32) -> Outcome {
    Outcome::Cancelled { at, polls }
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn dns_trailing_the_notification_moves_after_n_polls() {
    let clock = FakeClock::default();
    // The measured case: DNS still names only the old node for the first polls (+4.4 s).
    let mut script = vec![addrs(&[OLD]); 5];
    script.push(addrs(&[NEW]));
    let dns = Scripted::new(clock.clone(), script);
    let out = poll(&clock, &dns, 15, &mut FixedJitter(ms(400)));
    assert_eq!(
        out,
        Outcome::Moved {
            to: NEW,
            at: ms(5400),
            polls: 6
        }
    );
    assert_eq!(
        out.to_string(),
        "moved to 127.0.0.3 after 6 polls at +5.4 s"
    );
    assert_eq!(
        dns.call_times(),
        (0..6).map(|k| ms(400 + 1000 * k)).collect::<Vec<_>>()
    );
    assert!(dns
        .calls
        .lock()
        .unwrap()
        .iter()
        .all(|(h, _)| h == "db.example.test"));
}

#[test]
fn resolution_blip_is_never_read_as_gone() {
    let clock = FakeClock::default();
    let empty = addrs(&[]);
    let dns = Scripted::new(
        clock.clone(),
        vec![addrs(&[OLD]), failed(), empty, addrs(&[NEW])],
    );
    let out = poll(&clock, &dns, 15, &mut FixedJitter(ms(0)));
    assert_eq!(
        out,
        Outcome::Moved {
            to: NEW,
            at: ms(3000),
            polls: 4
        }
    );
}

#[test]
fn round_robin_record_naming_both_nodes_steps_sideways() {
    let clock = FakeClock::default();
    // The retiring address comes first: the sibling must still be found.
    let dns = Scripted::new(clock.clone(), vec![addrs(&[OLD, NEW])]);
    let out = poll(&clock, &dns, 15, &mut FixedJitter(ms(400)));
    assert_eq!(
        out,
        Outcome::SteppedSideways {
            to: NEW,
            at: ms(400)
        }
    );
    assert_eq!(out.to_string(), "stepped sideways to 127.0.0.3 at +0.4 s");
    assert_eq!(dns.call_times(), vec![ms(400)]);
}

#[test]
fn sibling_available_at_once_steps_sideways() {
    let clock = FakeClock::default();
    let dns = Scripted::new(clock.clone(), vec![addrs(&[NEW])]);
    let out = poll(&clock, &dns, 2, &mut FixedJitter(ms(150)));
    assert_eq!(
        out,
        Outcome::SteppedSideways {
            to: NEW,
            at: ms(150)
        }
    );
}

#[test]
fn zero_window_gets_exactly_one_attempt() {
    let clock = FakeClock::default();
    let dns = Scripted::new(clock.clone(), vec![addrs(&[OLD])]);
    let out = poll(&clock, &dns, 0, &mut MustNotJitter);
    assert_eq!(
        out,
        Outcome::StaleAtExpiry {
            at: Duration::ZERO,
            polls: 1,
            cannot_tell: 0,
            window: Duration::ZERO,
        }
    );
    assert_eq!(dns.call_times(), vec![Duration::ZERO]);
}

#[test]
fn zero_window_single_attempt_can_still_step_sideways() {
    let clock = FakeClock::default();
    let dns = Scripted::new(clock.clone(), vec![addrs(&[OLD, NEW])]);
    let out = poll(&clock, &dns, 0, &mut RandJitter);
    assert_eq!(
        out,
        Outcome::SteppedSideways {
            to: NEW,
            at: Duration::ZERO
        }
    );
}

#[test]
fn negative_window_gets_exactly_one_attempt() {
    let clock = FakeClock::default();
    let dns = Scripted::new(clock.clone(), vec![failed()]);
    let out = poll(&clock, &dns, -3, &mut MustNotJitter);
    // Its one poll failed: DNS told nothing at all, which is not "stale".
    assert_eq!(
        out,
        Outcome::Unresolved {
            host: "db.example.test".into(),
            at: Duration::ZERO,
            polls: 1,
            reason: "request timed out".into(),
            window: Duration::ZERO,
        }
    );
    assert_eq!(dns.call_times().len(), 1);
}

#[test]
fn stale_at_expiry_is_a_normal_outcome() {
    let clock = FakeClock::default();
    let dns = Scripted::new(clock.clone(), vec![addrs(&[OLD]), failed(), addrs(&[OLD])]);
    let out = poll(&clock, &dns, 15, &mut FixedJitter(ms(400)));
    // Polls at +0.4 .. +14.4 s, then the budget (15 - 0.4 s) runs out at the window.
    assert_eq!(
        out,
        Outcome::StaleAtExpiry {
            at: ms(15_000),
            polls: 15,
            cannot_tell: 1,
            window: ms(15_000),
        }
    );
    assert_eq!(dns.call_times().last(), Some(&ms(14_400)));
    assert_eq!(
        out.to_string(),
        "window expired at +15.0 s with the record still stale after 15 polls, 1 could not \
         tell (a normal outcome: reconnect after the server closes)"
    );
}

/// Answers stale once, then never again: a nameserver that dies mid-handoff.
struct StaleThenHung(std::sync::atomic::AtomicU32);

impl Resolve for StaleThenHung {
    fn resolve(&self, _host: &str) -> impl Future<Output = Resolution> + Send {
        let n = self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        async move {
            if n == 0 {
                addrs(&[OLD])
            } else {
                std::future::pending().await
            }
        }
    }
}

#[test]
fn resolution_hanging_past_the_window_ends_stale_at_the_window() {
    let clock = FakeClock::default();
    let dns = StaleThenHung(0.into());
    let out = poll(&clock, &dns, 2, &mut FixedJitter(ms(100)));
    assert_eq!(
        out,
        Outcome::StaleAtExpiry {
            at: ms(2000),
            polls: 2,
            cannot_tell: 1,
            window: ms(2000),
        }
    );
}

/// Every answer fails, each after `delay`: a nameserver that never answers, with a timeout.
struct SlowFailure {
    clock: FakeClock,
    delay: Duration,
}

impl Resolve for SlowFailure {
    fn resolve(&self, _host: &str) -> impl Future<Output = Resolution> + Send {
        let sleep = self.clock.sleep(self.delay);
        async move {
            sleep.await;
            failed()
        }
    }
}

#[test]
fn a_name_that_never_resolves_is_unresolved_not_stale() {
    let clock = FakeClock::default();
    let dns = Scripted::new(
        clock.clone(),
        vec![Resolution::Addresses {
            addrs: vec![],
            ttl: None,
        }],
    );
    let out = poll(&clock, &dns, 5, &mut FixedJitter(ms(0)));
    let Outcome::Unresolved {
        polls, reason, at, ..
    } = &out
    else {
        panic!("{out:?}")
    };
    assert_eq!(
        (*polls, reason.as_str(), *at),
        (5, "no A or AAAA records", ms(5000))
    );
    let text = out.to_string();
    assert!(
        text.contains("db.example.test could not be resolved at all"),
        "{text}"
    );
    assert!(!text.contains("window expired"), "{text}");
    assert!(!text.contains("normal outcome"), "{text}");
}

#[test]
fn a_first_query_outlasting_the_window_says_why_the_outcome_is_late() {
    // A 2 s window and a nameserver that fails only after 4.2 s: the first query is never
    // cut short, so the outcome comes at +4.2 s, and says why.
    let clock = FakeClock::default();
    let dns = SlowFailure {
        clock: clock.clone(),
        delay: ms(4200),
    };
    let out = poll(&clock, &dns, 2, &mut FixedJitter(ms(0)));
    assert_eq!(out.at(), ms(4200));
    assert!(
        matches!(out, Outcome::Unresolved { polls: 1, .. }),
        "{out:?}"
    );
    let text = out.to_string();
    assert!(
        text.contains("the window ended at +2.0 s while a DNS query was still out"),
        "{text}"
    );
    // The same when the record answered once (stale) and the next query overran.
    let stale = Outcome::StaleAtExpiry {
        at: ms(4200),
        polls: 2,
        cannot_tell: 1,
        window: ms(2000),
    };
    assert!(
        stale.to_string().contains("its timeout ran past it"),
        "{stale}"
    );
    let on_time = Outcome::StaleAtExpiry {
        at: ms(2000),
        polls: 2,
        cannot_tell: 0,
        window: ms(2000),
    };
    assert!(!on_time.to_string().contains("ran past"), "{on_time}");
}

#[test]
fn the_destination_is_a_value_not_only_text() {
    let to: IpAddr = "10.0.0.7".parse().unwrap();
    let moved = Outcome::Moved {
        to,
        at: ms(1),
        polls: 2,
    };
    assert_eq!(moved.destination().as_deref(), Some("10.0.0.7"));
    let named = Outcome::MoveToSuccessor {
        host: "::1".into(),
        port: 7000,
        at: ms(0),
    };
    assert_eq!(named.destination().as_deref(), Some("[::1]:7000"));
    assert_eq!(
        Outcome::Cancelled {
            at: ms(0),
            polls: 0
        }
        .destination(),
        None
    );
}

#[test]
fn cancellation_during_polling_returns_cancelled() {
    let clock = FakeClock::default();
    let dns = Scripted::new(clock.clone(), vec![addrs(&[OLD])]);
    let cancel = clock.sleep(ms(2500));
    let out = poll_until(&clock, &dns, 15, &mut FixedJitter(ms(0)), cancel);
    assert_eq!(out, cancelled(ms(2500), 3));
}

#[test]
fn cancellation_during_jitter_returns_cancelled_without_polling() {
    let clock = FakeClock::default();
    let dns = Scripted::new(clock.clone(), vec![addrs(&[NEW])]);
    let jitter = &mut FixedJitter(ms(900));
    let out = poll_until(&clock, &dns, 15, jitter, std::future::ready(()));
    assert_eq!(out, cancelled(Duration::ZERO, 0));
    assert!(dns.call_times().is_empty());
}

#[test]
fn cancellation_while_resolution_hangs() {
    let clock = FakeClock::default();
    let cancel = clock.sleep(ms(3000));
    let out = poll_until(&clock, &Hung, 15, &mut FixedJitter(ms(0)), cancel);
    assert_eq!(out, cancelled(ms(3000), 0));
}

#[tokio::test]
async fn tokio_clock_moves_forward_with_sleep() {
    let clock = TokioClock::new();
    let before = clock.now();
    clock.sleep(ms(5)).await;
    // tokio guarantees a sleep lasts at least its duration; only that lower bound is checked.
    assert!(clock.now() >= before + ms(5));
}

#[test]
fn jitter_upper_bounds() {
    assert_eq!(jitter_upper(2), ms(200));
    assert_eq!(jitter_upper(15), Duration::from_secs(1));
    assert_eq!(jitter_upper(10), Duration::from_secs(1));
    assert_eq!(jitter_upper(5), ms(500));
    assert_eq!(jitter_upper(0), Duration::ZERO);
    assert_eq!(jitter_upper(-1), Duration::ZERO);
    assert_eq!(jitter_upper(i64::MAX), Duration::from_secs(1));
}

#[test]
fn rand_jitter_stays_below_the_upper_bound() {
    let mut j = RandJitter;
    for window in [2, 15] {
        let upper = jitter_upper(window);
        let picks: Vec<Duration> = (0..10_000).map(|_| j.pick(upper)).collect();
        assert!(picks.iter().all(|p| *p < upper), "window {window}");
        // Uniform over the range, not stuck at one end: both halves get hit.
        assert!(picks.iter().any(|p| *p < upper / 2));
        assert!(picks.iter().any(|p| *p >= upper / 2));
    }
    assert_eq!(j.pick(Duration::ZERO), Duration::ZERO);
}

#[test]
fn fixed_jitter_is_clamped_into_range() {
    assert_eq!(
        FixedJitter(ms(400)).pick(ms(200)),
        ms(200) - Duration::from_nanos(1)
    );
    assert_eq!(FixedJitter(ms(100)).pick(ms(200)), ms(100));
    assert_eq!(FixedJitter(ms(100)).pick(Duration::ZERO), Duration::ZERO);
}

#[test]
fn successor_named_moves_at_once_without_resolving() {
    let clock = FakeClock::default();
    let dns = Scripted::new(clock.clone(), vec![addrs(&[NEW])]);
    let mut inp = input(15);
    inp.successor = Some(("10.0.0.9".into(), 13000));
    let out = drive(&clock, run(&inp, &dns, &clock, &mut RandJitter, never()));
    assert_eq!(
        out,
        Outcome::MoveToSuccessor {
            host: "10.0.0.9".into(),
            port: 13000,
            at: Duration::ZERO
        }
    );
    assert_eq!(
        out.to_string(),
        "move to the named successor 10.0.0.9:13000 at +0.0 s"
    );
    assert!(dns.call_times().is_empty());
}

#[test]
fn a_successor_that_is_no_usable_address_is_not_moved_to() {
    for host in [
        "a".repeat(10_000),
        "bad host\u{1b}[2J".into(),
        "\u{fffd}.example".into(),
    ] {
        let clock = FakeClock::default();
        let dns = Scripted::new(clock.clone(), vec![addrs(&[NEW])]);
        let mut inp = input(15);
        inp.successor = Some((host.clone(), 13000));
        let out = drive(&clock, run(&inp, &dns, &clock, &mut RandJitter, never()));
        assert!(
            !matches!(out, Outcome::MoveToSuccessor { .. }),
            "{host:.40}: {out:?}"
        );
        // The endpoint's name was re-resolved instead, as with no successor at all.
        assert!(!dns.call_times().is_empty(), "{host:.40}: {out:?}");
    }
}

#[test]
fn address_endpoint_reconnects_on_the_clock() {
    let clock = FakeClock::default();
    let dns = Scripted::new(clock.clone(), vec![addrs(&[NEW])]);
    let mut inp = input(15);
    inp.endpoint = EndpointHost::Ip(OLD);
    let out = drive(&clock, run(&inp, &dns, &clock, &mut RandJitter, never()));
    assert_eq!(
        out,
        Outcome::ReconnectOnClock {
            at: ms(7500),
            reason: ClockReason::AddressEndpoint
        }
    );
    assert!(dns.call_times().is_empty());

    inp.window_secs = -2;
    let out = drive(&clock, run(&inp, &dns, &clock, &mut RandJitter, never()));
    assert_eq!(out.at(), Duration::ZERO);
}

#[test]
fn unknown_current_reconnects_on_the_clock() {
    let clock = FakeClock::default();
    let dns = Scripted::new(clock.clone(), vec![addrs(&[NEW])]);
    let mut inp = input(2);
    inp.current = None;
    let out = drive(&clock, run(&inp, &dns, &clock, &mut RandJitter, never()));
    assert_eq!(
        out,
        Outcome::ReconnectOnClock {
            at: Duration::from_secs(1),
            reason: ClockReason::UnknownCurrent
        }
    );
    assert!(dns.call_times().is_empty());
}

#[test]
fn advertised_is_tri_state() {
    assert_eq!(advertised(&addrs(&[OLD, NEW]), OLD), Advertised::Yes);
    assert_eq!(advertised(&addrs(&[NEW]), OLD), Advertised::No);
    assert_eq!(advertised(&addrs(&[]), OLD), Advertised::CannotTell);
    assert_eq!(advertised(&failed(), OLD), Advertised::CannotTell);
}

#[test]
fn endpoint_host_parse() {
    assert_eq!(EndpointHost::parse("127.0.0.2"), EndpointHost::Ip(OLD));
    assert_eq!(
        EndpointHost::parse("[::1]"),
        EndpointHost::Ip("::1".parse().unwrap())
    );
    assert_eq!(
        EndpointHost::parse("db.example.test"),
        EndpointHost::Name("db.example.test".into())
    );
}

#[test]
fn outcome_serializes_with_a_tag_and_seconds() {
    let out = Outcome::Moved {
        to: NEW,
        at: ms(9800),
        polls: 10,
    };
    assert_eq!(
        serde_json::to_string(&out).unwrap(),
        r#"{"outcome":"moved","to":"127.0.0.3","at_s":9.8,"polls":10}"#
    );
    let out = Outcome::ReconnectOnClock {
        at: ms(7500),
        reason: ClockReason::UnknownCurrent,
    };
    assert_eq!(
        serde_json::to_string(&out).unwrap(),
        r#"{"outcome":"reconnect_on_clock","at_s":7.5,"reason":"unknown_current"}"#
    );
    assert_eq!(
        serde_json::to_string(&failed()).unwrap(),
        r#"{"resolution":"failed","reason":"request timed out"}"#
    );
}
