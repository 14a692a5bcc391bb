//! The scenarios that the peers' own harnesses lack, each played over real sockets and read the
//! way a client reads them: `explicit-target`, `no-closing-notification`, `optin-lost`,
//! `ipv6-target` and `cascading-smigrated` (scenarios/README.md says what each measures and what
//! it only describes).

use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use hickory_resolver::config::{
    ConnectionConfig, NameServerConfig, ResolveHosts, ResolverConfig, ResolverOpts,
};
use hickory_resolver::net::runtime::TokioRuntimeProvider;
use hickory_resolver::TokioResolver;

use crate::common::client::{show, Client};
use crate::common::narration::until_finished;
use maintwatch::simulator::sim::scenario::Start;
use maintwatch::simulator::sim::{scenarios, SimOptions, Simulator, What};
use maintwatch::simulator::simulation::grade;
use tokio::net::TcpStream;

/// Hang guard for a whole test; every wait inside is for bytes or an event, not for time.
const HANG_GUARD: Duration = Duration::from_secs(30);
const MIGRATING: &[u8] = include_bytes!("../fixtures/captures/migrating.resp");
const MOVING: &[u8] = include_bytes!("../fixtures/captures/moving-null-target.resp");
const SMIGRATING: &[u8] = include_bytes!("../fixtures/captures/smigrating.resp");
const REFUSAL: &[u8] = b"-ERR unknown subcommand 'MAINT_NOTIFICATIONS'. Try CLIENT HELP.\r\n";

async fn guarded<F: Future<Output = ()>>(test: F) {
    tokio::time::timeout(HANG_GUARD, test)
        .await
        .expect("test did not finish within the hang guard");
}

async fn start(name: &str, speed: f64, opt_ins: Option<usize>) -> Simulator {
    let mut scenario = scenarios::by_name(name).expect("embedded scenario");
    if let Some(n) = opt_ins {
        scenario.start = Start::OptIn(n);
    }
    let mut opts = SimOptions::new(scenario);
    opts.speed = speed;
    Simulator::start(opts).await.expect("simulator starts")
}

fn addr(sim: &Simulator, last_octet: u8) -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(127, 0, 0, last_octet)), sim.port())
}

/// MIGRATING arrives and nothing closes it: the scenario ends with the connection open and no
/// MIGRATED sent, then or to a later opt-in (nothing to replay).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_closing_notification_sends_migrating_and_never_migrated() {
    guarded(async {
        let sim = start("no-closing-notification", 20.0, None).await;
        let mut events = sim.events();
        let mut c = Client::connect(addr(&sim, 2)).await;
        c.opt_in().await;
        assert_eq!(show(&c.expect("MIGRATING").await), show(MIGRATING));
        let seen = until_finished(&mut events).await;
        let sent: Vec<&[u8]> = seen
            .iter()
            .filter_map(|e| match &e.what {
                What::Sent { bytes, .. } => Some(&bytes[..]),
                _ => None,
            })
            .collect();
        assert_eq!(sent, [MIGRATING], "only the MIGRATING was ever sent");
        assert!(!seen.iter().any(|e| matches!(e.what, What::Closed { .. })));
        // The next frame is PING's reply: no MIGRATED was waiting.
        assert_eq!(show(&c.call(&["PING"]).await), "+PONG\\r\\n");
        let mut later = Client::connect(addr(&sim, 2)).await;
        later.opt_in().await;
        assert_eq!(show(&later.call(&["PING"]).await), "+PONG\\r\\n");
        sim.shutdown().await;
    })
    .await;
}

/// The opt-in is accepted and the MOVING arrives; the restart closes the connection; after the
/// reconnect the same opt-in gets Redis OSS's refusal, byte for byte, and the connection still
/// serves commands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn optin_lost_accepts_then_refuses_after_the_restart() {
    guarded(async {
        let sim = start("optin-lost", 10.0, None).await;
        let mut events = sim.events();
        let mut c = Client::connect(addr(&sim, 2)).await;
        c.opt_in().await;
        assert_eq!(show(&c.expect("MOVING").await), show(MOVING));
        assert!(c.until_closed().await.is_empty(), "the restart closes it");
        let mut again = Client::connect(addr(&sim, 2)).await;
        assert_eq!(show(&again.try_opt_in().await), show(REFUSAL));
        assert_eq!(show(&again.call(&["PING"]).await), "+PONG\\r\\n");
        let seen = until_finished(&mut events).await;
        let answers: Vec<bool> = seen
            .iter()
            .filter_map(|e| match e.what {
                What::OptIn { accepted, .. } => Some(accepted),
                _ => None,
            })
            .collect();
        assert_eq!(answers, [true, false]);
        // The connection that asked after the restart did its part: the judge counts it as
        // having asked, and says the server refused it.
        let scenario = scenarios::by_name("optin-lost").expect("embedded scenario");
        let g = grade::grade(&scenario, &seen, 10.0);
        let r = g.clients[0].notifications[0]
            .rules
            .iter()
            .find(|r| r.rule == "opt-in")
            .expect("opt-in judged on the MOVING");
        assert!(r.held, "{}", g.table());
        assert_eq!(
            r.detail,
            "0 connection(s) never opted in; 1 asked and was refused by the server"
        );
        sim.shutdown().await;
    })
    .await;
}

