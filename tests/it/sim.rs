//! The simulator, seen from outside: for every scenario a client connects over real TCP to
//! 127.0.0.x, resolves the database hostname through the simulator's own DNS server with
//! hickory-resolver, and asserts what it observes: the frames (byte for byte against the captures
//! where the scenario reproduces one), the DNS answers before and after, and the close, including
//! that a connection which never opted in is closed too without ever being sent a notification.
//!
//! Timing is asserted as order only, never as durations: the scenarios run at `speed` N and the
//! tests wait for what they observe (with one generous overall timeout as a hang guard). Where an
//! order is checked at the moment of an observation ("when the close arrived, DNS already said X")
//! the state checked is one that never reverts within the scenario, so a slow machine can delay
//! the observation but not change its outcome; the one exception (DNS losing the race) runs slowly
//! enough to leave three quarters of a second of slack.
//!
//! The real-server tier compares the refusing mode with a real `redis-server` byte for byte when
//! `MAINTWATCH_REDIS_SERVER` names one (through `tests/it/common`, which skips when it is unset or
//! empty).

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use hickory_resolver::config::{
    ConnectionConfig, NameServerConfig, ResolveHosts, ResolverConfig, ResolverOpts,
};
use hickory_resolver::net::runtime::TokioRuntimeProvider;
use hickory_resolver::TokioResolver;
use tokio::net::TcpStream;

use maintwatch::protocol::notification::{classify, Classified};
use maintwatch::protocol::resp::{encode_command, Frame, Scan, Scanner};
use maintwatch::simulator::sim::scenario::{Action, Push, Start};
use maintwatch::simulator::sim::{scenarios, Scenario, SimOptions, Simulator, What, Why};

use crate::common;
use crate::common::client::{is_hello_map, show, Client};
use crate::common::narration::{until_finished, wait_for};

/// Hang guard for a whole test; every wait inside is for an event, not for time.
const HANG_GUARD: Duration = Duration::from_secs(30);

const MOVING: &[u8] = include_bytes!("../fixtures/captures/moving-null-target.resp");
const MIGRATING: &[u8] = include_bytes!("../fixtures/captures/migrating.resp");
const MIGRATED: &[u8] = include_bytes!("../fixtures/captures/migrated.resp");
const FAILING_OVER: &[u8] = include_bytes!("../fixtures/captures/failing-over.resp");
const FAILED_OVER: &[u8] = include_bytes!("../fixtures/captures/failed-over.resp");
const SMIGRATING: &[u8] = include_bytes!("../fixtures/captures/smigrating.resp");
const SMIGRATED: &[u8] = include_bytes!("../fixtures/captures/smigrated.resp");

const REFUSAL: &[u8] = b"-ERR unknown subcommand 'MAINT_NOTIFICATIONS'. Try CLIENT HELP.\r\n";

async fn guarded<F: Future<Output = ()>>(test: F) {
    tokio::time::timeout(HANG_GUARD, test)
        .await
        .expect("test did not finish within the hang guard");
}

/// Waits for the scenario's end, then stops the simulator.
async fn played_out(sim: Simulator) {
    sim.finished().await;
    sim.shutdown().await;
}

async fn start(scenario: Scenario, speed: f64) -> Simulator {
    let mut opts = SimOptions::new(scenario);
    opts.speed = speed;
    Simulator::start(opts).await.expect("simulator starts")
}

async fn start_named(name: &str, speed: f64) -> Simulator {
    start(scenarios::by_name(name).expect("embedded scenario"), speed).await
}

/// An embedded scenario whose clock waits for `opt_ins` opted-in connections, so that every
/// connection a test sets up hears the first step however slowly the machine runs.
async fn start_waiting_for(name: &str, speed: f64, opt_ins: usize) -> Simulator {
    let mut scenario = scenarios::by_name(name).expect("embedded scenario");
    scenario.start = Start::OptIn(opt_ins);
    start(scenario, speed).await
}

/// A scenario watched on its one proxy (127.0.0.2), as the DNS first answers it: its events, a
/// resolver, a connection that never opts in and one that has.
struct OneProxy {
    sim: Simulator,
    events: tokio::sync::broadcast::Receiver<maintwatch::simulator::sim::SimEvent>,
    dns: TokioResolver,
    bystander: Client,
    client: Client,
}

async fn one_proxy(name: &str, speed: f64) -> OneProxy {
    let sim = start_named(name, speed).await;
    let events = sim.events();
    let dns = resolver(&sim);
    assert_eq!(answer(&dns, &sim).await, vec![ip(2)]);
    let bystander = Client::connect(addr(&sim, 2)).await;
    let mut client = Client::connect(addr(&sim, 2)).await;
    client.opt_in().await;
    OneProxy {
        sim,
        events,
        dns,
        bystander,
        client,
    }
}

