//! `simulate --grade`: each rule met and broken by a scripted client over raw TCP, and the grade
//! of `maintwatch watch` itself.
//!
//! The scripted clients act on what the simulator narrates (the MOVING pushed, DNS changed), not
//! on a timer, so the order of what they do is fixed; the scenarios run sped up with at least a
//! second of real time between the step a client reacts to and the close.

use crate::common;

use std::net::SocketAddr;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::broadcast;

use maintwatch::grading::judge::Verdict;
use maintwatch::protocol::resp::{encode_command, StreamReader};
use maintwatch::simulator::sim::{scenarios, SimEvent, SimOptions, Simulator, What};
use maintwatch::simulator::simulation::grade::{grade, ClientGrade, Grade};

const HANG_GUARD: Duration = Duration::from_secs(40);

async fn start(name: &str, speed: f64) -> (Simulator, broadcast::Receiver<SimEvent>) {
    start_scenario(scenarios::by_name(name).unwrap(), speed).await
}

async fn start_scenario(
    scenario: maintwatch::simulator::sim::scenario::Scenario,
    speed: f64,
) -> (Simulator, broadcast::Receiver<SimEvent>) {
    let mut opts = SimOptions::new(scenario);
    opts.speed = speed;
    opts.traffic = true;
    let sim = Simulator::start(opts).await.unwrap();
    let events = sim.events();
    (sim, events)
}

/// Asks the simulator's DNS for its hostname (A), over UDP, as a client resolving it would.
async fn resolve(sim: &Simulator) {
    use hickory_proto::op::{Message, Query};
    use hickory_proto::rr::{Name, RecordType};
    let mut m = Message::query();
    m.metadata.id = 0x4d57;
    m.add_query(Query::query(
        Name::from_ascii(sim.hostname()).unwrap(),
        RecordType::A,
    ));
    let sock = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    sock.send_to(&m.to_vec().unwrap(), sim.dns_addr())
        .await
        .unwrap();
    let mut buf = [0u8; 1500];
    let n = sock.recv(&mut buf).await.unwrap();
    assert!(Message::from_vec(&buf[..n]).unwrap().answers.len() == 1);
}

fn proxy(sim: &Simulator, last: u8) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, last], sim.port()))
}

/// A raw connection that counts replies and the MOVINGs among its pushes.
struct Conn {
    s: TcpStream,
    reader: StreamReader,
    replies: usize,
    movings: usize,
}

impl Conn {
    /// Connects, `HELLO 3`, names itself, and opts in unless `opt_in` is false.
    async fn open(addr: SocketAddr, lib: &str, opt_in: bool) -> Conn {
        let mut c = Conn {
            s: TcpStream::connect(addr).await.unwrap(),
            reader: StreamReader::default(),
            replies: 0,
            movings: 0,
        };
        let mut hs = encode_command(&["HELLO", "3"]);
        hs.extend(encode_command(&["CLIENT", "SETINFO", "LIB-NAME", lib]));
        hs.extend(encode_command(&["CLIENT", "SETINFO", "LIB-VER", "1.0"]));
        let mut n = 3;
        if opt_in {
            hs.extend(encode_command(&["CLIENT", "MAINT_NOTIFICATIONS", "ON"]));
            n += 1;
        }
        c.s.write_all(&hs).await.unwrap();
        c.wait_replies(n).await;
        c
    }

    async fn wait_replies(&mut self, n: usize) {
        let want = self.replies + n;
        while self.replies < want {
            self.read_some().await;
        }
    }

    /// Reads until a MOVING has arrived on this connection (a client acts on what it read).
    async fn wait_moving(&mut self) {
        while self.movings == 0 {
            self.read_some().await;
        }
    }

    async fn read_some(&mut self) {
        let mut buf = [0u8; 4096];
        let got = self.s.read(&mut buf).await.unwrap();
        assert!(got > 0, "closed while waiting");
        self.reader.extend(&buf[..got]);
        let (mut r, mut m) = (0, 0);
        self.reader
            .drain(|_, raw, _| {
                r += usize::from(raw[0] != b'>');
                m += usize::from(raw.starts_with(b">4\r\n$6\r\nMOVING"));
            })
            .unwrap();
        self.replies += r;
        self.movings += m;
    }

    async fn set(&mut self) {
        self.s
            .write_all(&encode_command(&["SET", "k", "v"]))
            .await
            .unwrap();
        self.wait_replies(1).await;
    }
}

/// Waits for the first event that `pick` accepts.
async fn until(
    events: &mut broadcast::Receiver<SimEvent>,
    seen: &mut Vec<SimEvent>,
    pick: impl Fn(&What) -> bool,
) {
    loop {
        let e = events.recv().await.expect("events");
        let hit = pick(&e.what);
        seen.push(e);
        if hit {
            return;
        }
    }
}