/// The MOVING's target is `[::1]:PORT` in a blob of its own length, and nothing listens there;
/// the old proxy's close still comes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ipv6_target_names_a_bracketed_address() {
    guarded(async {
        let sim = start("ipv6-target", 20.0, None).await;
        let mut c = Client::connect(addr(&sim, 2)).await;
        c.opt_in().await;
        let target = format!("[::1]:{}", sim.port());
        let want = format!(
            ">4\r\n$6\r\nMOVING\r\n:0\r\n:15\r\n${}\r\n{target}\r\n",
            target.len()
        );
        assert_eq!(show(&c.expect("MOVING").await), show(want.as_bytes()));
        assert!(c.until_closed().await.is_empty(), "then the close");
        let refused = TcpStream::connect(SocketAddr::new(
            IpAddr::from(std::net::Ipv6Addr::LOCALHOST),
            sim.port(),
        ))
        .await;
        assert!(refused.is_err(), "nothing listens at {target}");
        sim.shutdown().await;
    })
    .await;
}

/// SMIGRATED for `source -> target` with this seq, as the simulator encodes it (the capture's
/// shape, docs/protocol.md section 2).
fn smigrated(seq: i64, source: SocketAddr, target: SocketAddr) -> String {
    let (s, t) = (source.to_string(), target.to_string());
    format!(
        ">3\r\n$9\r\nSMIGRATED\r\n:{seq}\r\n*1\r\n*3\r\n${}\r\n{s}\r\n${}\r\n{t}\r\n$9\r\n8892-8991\r\n",
        s.len(),
        t.len()
    )
}

/// Two migrations of the same slots back to back: four frames with consecutive seqs, the
/// second SMIGRATED naming the first one's target as its source; afterwards the slots' keys
/// are served by the last node and the middle one answers -MOVED.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cascading_smigrated_moves_the_slots_twice() {
    guarded(async {
        let sim = start("cascading-smigrated", 10.0, Some(1)).await;
        let mut events = sim.events();
        let mut c = Client::connect(addr(&sim, 2)).await;
        c.opt_in().await;
        let (n3, n4, n5) = (addr(&sim, 3), addr(&sim, 4), addr(&sim, 5));
        let smigrating20 = show(SMIGRATING).replace(":18\\r\\n", ":20\\r\\n");
        let want = [
            show(SMIGRATING),
            show(smigrated(19, n3, n5).as_bytes()),
            smigrating20,
            show(smigrated(21, n5, n4).as_bytes()),
        ];
        for (i, w) in want.iter().enumerate() {
            assert_eq!(&show(&c.expect("a migration frame").await), w, "frame {i}");
        }
        until_finished(&mut events).await;
        // A key of the moved slots, found by the simulator's own slot function.
        let key = (0..100_000)
            .map(|i| format!("k{i}"))
            .find(|k| {
                let slot = maintwatch::simulator::sim::cluster_slots::key_slot(k.as_bytes());
                (8892..=8991).contains(&slot)
            })
            .expect("a key in 8892-8991");
        let mut middle = Client::connect(n5).await;
        middle.call(&["HELLO", "3"]).await;
        let moved = middle.call(&["GET", &key]).await;
        let slot = maintwatch::simulator::sim::cluster_slots::key_slot(key.as_bytes());
        assert_eq!(show(&moved), format!("-MOVED {slot} {n4}\\r\\n"));
        let mut last = Client::connect(n4).await;
        last.call(&["HELLO", "3"]).await;
        assert_eq!(show(&last.call(&["GET", &key]).await), "_\\r\\n");
        sim.shutdown().await;
    })
    .await;
}