/// The close as both connections of a [`OneProxy`] see it, nothing read before it, with what
/// DNS answered then.
async fn at_the_close(p: &mut OneProxy, dns_then: &[IpAddr], why: &str) {
    assert!(p.client.until_closed().await.is_empty(), "{why}");
    assert_eq!(answer(&p.dns, &p.sim).await, dns_then, "{why}");
    assert!(p.bystander.until_closed().await.is_empty(), "{why}");
}

fn addr(sim: &Simulator, last_octet: u8) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, last_octet], sim.port()))
}

fn ip(last_octet: u8) -> IpAddr {
    IpAddr::from([127, 0, 0, last_octet])
}

/// A resolver that asks only the simulator, UDP then TCP, with no cache and no hosts file.
fn resolver(sim: &Simulator) -> TokioResolver {
    let ns = sim.dns_addr();
    let mut udp = ConnectionConfig::udp();
    udp.port = ns.port();
    let mut tcp = ConnectionConfig::tcp();
    tcp.port = ns.port();
    let config = ResolverConfig::from_name_servers(vec![NameServerConfig::new(
        ns.ip(),
        true,
        vec![udp, tcp],
    )]);
    let mut opts = ResolverOpts::default();
    opts.cache_size = 0;
    opts.use_hosts_file = ResolveHosts::Never;
    opts.timeout = Duration::from_secs(2);
    TokioResolver::builder_with_config(config, TokioRuntimeProvider::default())
        .with_options(opts)
        .build()
        .expect("resolver")
}

/// The A records the simulator answers now, sorted; NXDOMAIN is an empty list.
async fn answer(r: &TokioResolver, sim: &Simulator) -> Vec<IpAddr> {
    let mut addrs: Vec<IpAddr> = match r.lookup_ip(sim.hostname()).await {
        Ok(lookup) => lookup.iter().collect(),
        Err(_) => Vec::new(),
    };
    addrs.sort();
    addrs
}