/// Runs to the end, then grades.
async fn finish(
    sim: Simulator,
    mut events: broadcast::Receiver<SimEvent>,
    mut seen: Vec<SimEvent>,
) -> Grade {
    until(&mut events, &mut seen, |w| {
        matches!(w, What::Finished { .. })
    })
    .await;
    let (scenario, speed) = (sim.scenario().clone(), sim.speed());
    sim.shutdown().await;
    grade(&scenario, &seen, speed)
}

fn client<'a>(g: &'a Grade, name: &str) -> &'a ClientGrade {
    g.clients
        .iter()
        .find(|c| c.client == name)
        .unwrap_or_else(|| panic!("no client {name} in {}", g.table()))
}

fn rule(g: &Grade, name: &str, rule: &str) -> bool {
    let c = client(g, name);
    let n = &c.notifications[0];
    n.rules
        .iter()
        .find(|r| r.rule == rule)
        .unwrap_or_else(|| panic!("no rule {rule}: {}", g.table()))
        .held
}

async fn guarded<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(HANG_GUARD, f)
        .await
        .expect("hang guard")
}

fn is_moving(w: &What) -> bool {
    matches!(w, What::Pushed { summary, .. } if summary.starts_with("MOVING"))
}

/// The obeying client follows DNS to the new proxy before the close; the stubborn one stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn moving_before_the_close_passes_and_staying_fails() {
    let g = guarded(async {
        let (sim, mut events) = start("single-proxy", 2.0).await;
        let mut seen = Vec::new();
        // Both reach the proxy by its name: DNS naming another proxy is an offer to them.
        resolve(&sim).await;
        let mut good = Conn::open(proxy(&sim, 2), "obeys", true).await;
        let mut bad = Conn::open(proxy(&sim, 2), "stays", true).await;
        good.set().await;
        bad.set().await;
        until(&mut events, &mut seen, is_moving).await;
        until(&mut events, &mut seen, |w| matches!(w, What::Dns { .. })).await;
        // The grade counts from the MOVING; the DNS change as the simulator's clock had it.
        let clock_of = |f: &dyn Fn(&What) -> bool| {
            seen.iter()
                .find(|e| f(&e.what))
                .and_then(|e| e.clock)
                .unwrap()
        };
        let dns_after_moving = clock_of(&|w| matches!(w, What::Dns { .. })) - clock_of(&is_moving);
        let mut moved = Conn::open(proxy(&sim, 3), "obeys", true).await;
        moved.set().await;
        drop(good);
        bad.set().await;
        (finish(sim, events, seen).await, dns_after_moving)
    })
    .await;
    let (g, dns_after_moving) = g;
    let text = g.table();
    assert!(rule(&g, "obeys/1.0", "moved-before-close"), "{text}");
    assert!(!rule(&g, "stays/1.0", "moved-before-close"), "{text}");
    assert!(!g.passed, "{text}");
    let m = client(&g, "obeys/1.0").notifications[0]
        .moving
        .clone()
        .unwrap();
    let first = m.first_new_connection.expect("moved");
    // It moved after DNS did and before the close: order, on the scenario clock. (The grade's
    // offsets count from the MOVING, which went out a few milliseconds after the clock started.)
    assert!(
        first >= dns_after_moving && first < m.close.unwrap(),
        "{first} vs DNS at {dns_after_moving}: {text}"
    );
    assert_eq!(
        client(&g, "stays/1.0").notifications[0]
            .moving
            .as_ref()
            .unwrap()
            .cut,
        1
    );
    assert_eq!(client(&g, "obeys/1.0").opted_in.get("default"), Some(&2));
    assert!(text.contains("FAIL       moved-before-close"), "{text}");
}