/// A resolver that asks only the simulator, with no cache and no hosts file.
fn resolver(sim: &Simulator) -> TokioResolver {
    let ns = sim.dns_addr();
    let mut udp = ConnectionConfig::udp();
    udp.port = ns.port();
    let config =
        ResolverConfig::from_name_servers(vec![NameServerConfig::new(ns.ip(), true, vec![udp])]);
    let mut opts = ResolverOpts::default();
    opts.cache_size = 0;
    opts.use_hosts_file = ResolveHosts::Never;
    TokioResolver::builder_with_config(config, TokioRuntimeProvider::default())
        .with_options(opts)
        .build()
        .expect("resolver")
}

/// The MOVING's target (its last element) as text, `None` for a null.
fn moving_target(frame: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(frame).into_owned();
    let prefix = ">4\r\n$6\r\nMOVING\r\n:0\r\n:15\r\n";
    let rest = text
        .strip_prefix(prefix)
        .unwrap_or_else(|| panic!("{}", show(frame)));
    if rest == "_\r\n" {
        return None;
    }
    let (len, value) = rest[1..].split_once("\r\n").unwrap();
    let value = value.strip_suffix("\r\n").unwrap();
    assert_eq!(
        len.parse::<usize>().unwrap(),
        value.len(),
        "{}",
        show(frame)
    );
    Some(value.to_string())
}

/// Every `moving-endpoint-type` gets the replacement in its own form: the ip forms its address,
/// the fqdn forms a host name the simulator's DNS resolves to it, `none` a null, a bare ON the ip
/// form; a connection opting in while the window is open gets the re-sent MOVING in its form
/// too. Following the target reaches the replacement.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explicit_target_names_the_replacement_in_the_form_asked_for() {
    guarded(async {
        let asks = [
            Some("internal-ip"),
            Some("external-ip"),
            Some("internal-fqdn"),
            Some("EXTERNAL-FQDN"),
            Some("none"),
            None,
        ];
        let sim = start("explicit-target", 20.0, Some(asks.len())).await;
        let port = sim.port();
        let ip_form = format!("127.0.0.3:{port}");
        let fqdn_form = format!("proxy-127-0-0-3.sim.maintwatch.test:{port}");
        let mut clients = Vec::new();
        for ask in asks {
            let mut c = Client::connect(addr(&sim, 2)).await;
            c.call(&["HELLO", "3"]).await;
            let mut opt_in = vec!["CLIENT", "MAINT_NOTIFICATIONS", "ON"];
            opt_in.extend(
                ask.map(|t| ["moving-endpoint-type", t])
                    .into_iter()
                    .flatten(),
            );
            assert_eq!(show(&c.call(&opt_in).await), "+OK\\r\\n", "{ask:?}");
            clients.push(c);
        }
        let want = [
            Some(&ip_form),
            Some(&ip_form),
            Some(&fqdn_form),
            Some(&fqdn_form),
            None,
            Some(&ip_form),
        ];
        for (c, (ask, want)) in clients.iter_mut().zip(asks.iter().zip(want)) {
            let got = moving_target(&c.expect("MOVING").await);
            assert_eq!(got.as_ref(), want, "{ask:?}");
        }
        // The window is open: a late opt-in gets the MOVING again, in its own form.
        let mut late = Client::connect(addr(&sim, 2)).await;
        late.call(&["HELLO", "3"]).await;
        let reply = late
            .call(&[
                "CLIENT",
                "MAINT_NOTIFICATIONS",
                "ON",
                "moving-endpoint-type",
                "internal-fqdn",
            ])
            .await;
        assert_eq!(show(&reply), "+OK\\r\\n");
        assert_eq!(
            moving_target(&late.expect("re-sent MOVING").await),
            Some(fqdn_form.clone())
        );
        // The host name resolves through the simulator's DNS, and the target answers.
        let host = fqdn_form.rsplit_once(':').unwrap().0;
        let found: Vec<IpAddr> = resolver(&sim)
            .lookup_ip(format!("{host}."))
            .await
            .unwrap()
            .iter()
            .collect();
        assert_eq!(found, [IpAddr::V4(Ipv4Addr::new(127, 0, 0, 3))]);
        let mut moved = Client::connect(addr(&sim, 3)).await;
        assert_eq!(show(&moved.call(&["PING"]).await), "+PONG\\r\\n");
        sim.shutdown().await;
    })
    .await;
}