/// Polls DNS until it answers `want` (a wait for an event the scenario schedules).
async fn until_answer(r: &TokioResolver, sim: &Simulator, want: &[IpAddr]) {
    while answer(r, sim).await != want {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Replaces the capture's two node addresses (rewritten into the private range there) with ours.
fn smigrated_for(source: SocketAddr, target: SocketAddr) -> Vec<u8> {
    let capture = String::from_utf8(SMIGRATED.to_vec()).unwrap();
    let (s, t) = (source.to_string(), target.to_string());
    capture
        .replace(
            "$20\r\n10.129.228.140:13486",
            &format!("${}\r\n{s}", s.len()),
        )
        .replace("$18\r\n10.252.90.18:13486", &format!("${}\r\n{t}", t.len()))
        .into_bytes()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_proxy_moving_then_dns_then_node_wide_close() {
    guarded(async {
        let sim = start_named("single-proxy", 10.0).await;
        let mut events = sim.events();
        let dns = resolver(&sim);
        assert_eq!(answer(&dns, &sim).await, vec![ip(2)], "DNS before");
        // The replacement proxy is not listening yet: connecting is refused.
        assert!(TcpStream::connect(addr(&sim, 3)).await.is_err());

        // A bystander that never opts in, connected before anything happens.
        let mut bystander = Client::connect(addr(&sim, 2)).await;
        bystander.hello3().await;
        let mut client =
            Client::connect(SocketAddr::new(answer(&dns, &sim).await[0], sim.port())).await;
        client.opt_in().await; // starts the scenario clock

        assert_eq!(show(&client.expect("MOVING").await), show(MOVING));
        let before_close = client.until_closed().await;
        assert!(
            before_close.is_empty(),
            "unexpected frames: {before_close:?}"
        );
        // The record never moves back, so this proves it had moved before the close arrived.
        assert_eq!(
            answer(&dns, &sim).await,
            vec![ip(3)],
            "DNS when the close arrived"
        );
        assert!(
            bystander.until_closed().await.is_empty(),
            "a connection that did not opt in was sent something"
        );
        let closed = wait_for(&mut events, |w| matches!(w, What::Closed { .. })).await;
        assert_eq!(
            closed.what,
            What::Closed {
                proxy: addr(&sim, 2),
                connections: 2,
                opted_in: 1,
                restart: false,
            }
        );
        // After the close a client reconnects the way it connected: DNS now names the new proxy.
        let mut again =
            Client::connect(SocketAddr::new(answer(&dns, &sim).await[0], sim.port())).await;
        again.opt_in().await;
        again.nothing_pending().await; // the window ended with the close: no re-sent MOVING
        played_out(sim).await;
    })
    .await;
}

/// A MOVING is re-sent (same seq) to a connection that opts in while its window is open, and
/// only on the proxy being retired. The window here is held open (no close until the end) so
/// that "while open" does not depend on how fast this machine is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn moving_is_resent_to_late_opt_ins_on_its_proxy_only() {
    guarded(async {
        let text = "name held-open\nabout MOVING with its window held open\n\
                    proxies 127.0.0.2 127.0.0.3\ndns 127.0.0.2\nttl 5\nstart opt-in\n\
                    at 0 push 127.0.0.2 MOVING time=15 target=null\nat 60 close 127.0.0.2\nend 60\n";
        let sim = start(Scenario::parse("held-open.scn", text).unwrap(), 1.0).await;
        let mut first = Client::connect(addr(&sim, 2)).await;
        first.opt_in().await;
        assert_eq!(show(&first.expect("MOVING").await), show(MOVING));

        let mut late = Client::connect(addr(&sim, 2)).await;
        late.hello3().await;
        late.send(&["CLIENT", "MAINT_NOTIFICATIONS", "ON"]).await;
        assert_eq!(show(&late.expect("+OK").await), "+OK\\r\\n");
        assert_eq!(show(&late.expect("re-sent MOVING").await), show(MOVING), "same bytes, same seq");

        let mut sibling = Client::connect(addr(&sim, 3)).await;
        sibling.opt_in().await;
        sibling.nothing_pending().await;

        // The real TTL is served at speed 1.
        let dns = resolver(&sim);
        let lookup = dns.lookup_ip(sim.hostname()).await.unwrap();
        assert!(lookup.as_lookup().answers().iter().all(|r| r.ttl == 5));
        sim.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_proxy_sibling_advertised_from_the_start() {
    guarded(async {
        // Both connections opted in before the clock starts: the MOVING is the scheduled one.
        let sim = start_waiting_for("multi-proxy", 10.0, 2).await;
        let dns = resolver(&sim);
        assert_eq!(answer(&dns, &sim).await, vec![ip(2), ip(3)], "DNS before");

        let mut sibling = Client::connect(addr(&sim, 3)).await;
        sibling.opt_in().await;
        let mut client = Client::connect(addr(&sim, 2)).await;
        client.opt_in().await;
        assert_eq!(show(&client.expect("MOVING").await), show(MOVING));
        assert!(client.until_closed().await.is_empty());
        assert_eq!(
            answer(&dns, &sim).await,
            vec![ip(3), ip(4)],
            "DNS when the close arrived"
        );
        // Only the retiring proxy's connections were told or closed.
        sibling.nothing_pending().await;
        played_out(sim).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dns_race_close_comes_before_the_record_moves() {
    guarded(async {
        // Speed 4: the record moves 0.75 s after the close, the slack this test's one
        // "DNS has not moved yet" observation needs.
        let mut p = one_proxy("dns-race", 4.0).await;
        assert_eq!(show(&p.client.expect("MOVING").await), show(MOVING));
        at_the_close(&mut p, &[ip(2)], "DNS still stale at the close").await;
        // Reconnecting now lands on the old proxy again, which still listens.
        let stale = answer(&p.dns, &p.sim).await[0];
        let mut again = Client::connect(SocketAddr::new(stale, p.sim.port())).await;
        again.opt_in().await;
        until_answer(&p.dns, &p.sim, &[ip(3)]).await;

        let seen = until_finished(&mut p.events).await;
        let close = seen
            .iter()
            .position(|e| matches!(e.what, What::Closed { .. }));
        let moved = seen
            .iter()
            .position(|e| matches!(&e.what, What::Dns { records, .. } if records == &[ip(3)]));
        assert!(close.unwrap() < moved.unwrap(), "the close comes first");
        p.sim.shutdown().await;
    })
    .await;
}

/// Shared by the two shard-scoped scenarios: open, complete, no close, completion replayed.
async fn shard_event(name: &str, opening: &[u8], completion: &[u8]) {
    let sim = start_named(name, 10.0).await;
    let mut events = sim.events();
    let dns = resolver(&sim);
    assert_eq!(answer(&dns, &sim).await, vec![ip(2)]);
    let mut client = Client::connect(addr(&sim, 2)).await;
    client.opt_in().await;
    assert_eq!(show(&client.expect("opening").await), show(opening));
    assert_eq!(
        show(&client.expect("completion").await),
        show(completion),
        "seq 1: one counter"
    );
    until_finished(&mut events).await;
    // No drop: the connection is still there and usable, DNS never changed.
    client.nothing_pending().await;
    assert_eq!(answer(&dns, &sim).await, vec![ip(2)]);

    // Catch-up: a later opt-in gets the completion right after its +OK (and only that).
    let mut later = Client::connect(addr(&sim, 2)).await;
    later.hello3().await;
    later.send(&["CLIENT", "MAINT_NOTIFICATIONS", "ON"]).await;
    assert_eq!(show(&later.expect("+OK").await), "+OK\\r\\n");
    assert_eq!(show(&later.expect("catch-up").await), show(completion));
    later.nothing_pending().await;
    let replay = wait_for(&mut events, |w| {
        matches!(
            w,
            What::Sent {
                why: Why::CatchUp,
                ..
            }
        )
    })
    .await;
    assert!(matches!(replay.what, What::Sent { bytes, .. } if bytes == completion));
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shard_migration_without_a_drop_and_catch_up() {
    guarded(shard_event("shard-migration", MIGRATING, MIGRATED)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failover_without_a_drop_and_catch_up() {
    guarded(shard_event("failover", FAILING_OVER, FAILED_OVER)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn catch_up_can_be_turned_off() {
    guarded(async {
        let mut opts = SimOptions::new(scenarios::by_name("shard-migration").unwrap());
        opts.speed = 10.0;
        opts.catch_up = false;
        let sim = Simulator::start(opts).await.unwrap();
        let mut events = sim.events();
        let mut client = Client::connect(addr(&sim, 2)).await;
        client.opt_in().await;
        client.expect("MIGRATING").await;
        assert_eq!(show(&client.expect("MIGRATED").await), show(MIGRATED));
        until_finished(&mut events).await;
        let mut later = Client::connect(addr(&sim, 2)).await;
        later.opt_in().await;
        later.nothing_pending().await;
        sim.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_shrink_closes_with_no_moving() {
    guarded(async {
        // Both proxies' connections must hear the first step.
        let sim = start_waiting_for("silent-shrink", 20.0, 2).await;
        let mut events = sim.events();
        let dns = resolver(&sim);
        assert_eq!(answer(&dns, &sim).await, vec![ip(2), ip(3)]);
        let mut survivor = Client::connect(addr(&sim, 3)).await;
        survivor.opt_in().await;
        let mut client = Client::connect(addr(&sim, 2)).await;
        client.opt_in().await;
        let frames = client.until_closed().await;
        let migrating = b">4\r\n$9\r\nMIGRATING\r\n:0\r\n:2\r\n$5\r\n[\"3\"]\r\n".to_vec();
        let migrated = b">3\r\n$8\r\nMIGRATED\r\n:1\r\n$5\r\n[\"3\"]\r\n".to_vec();
        assert_eq!(
            frames,
            vec![migrating.clone(), migrated.clone()],
            "no MOVING before the close"
        );
        assert_eq!(
            answer(&dns, &sim).await,
            vec![ip(3)],
            "our address had left DNS"
        );
        assert_eq!(survivor.expect("MIGRATING").await, migrating);
        assert_eq!(survivor.expect("MIGRATED").await, migrated);
        survivor.nothing_pending().await;
        let closed = wait_for(&mut events, |w| matches!(w, What::Closed { .. })).await;
        assert!(matches!(
            closed.what,
            What::Closed {
                connections: 1,
                opted_in: 1,
                ..
            }
        ));
        sim.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_widening_then_restart_close_with_no_notification() {
    guarded(async {
        let mut p = one_proxy("silent-widening", 20.0).await;
        // No notification at all, and DNS widened before the close.
        at_the_close(&mut p, &[ip(2), ip(3)], "widened before the close").await;
        let closed = wait_for(&mut p.events, |w| matches!(w, What::Closed { .. })).await;
        assert!(matches!(
            closed.what,
            What::Closed {
                connections: 2,
                opted_in: 1,
                restart: true,
                ..
            }
        ));
        p.sim.shutdown().await;
    })
    .await;
}

/// CLUSTER SLOTS as `(first, last, ip, port)` runs.
fn slot_runs(reply: &[u8]) -> Vec<(i64, i64, String, i64)> {
    let Ok(Scan::Frame(Frame::Array(runs), _)) = Scanner::default().scan(reply) else {
        panic!("CLUSTER SLOTS reply: {}", show(reply));
    };
    runs.iter()
        .map(|run| match run {
            Frame::Array(items) => match (&items[0], &items[1], &items[2]) {
                (Frame::Integer(a), Frame::Integer(b), Frame::Array(node)) => {
                    match (&node[0], &node[1]) {
                        (Frame::Blob(ip), Frame::Integer(port)) => {
                            (*a, *b, String::from_utf8(ip.to_vec()).unwrap(), *port)
                        }
                        other => panic!("{other:?}"),
                    }
                }
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oss_cluster_slot_migration_on_every_node() {
    guarded(async {
        // Every node's connection must hear SMIGRATING, which is never replayed.
        let sim = start_waiting_for("oss-cluster", 10.0, 3).await;
        let dns = resolver(&sim);
        assert_eq!(answer(&dns, &sim).await, vec![ip(2), ip(3), ip(4)]);
        let port = i64::from(sim.port());
        // A key whose slot moves, found the way a client would ask.
        let mut probe = Client::connect(addr(&sim, 3)).await;
        probe.hello3().await;
        let key = (0..)
            .map(|i| format!("key:{i}"))
            .find(|k| {
                (8892..=8991).contains(&maintwatch::simulator::sim::cluster_slots::key_slot(
                    k.as_bytes(),
                ))
            })
            .unwrap();
        assert_eq!(
            show(&probe.call(&["GET", &key]).await),
            "_\\r\\n",
            "served by its owner"
        );
        let before = slot_runs(&probe.call(&["CLUSTER", "SLOTS"]).await);
        assert_eq!(
            before,
            vec![
                (0, 5460, "127.0.0.2".into(), port),
                (5461, 10922, "127.0.0.3".into(), port),
                (10923, 16383, "127.0.0.4".into(), port),
            ]
        );
        // CLUSTER SHARDS: one map per node, its slots as start/end pairs, itself as the master.
        let shards = probe.call(&["CLUSTER", "SHARDS"]).await;
        let Ok(Scan::Frame(Frame::Array(shards), _)) = Scanner::default().scan(&shards) else {
            panic!("CLUSTER SHARDS reply: {}", show(&shards));
        };
        assert_eq!(shards.len(), 3);
        let Frame::Map(first) = &shards[0] else {
            panic!("{:?}", shards[0]);
        };
        assert_eq!(
            first[0],
            (
                Frame::Blob(b"slots"),
                Frame::Array(vec![Frame::Integer(0), Frame::Integer(5460)])
            )
        );
        let nodes_text = probe.call(&["CLUSTER", "NODES"]).await;
        // The bus port is port + 10000 as in Redis, or 0 when that would not fit.
        let cport = u16::try_from(port + 10000).unwrap_or(0);
        let myself = format!("127.0.0.3:{port}@");
        assert!(
            show(&nodes_text).contains(&format!("{myself}{cport} myself,master")),
            "{}",
            show(&nodes_text)
        );

        let mut nodes = Vec::new();
        for n in 2..=4 {
            let mut c = Client::connect(addr(&sim, n)).await;
            c.opt_in().await;
            nodes.push(c);
        }
        let expected = smigrated_for(addr(&sim, 3), addr(&sim, 5));
        for c in &mut nodes {
            // Every node broadcasts the same event with the same seq.
            assert_eq!(show(&c.expect("SMIGRATING").await), show(SMIGRATING));
            assert_eq!(show(&c.expect("SMIGRATED").await), show(&expected));
        }
        // The topology had changed when SMIGRATED was sent.
        let after = slot_runs(&probe.call(&["CLUSTER", "SLOTS"]).await);
        assert!(
            after.contains(&(8892, 8991, "127.0.0.5".into(), port)),
            "{after:?}"
        );
        let moved = probe.call(&["GET", &key]).await;
        let slot = maintwatch::simulator::sim::cluster_slots::key_slot(key.as_bytes());
        assert_eq!(
            show(&moved),
            format!("-MOVED {slot} 127.0.0.5:{port}\\r\\n")
        );
        probe.nothing_pending().await; // not opted in: no notification
        played_out(sim).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusing_server_answers_like_redis_oss() {
    guarded(async {
        let sim = start_named("refusing", 10.0).await;
        let dns = resolver(&sim);
        assert_eq!(answer(&dns, &sim).await, vec![ip(2)]);
        let mut c = Client::connect(addr(&sim, 2)).await;
        refusal_replies(&mut c).await;
        // It presents itself as Redis OSS, and nothing else ever happens on the connection.
        let hello = c.call(&["HELLO", "3"]).await;
        assert!(hello.windows(5).any(|w| w == b"7.4.1"), "{}", show(&hello));
        sim.finished().await;
        c.nothing_pending().await;
        sim.shutdown().await;
    })
    .await;
}

/// The conversation compared with a real server: the refusal in every form docs/protocol.md section 7
/// lists, then proof the connection stays usable and replies stay in order.
async fn refusal_replies(c: &mut Client) -> Vec<Vec<u8>> {
    let mut replies = Vec::new();
    // Before HELLO, then after it, upper and lower case, with the endpoint type, OFF.
    replies.push(c.call(&["CLIENT", "MAINT_NOTIFICATIONS", "ON"]).await);
    c.hello3().await;
    replies.push(c.call(&["CLIENT", "MAINT_NOTIFICATIONS", "ON"]).await);
    replies.push(c.call(&["client", "maint_notifications", "on"]).await);
    replies.push(
        c.call(&[
            "CLIENT",
            "MAINT_NOTIFICATIONS",
            "ON",
            "moving-endpoint-type",
            "external-ip",
        ])
        .await,
    );
    replies.push(c.call(&["CLIENT", "MAINT_NOTIFICATIONS", "OFF"]).await);
    // Pipelined in one write: the refusal must not shift the replies after it.
    let mut pipeline = encode_command(&["CLIENT", "MAINT_NOTIFICATIONS", "ON"]);
    pipeline.extend(encode_command(&["PING"]));
    pipeline.extend(encode_command(&["ECHO", "after"]));
    c.write_raw(&pipeline).await;
    for what in ["refusal", "PONG", "ECHO"] {
        replies.push(c.expect(what).await);
    }
    assert_eq!(show(&replies[0]), show(REFUSAL));
    assert_eq!(show(&replies[1]), show(REFUSAL));
    assert_eq!(
        show(&replies[2]),
        show(b"-ERR unknown subcommand 'maint_notifications'. Try CLIENT HELP.\r\n"),
        "the subcommand is echoed in the case it was sent"
    );
    assert_eq!(show(&replies[3]), show(REFUSAL));
    assert_eq!(show(&replies[4]), show(REFUSAL));
    assert_eq!(show(&replies[5]), show(REFUSAL));
    assert_eq!(show(&replies[6]), "+PONG\\r\\n");
    assert_eq!(show(&replies[7]), "$5\\r\\nafter\\r\\n");
    replies
}

/// Real-server tier: the refusing mode's bytes against a real `redis-server`'s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusing_mode_matches_a_real_redis_server_byte_for_byte() {
    let test = "refusing_mode_matches_a_real_redis_server_byte_for_byte";
    let Some(server) = common::RealRedis::start(test, &[]).await else {
        return;
    };
    guarded(async {
        let mut real = Client::connect(server.addr).await;
        let from_real = refusal_replies(&mut real).await;

        let sim = start_named("refusing", 10.0).await;
        let mut c = Client::connect(addr(&sim, 2)).await;
        let from_sim = refusal_replies(&mut c).await;
        for (i, (r, s)) in from_real.iter().zip(&from_sim).enumerate() {
            assert_eq!(show(s), show(r), "reply {i} differs from the real server's");
        }
        sim.shutdown().await;
    })
    .await;
}

/// The README's test command gives `MAINTWATCH_REDIS_SERVER=""` on a machine without
/// redis-server: that must skip, not try to start `""`.
#[test]
fn an_absent_or_empty_server_variable_skips() {
    assert_eq!(common::redis_server_from(None), None);
    assert_eq!(common::redis_server_from(Some("".into())), None);
    assert_eq!(common::redis_server_from(Some("  ".into())), None);
    assert_eq!(
        common::redis_server_from(Some("/usr/bin/redis-server".into())).as_deref(),
        Some("/usr/bin/redis-server")
    );
}

/// One rule for the real-server tier: no test file reads the variable itself, they all go
/// through `common::redis_server_binary` (a file that did its own check treated an empty value
/// as set and panicked with `cannot start ""`).
#[test]
fn only_the_shared_helper_reads_the_server_variable() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut offenders = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let reads = ["var(\"", "var_os(\""]
            .iter()
            .any(|f| text.contains(&format!("{f}{}", common::REDIS_SERVER_VAR)));
        if reads {
            offenders.push(path.display().to_string());
        }
    }
    assert!(
        offenders.is_empty(),
        "read the variable through tests/it/common: {offenders:?}"
    );
}

/// One harness for the binary: no test file names its path itself; they all start it through
/// tests/it/common (`maintwatch`, `maintwatch_async`, `Proc`), so pipes, hang guards, signals and
/// exit codes are handled one way.
#[test]
fn only_the_process_harness_starts_the_binary() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let needle = concat!("CARGO_BIN", "_EXE_");
    let mut offenders = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        if std::fs::read_to_string(&path).unwrap().contains(needle) {
            offenders.push(path.display().to_string());
        }
    }
    assert!(
        offenders.is_empty(),
        "start the binary through tests/it/common: {offenders:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn peer_variants_arrive_exactly_as_written() {
    guarded(async {
        let scenario = scenarios::by_name("peer-variants").unwrap();
        let raws: Vec<Vec<u8>> = scenario
            .steps
            .iter()
            .filter_map(|s| match &s.action {
                Action::Push {
                    push: Push::Raw(b), ..
                } => Some(b.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(raws.len(), 11);
        let sim = start(scenario, 10.0).await;
        let mut client = Client::connect(addr(&sim, 2)).await;
        client.opt_in().await;
        let mut maintenance = 0;
        for raw in &raws {
            let got = client.expect("a variant").await;
            assert_eq!(show(&got), show(raw));
            let Ok(Scan::Frame(frame, _)) = Scanner::default().scan(&got) else {
                panic!("not one frame: {}", show(&got));
            };
            if let Classified::Maintenance(_) = classify(&frame) {
                maintenance += 1;
            }
        }
        assert_eq!(
            show(&raws[0]),
            show(b">4\r\n+MOVING\r\n:1\r\n:15\r\n_\r\n"),
            "simple-string type"
        );
        assert_eq!(
            maintenance, 10,
            "all but the pub/sub look-alike are notifications"
        );
        client.nothing_pending().await;
        played_out(sim).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_with_an_acl_user_and_the_password_is_never_narrated() {
    guarded(async {
        let mut opts = SimOptions::new(scenarios::by_name("shard-migration").unwrap());
        opts.speed = 10.0;
        opts.password = Some("s3cret-pw".into());
        opts.user = Some("app".into());
        let sim = Simulator::start(opts).await.unwrap();
        let mut events = sim.events();
        let mut c = Client::connect(addr(&sim, 2)).await;
        assert_eq!(
            show(&c.call(&["PING"]).await),
            "-NOAUTH Authentication required.\\r\\n"
        );
        let noauth = c.call(&["HELLO", "3"]).await;
        assert!(
            noauth.starts_with(b"-NOAUTH HELLO must be called"),
            "{}",
            show(&noauth)
        );
        let wrong = c
            .call(&["HELLO", "3", "AUTH", "default", "s3cret-pw"])
            .await;
        assert_eq!(
            show(&wrong),
            "-WRONGPASS invalid username-password pair or user is disabled.\\r\\n"
        );
        let ok = c
            .call(&[
                "HELLO",
                "3",
                "AUTH",
                "app",
                "s3cret-pw",
                "SETNAME",
                "tester",
            ])
            .await;
        assert!(is_hello_map(&ok), "{}", show(&ok));
        assert_eq!(
            show(&c.call(&["CLIENT", "GETNAME"]).await),
            "$6\\r\\ntester\\r\\n"
        );
        assert_eq!(
            show(&c.call(&["CLIENT", "SETINFO", "LIB-NAME", "x"]).await),
            "+OK\\r\\n"
        );
        // A little data traffic before the opt-in (after it, notifications would interleave).
        assert_eq!(show(&c.call(&["SET", "k", "v"]).await), "+OK\\r\\n");
        let mut other = Client::connect(addr(&sim, 2)).await;
        assert_eq!(
            show(&other.call(&["AUTH", "app", "s3cret-pw"]).await),
            "+OK\\r\\n"
        );
        assert_eq!(
            show(&other.call(&["GET", "k"]).await),
            "$1\\r\\nv\\r\\n",
            "one keyspace"
        );
        assert_eq!(
            show(&c.call(&["AUTH", "s3cret-pw"]).await),
            show(b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"),
            "AUTH <password> is the default user's, and the password is app's"
        );
        assert_eq!(
            show(&c.call(&["CLIENT", "MAINT_NOTIFICATIONS", "ON"]).await),
            "+OK\\r\\n"
        );
        assert_eq!(show(&c.expect("MIGRATING").await), show(MIGRATING));
        let seen = until_finished(&mut events).await;
        assert!(seen.iter().any(
            |e| matches!(&e.what, What::Command { command, .. } if command.contains("<redacted>"))
        ));
        for e in &seen {
            assert!(
                !e.to_string().contains("s3cret-pw"),
                "password narrated: {e}"
            );
            assert!(
                !format!("{e:?}").contains("s3cret-pw"),
                "password in Debug: {e:?}"
            );
        }
        sim.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_commands_and_argument_errors_read_like_redis() {
    guarded(async {
        let sim = start_named("single-proxy", 1.0).await;
        let mut c = Client::connect(addr(&sim, 2)).await;
        let cases: &[(&[&str], &str)] = &[
            (&["FOO", "a", "b"], "-ERR unknown command 'FOO', with args beginning with: 'a' 'b' \\r\\n"),
            (&["GET"], "-ERR wrong number of arguments for 'get' command\\r\\n"),
            (&["HELLO", "4"], "-NOPROTO unsupported protocol version\\r\\n"),
            (&["HELLO", "x"], "-ERR Protocol version is not an integer or out of range\\r\\n"),
            (&["SELECT", "16"], "-ERR DB index is out of range\\r\\n"),
            (&["SELECT", "1"], "+OK\\r\\n"),
            (&["CLIENT", "ID"], ":1\\r\\n"),
            (&["ECHO", "x"], "$1\\r\\nx\\r\\n"),
            (&["CLUSTER", "SLOTS"], "-ERR This instance has cluster support disabled\\r\\n"),
            (&["CLIENT", "MAINT_NOTIFICATIONS", "ON", "moving-endpoint-type", "sideways"], ""),
            (&["CLIENT", "MAINT_NOTIFICATIONS", "ON"], "-ERR CLIENT MAINT_NOTIFICATIONS ON needs RESP3 (HELLO 3): push frames do not exist in RESP2\\r\\n"),
        ];
        for (args, want) in cases {
            let got = show(&c.call(args).await);
            if want.is_empty() {
                assert!(got.starts_with("-ERR invalid moving-endpoint-type"), "{got}");
            } else {
                assert_eq!(&got, want, "{args:?}");
            }
        }
        // Inline commands, as typed into telnet.
        c.write_raw(b"PING\r\n").await;
        assert_eq!(show(&c.expect("PONG").await), "+PONG\\r\\n");
        assert_eq!(show(&c.call(&["QUIT"]).await), "+OK\\r\\n");
        assert!(c.next().await.is_none(), "QUIT closes");
        sim.shutdown().await;
    })
    .await;
}

/// With --loop the deployment resets between rounds (every connection closed so clients start
/// over), and the database counter carries on: the second round's MOVING has the next seq.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loop_resets_the_deployment_and_the_counter_carries_on() {
    guarded(async {
        let text = "name short\nabout a short loop\nproxies 127.0.0.2 127.0.0.3\ndns 127.0.0.2\n\
                    start opt-in\nat 0 push 127.0.0.2 MOVING time=15 target=null\n\
                    at 0.5 dns 127.0.0.3\nat 1 close 127.0.0.2\nend 1.5\n";
        let mut opts = SimOptions::new(Scenario::parse("short.scn", text).unwrap());
        opts.speed = 10.0;
        opts.repeat = true;
        let sim = Simulator::start(opts).await.unwrap();
        let dns = resolver(&sim);
        let mut events = sim.events();
        // Connected to the other proxy from the start: no step closes it, only the reset does.
        let mut bystander = Client::connect(addr(&sim, 3)).await;
        bystander.hello3().await;
        let mut c = Client::connect(addr(&sim, 2)).await;
        c.opt_in().await;
        assert_eq!(show(&c.expect("MOVING").await), show(MOVING));
        assert!(c.until_closed().await.is_empty());
        let reset = wait_for(&mut events, |w| matches!(w, What::Reset { .. })).await;
        assert_eq!(reset.what, What::Reset { connections: 1 });
        assert!(
            bystander.until_closed().await.is_empty(),
            "closed by the reset"
        );
        // Round two has not started (nobody is opted in), so DNS shows the reset as it is.
        assert_eq!(
            answer(&dns, &sim).await,
            vec![ip(2)],
            "DNS back to its first answer"
        );
        let mut round2 = Client::connect(addr(&sim, 2)).await;
        round2.opt_in().await;
        wait_for(&mut events, |w| matches!(w, What::Started { iteration: 2 })).await;
        let second = round2.expect("MOVING again").await;
        assert_eq!(
            show(&second),
            show(b">4\r\n$6\r\nMOVING\r\n:1\r\n:15\r\n_\r\n")
        );
        sim.shutdown().await;
    })
    .await;
}

#[test]
fn a_bad_scenario_file_names_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.scn");
    std::fs::write(
        &path,
        "name bad\nabout x\nproxies 127.0.0.2\ndns 127.0.0.2\n\nat 1 push * MOVING time=abc target=null\nend 2\n",
    )
    .unwrap();
    let e = scenarios::load(&path).unwrap_err().to_string();
    assert_eq!(
        e,
        format!(
            "{}:6: field 'time': expected an integer, found \"abc\"",
            path.display()
        )
    );
}

#[test]
fn list_and_help_describe_every_scenario() {
    use clap::{Args, Command};
    let listing = scenarios::listing();
    let help = maintwatch::cli::simulate::SimulateArgs::augment_args(Command::new("simulate"))
        .term_width(100)
        .render_long_help()
        .to_string();
    let demo_help = maintwatch::cli::simulate::DemoArgs::augment_args(Command::new("demo"))
        .term_width(100)
        .render_long_help()
        .to_string();
    let words = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
    let all = scenarios::all();
    assert!(all.len() >= 10);
    for s in &all {
        assert!(listing.contains(&format!("{}  ", s.name)) && listing.contains(&s.about));
        assert_eq!(
            listing.lines().filter(|l| l.contains(&s.about)).count(),
            1,
            "one line each"
        );
        for h in [&help, &demo_help] {
            assert!(h.contains(&s.name), "{} missing from help", s.name);
            assert!(
                words(h).contains(&words(&s.about)),
                "{}'s description missing from help",
                s.name
            );
        }
    }
}