/// With DNS losing the race, staying until the close is the documented outcome.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn staying_when_nothing_else_was_offered_passes() {
    let g = guarded(async {
        let (sim, mut events) = start("dns-race", 5.0).await;
        let mut seen = Vec::new();
        let mut c = Conn::open(proxy(&sim, 2), "waits", true).await;
        until(&mut events, &mut seen, is_moving).await;
        c.set().await;
        finish(sim, events, seen).await
    })
    .await;
    let text = g.table();
    assert!(rule(&g, "waits/1.0", "moved-before-close"), "{text}");
    assert_eq!(
        client(&g, "waits/1.0").notifications[0]
            .moving
            .as_ref()
            .unwrap()
            .cut,
        1,
        "{text}"
    );
    assert!(text.contains("stayed: nothing else was offered"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_that_never_opts_in_fails_the_opt_in_rule() {
    let g = guarded(async {
        let (sim, mut events) = start("dns-race", 5.0).await;
        let mut seen = Vec::new();
        let _a = Conn::open(proxy(&sim, 2), "half", true).await;
        let mut b = Conn::open(proxy(&sim, 2), "half", false).await;
        let _c = Conn::open(proxy(&sim, 2), "whole", true).await;
        until(&mut events, &mut seen, is_moving).await;
        b.set().await;
        finish(sim, events, seen).await
    })
    .await;
    assert!(!rule(&g, "half/1.0", "opt-in"), "{}", g.table());
    assert_eq!(client(&g, "half/1.0").never_opted_in, 1);
    assert!(rule(&g, "whole/1.0", "opt-in"), "{}", g.table());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_cut_by_the_close_fails_no_lost_commands() {
    let g = guarded(async {
        let (sim, mut events) = start("dns-race", 5.0).await;
        let mut seen = Vec::new();
        let mut cut = Conn::open(proxy(&sim, 2), "cut", true).await;
        let _whole = Conn::open(proxy(&sim, 2), "whole", true).await;
        until(&mut events, &mut seen, is_moving).await;
        // Half a command, the rest never written: the close takes it.
        cut.s
            .write_all(b"*3\r\n$3\r\nSET\r\n$1\r\nk")
            .await
            .unwrap();
        finish(sim, events, seen).await
    })
    .await;
    assert!(!rule(&g, "cut/1.0", "no-lost-commands"), "{}", g.table());
    assert!(rule(&g, "whole/1.0", "no-lost-commands"), "{}", g.table());
    assert_eq!(
        client(&g, "cut/1.0").notifications[0].failed_outside,
        1,
        "{}",
        g.table()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_new_connections_fail_no_storm() {
    let g = guarded(async {
        let (sim, mut events) = start("dns-race", 5.0).await;
        let mut seen = Vec::new();
        let _calm = Conn::open(proxy(&sim, 2), "calm", true).await;
        let _storm = Conn::open(proxy(&sim, 2), "storm", true).await;
        until(&mut events, &mut seen, is_moving).await;
        let _one = Conn::open(proxy(&sim, 2), "calm", true).await;
        // One connection at a time, opened and closed again and again.
        for _ in 0..10 {
            drop(Conn::open(proxy(&sim, 2), "storm", true).await);
            // Closed before the next one opens, so the peak stays at two.
            until(&mut events, &mut seen, |w| {
                matches!(
                    w,
                    What::Disconnected {
                        by_server: false,
                        ..
                    }
                )
            })
            .await;
        }
        finish(sim, events, seen).await
    })
    .await;
    assert!(!rule(&g, "storm/1.0", "no-storm"), "{}", g.table());
    assert!(rule(&g, "calm/1.0", "no-storm"), "{}", g.table());
}

/// Acting again on the re-sent MOVING (same seq) is the loop docs/protocol.md section 5 warns of.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recycling_on_a_resent_moving_fails_no_loop() {
    let g = guarded(async {
        let (sim, mut events) = start("dns-race", 5.0).await;
        let mut seen = Vec::new();
        let first = Conn::open(proxy(&sim, 2), "loops", true).await;
        let _calm = Conn::open(proxy(&sim, 2), "calm", true).await;
        until(&mut events, &mut seen, is_moving).await;
        // The looping client recycles on every MOVING it reads, the re-sent ones included.
        drop(first);
        let mut current = Conn::open(proxy(&sim, 2), "loops", true).await;
        // Three recycles: the grade counts those after the client's first action (dropping
        // `first`), and the simulator may notice that close only after the next connection got
        // its re-send, so the first recycle may not count; the two after it always do.
        for _ in 0..3 {
            // It recycles once the re-sent MOVING has reached it, as a looping client does.
            current.wait_moving().await;
            let next = Conn::open(proxy(&sim, 2), "loops", true).await;
            drop(std::mem::replace(&mut current, next));
        }
        // The calm client's reconnect gets the re-send too, and keeps its connection.
        let _kept = Conn::open(proxy(&sim, 2), "calm", true).await;
        finish(sim, events, seen).await
    })
    .await;
    let text = g.table();
    assert!(!rule(&g, "loops/1.0", "no-loop"), "{text}");
    assert!(rule(&g, "calm/1.0", "no-loop"), "{text}");
    let m = client(&g, "calm/1.0").notifications[0]
        .moving
        .clone()
        .unwrap();
    // Its first connection may have opted in after the clock started and so got the re-send
    // too: one or two re-sends, acted on by neither.
    assert!(m.resent >= 1 && m.reacted_to_resent == 0, "{text}");
}

/// Clients are told apart by CLIENT SETINFO, else the name, else the source address.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_are_grouped_by_library_then_name_then_address() {
    let g = guarded(async {
        let (sim, mut events) = start("dns-race", 5.0).await;
        let mut seen = Vec::new();
        let _lib = Conn::open(proxy(&sim, 2), "libx", true).await;
        let mut named = TcpStream::connect(proxy(&sim, 2)).await.unwrap();
        named
            .write_all(&encode_command(&["HELLO", "3", "SETNAME", "app-7"]))
            .await
            .unwrap();
        let mut anon = TcpStream::connect(proxy(&sim, 2)).await.unwrap();
        anon.write_all(&encode_command(&["PING"])).await.unwrap();
        let mut one = [0u8; 1];
        anon.read_exact(&mut one).await.unwrap();
        named.read_exact(&mut one).await.unwrap();
        until(&mut events, &mut seen, is_moving).await;
        finish(sim, events, seen).await
    })
    .await;
    let names: Vec<&str> = g.clients.iter().map(|c| c.client.as_str()).collect();
    assert_eq!(names, ["127.0.0.1", "app-7", "libx/1.0"], "{}", g.table());
    // The anonymous connection never opted in; the JSON carries the same verdicts as the table.
    let json = serde_json::to_value(&g).unwrap();
    assert_eq!(json["clients"][0]["never_opted_in"], 1);
    assert_eq!(json["passed"], false);
}

/// `maintwatch watch` follows the handoff as a dry run only: it opts in, is told, and is still on
/// the retiring proxy when the server closes it. Graded through the CLI, with --grade-json.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_grade_of_maintwatch_watch_itself() {
    let dir = tempfile::tempdir().unwrap();
    let json_path = dir.path().join("grade.json");
    let mut sim = common::maintwatch_async([
        "simulate",
        "--scenario",
        "single-proxy",
        "--speed",
        "5",
        "--quiet",
        "--grade",
    ]);
    sim.arg("--grade-json").arg(&json_path);
    let mut sim = common::Proc::spawn(sim);
    let (mut port, mut dns) = (String::new(), String::new());
    let mut text = String::new();
    guarded(async {
        while let Some(l) = sim.stdout.next_line().await.unwrap() {
            text.push_str(&l);
            text.push('\n');
            if let Some(rest) = l.trim().strip_prefix("proxies") {
                port = rest
                    .split_whitespace()
                    .next()
                    .unwrap()
                    .rsplit(':')
                    .next()
                    .unwrap()
                    .into();
            }
            if let Some(rest) = l.trim().strip_prefix("DNS") {
                dns = rest.split_whitespace().next().unwrap().into();
                break;
            }
        }
        let mut watch = common::maintwatch_async([
            "watch",
            &format!("redis://db.sim.maintwatch.test:{port}"),
            "--json",
        ])
        .args(["--dns-server", &dns, "--sim-speed", "5"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
        while let Some(l) = sim.stdout.next_line().await.unwrap() {
            text.push_str(&l);
            text.push('\n');
        }
        let status = sim.child.wait().await.unwrap();
        let _ = watch.kill().await;
        assert_eq!(status.code(), Some(1), "{text}");
    })
    .await;
    assert!(text.contains("client maintwatch:"), "{text}");
    assert!(text.contains("PASS       opt-in"), "{text}");
    assert!(text.contains("FAIL       moved-before-close"), "{text}");
    let text = std::fs::read_to_string(&json_path).unwrap();
    let g = serde_json::to_value(
        maintwatch::grading::judge::grade_lines::grade_of(&text).expect("a grade line"),
    )
    .unwrap();
    let watch = &g["clients"][0];
    assert_eq!(watch["client"], "maintwatch");
    let n = &watch["notifications"][0];
    assert_eq!(n["moving"]["cut"], 1, "{g:#}");
    assert_eq!(n["received"], 1, "{g:#}");
}

/// A stall scenario short enough for a test at real speed: a baseline stall, a stall inside the
/// FAILING_OVER's 2 s window, and one after the closing notification plus the judge's 20 s tail.
const TIMEOUTS: &str = "name timeouts
about stalls around a failover, compressed for a test
proxies 127.0.0.2
dns 127.0.0.2
ttl 5
start opt-in 4
at 0.5 stall * 1.0
at 2.0 push * FAILING_OVER time=2 shards=[\"21\"]
at 2.2 stall * 1.0
at 4.0 push * FAILED_OVER shards=[\"21\"]
at 24.5 stall * 1.0
end 26.0
";

/// How a scripted client times out: `own` seconds normally, `relaxed` after it read the opening
/// notification, until it read the closing one (or forever), or never (`None`: no timeout).
#[derive(Clone, Copy)]
struct Timeouts {
    own: Option<f64>,
    relaxed: Option<f64>,
    restores: bool,
    /// Puts its own timeout back on its own this long after it read the opening notification,
    /// closing one or not: a backstop of its own.
    backstop: Option<f64>,
    /// Sends nothing more once it has read the opening notification.
    idles: bool,
    /// Gives up on a reply without closing the connection: drops it when it comes and sends the
    /// next command at once on the same connection (Lettuce's synchronous API).
    keeps: bool,
}

impl Timeouts {
    /// Relaxes to `relaxed` on an opening notification, restores on the closing one if `restores`.
    const fn new(own: Option<f64>, relaxed: Option<f64>, restores: bool) -> Timeouts {
        Timeouts {
            own,
            relaxed,
            restores,
            backstop: None,
            idles: false,
            keeps: false,
        }
    }
}

/// Whether a scripted client is relaxed: since when, until the closing notification (when it
/// restores on it) or its own backstop.
#[derive(Default)]
struct Relaxation {
    since: Option<tokio::time::Instant>,
}

impl Relaxation {
    fn relaxed(&self, t: &Timeouts) -> bool {
        self.since.is_some_and(|since| {
            t.backstop
                .is_none_or(|b| since.elapsed() < Duration::from_secs_f64(b))
        })
    }
}

/// A scripted client: PING after PING on one opted-in connection; a reply that takes longer than
/// its current timeout is given up on by closing the connection and opening another, as most
/// clients do, or (`keeps`) by sending the next PING on the same connection, the late reply
/// dropped when it comes. Runs until `stop`.
async fn timing_client(
    addr: SocketAddr,
    lib: &'static str,
    t: Timeouts,
    stop: broadcast::Receiver<()>,
) {
    let mut stop = stop;
    let mut relaxation = Relaxation::default();
    'connect: loop {
        let mut c = Conn::open(addr, lib, true).await;
        // Every reply owed so far: a PING given up on keeps its place in the reply order.
        let mut want = c.replies;
        loop {
            if t.idles && relaxation.since.is_some() {
                let _ = stop.recv().await;
                return;
            }
            c.s.write_all(&encode_command(&["PING"])).await.unwrap();
            want += 1;
            while c.replies < want {
                let limit = match (relaxation.relaxed(&t), t.relaxed, t.own) {
                    (true, Some(r), _) => Some(r),
                    (_, _, own) => own,
                };
                let read = read_pushes(&mut c, &mut relaxation, t.restores);
                let timed = async {
                    match limit {
                        Some(l) => tokio::time::timeout(Duration::from_secs_f64(l), read)
                            .await
                            .is_ok(),
                        None => {
                            read.await;
                            true
                        }
                    }
                };
                tokio::select! {
                    ok = timed => match (ok, t.keeps) {
                        (true, _) => {}
                        (false, true) => break,
                        (false, false) => continue 'connect,
                    },
                    _ = stop.recv() => return,
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// Reads once; an opening notification (FAILING_OVER, MIGRATING) relaxes the client, a closing
/// one (FAILED_OVER, MIGRATED) restores it when it restores at all.
async fn read_pushes(c: &mut Conn, relaxation: &mut Relaxation, restores: bool) {
    let mut buf = [0u8; 4096];
    let got = c.s.read(&mut buf).await.unwrap_or(0);
    if got == 0 {
        return std::future::pending().await;
    }
    c.reader.extend(&buf[..got]);
    let (mut r, mut open, mut close) = (0, false, false);
    c.reader
        .drain(|_, raw, _| {
            r += usize::from(raw[0] != b'>');
            let has = |word: &[u8]| raw.windows(word.len()).any(|w| w == word);
            open |= has(b"FAILING_OVER") || has(b"MIGRATING");
            close |= has(b"FAILED_OVER") || has(b"MIGRATED");
        })
        .unwrap();
    c.replies += r;
    if open && relaxation.since.is_none() {
        relaxation.since = Some(tokio::time::Instant::now());
    }
    if close && restores {
        relaxation.since = None;
    }
}

fn verdict_of(g: &Grade, name: &str, rule: &str) -> (Verdict, String) {
    let r = client(g, name).notifications[0]
        .rules
        .iter()
        .find(|r| r.rule == rule)
        .unwrap_or_else(|| panic!("no rule {rule}: {}", g.table()))
        .clone();
    (r.verdict, r.detail)
}

/// Plays `scenario` at real speed to the scripted `clients` (named by their library), all at
/// once, and grades the run.
async fn timing_run(
    scenario: maintwatch::simulator::sim::scenario::Scenario,
    clients: Vec<(&'static str, Timeouts)>,
) -> Grade {
    tokio::time::timeout(Duration::from_secs(90), async {
        let mut opts = SimOptions::new(scenario);
        opts.traffic = true;
        let sim = Simulator::start(opts).await.unwrap();
        let mut events = sim.events();
        let (stop, _) = broadcast::channel(1);
        let addr = proxy(&sim, 2);
        let tasks: Vec<_> = clients
            .into_iter()
            .map(|(lib, t)| tokio::spawn(timing_client(addr, lib, t, stop.subscribe())))
            .collect();
        let mut seen = Vec::new();
        until(&mut events, &mut seen, |w| {
            matches!(w, What::Finished { .. })
        })
        .await;
        let _ = stop.send(());
        for t in tasks {
            t.await.unwrap();
        }
        let (scenario, speed) = (sim.scenario().clone(), sim.speed());
        sim.shutdown().await;
        grade(&scenario, &seen, speed)
    })
    .await
    .expect("hang guard")
}

/// The client's own timeout as both timeout rules of one notification name it: the same figure,
/// the give-up the baseline stall showed, shorter than that 1.0 s stall. Not the client's
/// configured 0.3 s: the judge reads it off the server's side, from the moment the simulator's
/// task read the held command to the moment it saw the close (or the next command), and the
/// machine's load shifts each of those, and the client's timer, by tens of milliseconds.
fn assert_own_timeout_from_the_baseline(relaxed: &str, restored: &str) {
    let figure = |why: &str, before: &str| -> f64 {
        let rest = &why[why
            .find(before)
            .unwrap_or_else(|| panic!("{before:?} in {why}"))
            + before.len()..];
        rest[..rest.find(" s)").unwrap()].parse().unwrap()
    };
    let own = figure(relaxed, ": its own timeout (");
    assert_eq!(
        own,
        figure(restored, "back to its own timeout ("),
        "{relaxed}\n{restored}"
    );
    assert!(own > 0.0 && own < 1.0, "{relaxed}");
}

/// Six scripted clients through the same stalls: one relaxes its 0.3 s timeout in the window and
/// restores it at the closing notification; one never relaxes; one relaxes and never restores;
/// one has no timeout at all, so its own timeout is never seen. Two more give up without closing
/// the connection (the next PING on it while the old reply is held): one never relaxes, one
/// relaxes and restores. Each earns the verdicts it was built for, and the untimed one NOT
/// JUDGED, with a reason that says what the wire did not show.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeouts_relaxed_never_forever_and_unseen() {
    let scenario =
        maintwatch::simulator::sim::scenario::Scenario::parse("timeouts.scn", TIMEOUTS).unwrap();
    let own = Some(0.3);
    let g = timing_run(
        scenario,
        vec![
            ("relaxes", Timeouts::new(own, Some(5.0), true)),
            ("never", Timeouts::new(own, None, true)),
            ("forever", Timeouts::new(own, Some(5.0), false)),
            ("untimed", Timeouts::new(None, None, true)),
            (
                "keeps-never",
                Timeouts {
                    keeps: true,
                    ..Timeouts::new(own, None, true)
                },
            ),
            (
                "keeps-relaxes",
                Timeouts {
                    keeps: true,
                    ..Timeouts::new(own, Some(5.0), true)
                },
            ),
        ],
    )
    .await;
    let text = g.table();
    let v = |c: &str, r: &str| verdict_of(&g, &format!("{c}/1.0"), r);
    assert_eq!(v("relaxes", "relaxed-timeout").0, Verdict::Pass, "{text}");
    assert_eq!(v("relaxes", "timeout-restored").0, Verdict::Pass, "{text}");
    let (never, why) = v("never", "relaxed-timeout");
    assert_eq!(never, Verdict::Fail, "{text}");
    assert!(why.contains(" s), not the relaxed 10 s"), "{why}");
    let (back, restored) = v("never", "timeout-restored");
    assert_eq!(back, Verdict::Pass, "{text}");
    assert_own_timeout_from_the_baseline(&why, &restored);
    assert_eq!(v("forever", "relaxed-timeout").0, Verdict::Pass, "{text}");
    let (forever, why) = v("forever", "timeout-restored");
    assert_eq!(forever, Verdict::Fail, "{text}");
    assert!(why.contains("still relaxed"), "{why}");
    for rule in ["relaxed-timeout", "timeout-restored"] {
        let (unseen, why) = v("untimed", rule);
        assert_eq!(unseen, Verdict::NotJudged, "{text}");
        assert!(why.contains("the client's timeout was never seen: during the baseline stall (1.0 s at +0.5 s) it neither closed the connection nor wrote on it again"), "{why}");
    }
    // Giving up without a close shows on the wire as the next command written while the old
    // reply is held.
    let (kept, why) = v("keeps-never", "relaxed-timeout");
    assert_eq!(kept, Verdict::Fail, "{text}");
    assert!(why.contains(", and kept the connection (it wrote its next command while that reply was still held): its own timeout ("), "{why}");
    let (back, restored) = v("keeps-never", "timeout-restored");
    assert_eq!(back, Verdict::Pass, "{text}");
    assert!(restored.contains(", and kept the connection"), "{restored}");
    assert_own_timeout_from_the_baseline(&why, &restored);
    assert_eq!(
        v("keeps-relaxes", "relaxed-timeout").0,
        Verdict::Pass,
        "{text}"
    );
    assert_eq!(
        v("keeps-relaxes", "timeout-restored").0,
        Verdict::Pass,
        "{text}"
    );
    assert_eq!(g.verdict, Verdict::Fail, "{text}");
}

/// The shipped no-closing-notification scenario at real speed: MIGRATING and never a MIGRATED,
/// and a stall 31 s after it, past the 30 s backstop. Three scripted clients with a 0.3 s
/// timeout relax it on the MIGRATING: one puts it back on its own once the announced 2 s window
/// is over (PASS), one keeps it relaxed for good (FAIL, saying how long after the MIGRATING),
/// one sends nothing after the MIGRATING, so no command waits in that stall (NOT JUDGED).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_backstop_stall_passes_a_restoring_client_and_fails_one_relaxed_for_good() {
    let own = Some(0.3);
    let g = timing_run(
        scenarios::by_name("no-closing-notification").unwrap(),
        vec![
            (
                "restores",
                Timeouts {
                    backstop: Some(2.0),
                    ..Timeouts::new(own, Some(5.0), true)
                },
            ),
            ("forever", Timeouts::new(own, Some(5.0), true)),
            (
                "idles",
                Timeouts {
                    idles: true,
                    ..Timeouts::new(own, Some(5.0), true)
                },
            ),
        ],
    )
    .await;
    let text = g.table();
    let v = |c: &str| verdict_of(&g, &format!("{c}/1.0"), "timeout-restored");
    let (restores, why) = v("restores");
    assert_eq!(restores, Verdict::Pass, "{text}");
    assert!(
        why.contains(
            "(no closing notification: the 30 s backstop): back to its own timeout (0.3 s)"
        ),
        "{why}"
    );
    let (forever, why) = v("forever");
    assert_eq!(forever, Verdict::Fail, "{text}");
    assert!(
        why.ends_with(
            "still relaxed 31 s after the opening notification with no closing one (backstop 30 s)"
        ),
        "{why}"
    );
    let (idles, why) = v("idles");
    assert_eq!(idles, Verdict::NotJudged, "{text}");
    assert!(
        why.starts_with("no command of the client was waiting during the 3.0 s stall at +31.0 s"),
        "{why}"
    );
    for c in ["restores", "forever"] {
        let (relaxed, why) = verdict_of(&g, &format!("{c}/1.0"), "relaxed-timeout");
        assert_eq!(relaxed, Verdict::Pass, "{c}: {why}");
    }
}

/// A key whose slot is among those oss-cluster moves (8892-8991).
fn key_in_moved_slots() -> String {
    (0..)
        .map(|i| format!("k{i}"))
        .find(|k| {
            (8892..=8991).contains(&maintwatch::simulator::sim::cluster_slots::key_slot(
                k.as_bytes(),
            ))
        })
        .unwrap()
}

/// A scripted cluster client that ignores the SMIGRATED and keeps sending a moved slot's key to
/// the source: the simulator answers `-MOVED` as a real cluster would, and `smigrated-refresh`
/// fails with the count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ignoring_smigrated_collects_moved_and_fails_smigrated_refresh() {
    let g = guarded(async {
        let (sim, mut events) = start("oss-cluster", 1.0).await;
        let mut seen = Vec::new();
        let mut nodes = Vec::new();
        for last in [2, 3, 4] {
            nodes.push(Conn::open(proxy(&sim, last), "ignores", true).await);
        }
        until(
            &mut events,
            &mut seen,
            |w| matches!(w, What::Pushed { summary, .. } if summary.starts_with("SMIGRATED")),
        )
        .await;
        let key = key_in_moved_slots();
        let source = &mut nodes[1];
        for _ in 0..3 {
            source
                .s
                .write_all(&encode_command(&["GET", &key]))
                .await
                .unwrap();
            source.wait_replies(1).await;
        }
        finish(sim, events, seen).await
    })
    .await;
    let text = g.table();
    let n = client(&g, "ignores/1.0")
        .notifications
        .iter()
        .find(|n| n.notification.starts_with("SMIGRATED"))
        .unwrap();
    let r = n
        .rules
        .iter()
        .find(|r| r.rule == "smigrated-refresh")
        .unwrap();
    assert_eq!(r.verdict, Verdict::Fail, "{text}");
    assert!(r.detail.contains("got 3 -MOVED"), "{}", r.detail);
}

/// The SMIGRATED's verdict of a rule for one client.
fn smigrated_rule<'a>(
    g: &'a Grade,
    client_name: &str,
    rule: &str,
) -> &'a maintwatch::grading::judge::Rule {
    client(g, client_name)
        .notifications
        .iter()
        .find(|n| n.notification.starts_with("SMIGRATED"))
        .and_then(|n| n.rules.iter().find(|r| r.rule == rule))
        .unwrap_or_else(|| panic!("no {rule} on the SMIGRATED of {client_name}: {}", g.table()))
}

/// Two scripted sharded subscribers on the source of oss-cluster's move: one subscribes again
/// at the target after the server's SUNSUBSCRIBE, the other lets the subscription go. The
/// simulator's sharded messages reach the first and nobody else, and `sharded-resubscribe` says
/// so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sharded_subscriber_that_subscribes_again_passes_and_one_that_drops_it_fails() {
    let g = guarded(async {
        let (sim, mut events) = start("oss-cluster", 1.0).await;
        let mut seen = Vec::new();
        let channel = key_in_moved_slots();
        let ssubscribe = encode_command(&["SSUBSCRIBE", &channel]);
        // Both subscribe before the third opt-in starts the clock: before the move, whatever
        // the machine's load.
        let mut again = Conn::open(proxy(&sim, 3), "resubscribes", true).await;
        let mut dropping = Conn::open(proxy(&sim, 3), "drops", true).await;
        again.s.write_all(&ssubscribe).await.unwrap();
        dropping.s.write_all(&ssubscribe).await.unwrap();
        let mut drops = vec![dropping];
        for on in [true, true] {
            until(
                &mut events,
                &mut seen,
                |w| matches!(w, What::Sharded { on: o, .. } if *o == on),
            )
            .await;
        }
        for last in [2, 4] {
            drops.push(Conn::open(proxy(&sim, last), "drops", true).await);
        }
        for _ in 0..2 {
            until(&mut events, &mut seen, |w| {
                matches!(
                    w,
                    What::Sharded {
                        on: false,
                        by_server: true,
                        ..
                    }
                )
            })
            .await;
        }
        let mut target = Conn::open(proxy(&sim, 5), "resubscribes", true).await;
        target.s.write_all(&ssubscribe).await.unwrap();
        let g = finish(sim, events, seen).await;
        drop((drops, again, target));
        g
    })
    .await;
    let kept = smigrated_rule(&g, "resubscribes/1.0", "sharded-resubscribe");
    assert_eq!(kept.verdict, Verdict::Pass, "{}", g.table());
    assert!(kept.detail.contains("subscribed again"), "{}", kept.detail);
    let lost = smigrated_rule(&g, "drops/1.0", "sharded-resubscribe");
    assert_eq!(lost.verdict, Verdict::Fail, "{}", g.table());
    assert!(lost.detail.contains("never reached it"), "{}", lost.detail);
}

/// Under `start opt-in 3 ssubscribe`, three opted-in connections do not start oss-cluster's
/// clock; the subscription that follows does, so the move finds it and the rule is judged.
/// Under plain `start opt-in 3`, the same subscriber opened only after the move is NOT JUDGED,
/// with when it subscribed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_clock_waits_for_a_late_sharded_subscriber_and_one_after_the_move_is_not_judged() {
    use maintwatch::simulator::sim::scenario::Start;
    for waits in [true, false] {
        let g = guarded(async {
            let mut scenario = scenarios::by_name("oss-cluster").unwrap();
            if waits {
                scenario.start = Start::OptInSsubscribe(3);
            }
            let (sim, mut events) = start_scenario(scenario, 1.0).await;
            let mut seen = Vec::new();
            let mut conns = Vec::new();
            for last in [2, 3, 4] {
                conns.push(Conn::open(proxy(&sim, last), "late", true).await);
            }
            if !waits {
                until(&mut events, &mut seen, |w| {
                    matches!(w, What::Assigned { .. })
                })
                .await;
            }
            let owner = if waits { 3 } else { 5 };
            let mut sub = Conn::open(proxy(&sim, owner), "late", true).await;
            sub.s
                .write_all(&encode_command(&["SSUBSCRIBE", &key_in_moved_slots()]))
                .await
                .unwrap();
            until(&mut events, &mut seen, |w| {
                matches!(w, What::Sharded { on: true, .. })
            })
            .await;
            conns.push(sub);
            let g = finish(sim, events, seen.clone()).await;
            drop(conns);
            (g, seen)
        })
        .await;
        let (g, seen) = g;
        let started = seen.iter().any(|e| matches!(e.what, What::Started { .. }));
        assert_eq!(
            started, !waits,
            "the clock started before the SSUBSCRIBE: waits {waits}"
        );
        let r = smigrated_rule(&g, "late/1.0", "sharded-resubscribe");
        if waits {
            assert_ne!(r.verdict, Verdict::NotJudged, "{}", g.table());
        } else {
            assert_eq!(r.verdict, Verdict::NotJudged, "{}", g.table());
            assert!(
                r.detail.contains("no sharded subscription was open"),
                "{}",
                r.detail
            );
        }
    }
}

/// A subscriber whose channel stays where it was is not judged on the move: its messages prove
/// nothing about a migration.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sharded_subscriber_outside_the_moved_slots_is_not_judged() {
    let g = guarded(async {
        let (sim, mut events) = start("oss-cluster", 1.0).await;
        let mut seen = Vec::new();
        let channel = (0..)
            .map(|i| format!("calm{i}"))
            .find(|k| {
                !(8892..=8991).contains(&maintwatch::simulator::sim::cluster_slots::key_slot(
                    k.as_bytes(),
                ))
            })
            .unwrap();
        let slot = maintwatch::simulator::sim::cluster_slots::key_slot(channel.as_bytes());
        let owner = [(2, 0..=5460), (3, 5461..=10922), (4, 10923..=16383)]
            .into_iter()
            .find(|(_, r)| r.contains(&slot))
            .unwrap()
            .0;
        // Subscribed at the owner before the other nodes' opt-ins start the clock.
        let mut conns = vec![Conn::open(proxy(&sim, owner), "calm", true).await];
        conns[0]
            .s
            .write_all(&encode_command(&["SSUBSCRIBE", &channel]))
            .await
            .unwrap();
        until(&mut events, &mut seen, |w| {
            matches!(w, What::Sharded { on: true, .. })
        })
        .await;
        for last in [2, 3, 4].into_iter().filter(|l| *l != owner) {
            conns.push(Conn::open(proxy(&sim, last), "calm", true).await);
        }
        let g = finish(sim, events, seen).await;
        drop(conns);
        g
    })
    .await;
    let r = smigrated_rule(&g, "calm/1.0", "sharded-resubscribe");
    assert_eq!(r.verdict, Verdict::NotJudged, "{}", g.table());
    assert!(
        r.detail.contains("in none of the moved slots"),
        "{}",
        r.detail
    );
}
