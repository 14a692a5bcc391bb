//! The robustness set (scenarios/README.md, "The robustness set"), each case met by scripted
//! clients of ours over raw TCP: one that carries on after the frame passes `keeps-working`; one
//! that dies on it, one that stops sending (hangs) and one that reconnects over and over fail it,
//! each with its own words. The failing kinds take turns over the cases, so each meets seven.
//!
//! The clients act on what they read (the first push after their handshake), not on a timer; the
//! scenarios play at speed 1, since the rule's hang bound is real seconds and each case leaves
//! 5 s after its frame. All cases play at once, each with its own simulator, in front of one real
//! redis-server: each round of a scripted client is a pipelined MULTI / SET / EXEC and a short
//! BLPOP, and a second connection of it is subscribed, so that the cases whose push waits for
//! such a state (`push P when STATE`) find it. Without redis-server those cases SKIP and the
//! others play against the simulator alone.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

use crate::common::tier::{self, Library};
use crate::common::RealRedis;
use crate::robustness_page as page;

use maintwatch::grading::judge::{self, ClientProcess, Rule, Verdict};
use maintwatch::grading::matrix;
use maintwatch::protocol::resp::{encode_command, StreamReader};
use maintwatch::simulator::sim::upstream::Upstream;
use maintwatch::simulator::sim::{scenarios, SimOptions, Simulator, What};
use maintwatch::simulator::simulation::grade::observations;

const HANG_GUARD: Duration = Duration::from_secs(60);

/// What a scripted client does once a push has reached it.
#[derive(Debug, Clone, Copy, PartialEq)]
enum After {
    /// Carries on with its commands.
    Keep,
    /// Stops sending and reading, the connection left open.
    Hang,
    /// Drops the connection: its process died (the grade is told so).
    Die,
    /// Drops the connection, then connects, handshakes and closes again and again.
    Loop,
}

/// One connection of a scripted client: handshake done, counting replies and pushes.
struct Conn {
    s: TcpStream,
    reader: StreamReader,
    replies: usize,
    pushes: usize,
}

impl Conn {
    async fn open(addr: SocketAddr) -> Option<Conn> {
        let mut c = Conn {
            s: TcpStream::connect(addr).await.ok()?,
            reader: StreamReader::default(),
            replies: 0,
            pushes: 0,
        };
        let mut hs = encode_command(&["HELLO", "3"]);
        hs.extend(encode_command(&[
            "CLIENT", "SETINFO", "LIB-NAME", "scripted",
        ]));
        hs.extend(encode_command(&["CLIENT", "SETINFO", "LIB-VER", "1.0"]));
        hs.extend(encode_command(&["CLIENT", "MAINT_NOTIFICATIONS", "ON"]));
        c.s.write_all(&hs).await.ok()?;
        c.wait_replies(4).await?;
        Some(c)
    }

    async fn wait_replies(&mut self, n: usize) -> Option<()> {
        let want = self.replies + n;
        while self.replies < want {
            self.read_some().await?;
        }
        Some(())
    }

    /// Reads what has come, counting replies and pushes; `None` when the connection ended.
    async fn read_some(&mut self) -> Option<()> {
        let mut buf = [0u8; 4096];
        let got = self.s.read(&mut buf).await.ok()?;
        if got == 0 {
            return None;
        }
        self.reader.extend(&buf[..got]);
        let (mut r, mut p) = (0, 0);
        self.reader
            .drain(|_, raw, _| {
                r += usize::from(raw[0] != b'>');
                // A subscription's own confirmation is a push too in RESP3; not a frame.
                p += usize::from(raw[0] == b'>' && !raw.starts_with(b">3\r\n$9\r\nsubscribe"));
            })
            .ok()?;
        self.replies += r;
        self.pushes += p;
        Some(())
    }

    /// One round and its replies: a pipelined MULTI / SET / EXEC, then a BLPOP that waits
    /// 50 ms; `None` when the connection ended.
    async fn round(&mut self) -> Option<()> {
        let mut pipeline = encode_command(&["MULTI"]);
        pipeline.extend(encode_command(&["SET", "k", "v"]));
        pipeline.extend(encode_command(&["EXEC"]));
        self.s.write_all(&pipeline).await.ok()?;
        self.wait_replies(3).await?;
        let blpop = encode_command(&["BLPOP", "robustness:queue", "0.05"]);
        self.s.write_all(&blpop).await.ok()?;
        self.wait_replies(1).await
    }

    /// A second connection of the client, subscribed, reading until it ends; `pushed` is set
    /// when a push other than its subscription's comes.
    async fn subscriber(addr: SocketAddr, pushed: Arc<AtomicBool>) {
        let Some(mut c) = Conn::open(addr).await else {
            return;
        };
        let subscribe = encode_command(&["SUBSCRIBE", "robustness:channel"]);
        if c.s.write_all(&subscribe).await.is_err() {
            return;
        }
        while c.pushes == 0 {
            if c.read_some().await.is_none() {
                return;
            }
        }
        pushed.store(true, Ordering::SeqCst);
        // Held open (and unread) until the client ends.
        std::future::pending::<()>().await;
    }
}

/// A client busy with a round every 20 ms until `stop`, doing `after` once a push came to one of
/// its connections.
async fn client(addr: SocketAddr, after: After, mut stop: watch::Receiver<bool>) {
    let pushed = Arc::new(AtomicBool::new(false));
    let sub = tokio::spawn(Conn::subscriber(addr, pushed.clone()));
    let mut conn = Conn::open(addr).await;
    while !*stop.borrow() {
        let Some(c) = conn.as_mut() else {
            conn = Conn::open(addr).await;
            continue;
        };
        if c.round().await.is_none() {
            conn = None;
            continue;
        }
        if c.pushes > 0 {
            pushed.store(true, Ordering::SeqCst);
        }
        if pushed.load(Ordering::SeqCst) && after != After::Keep {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    match after {
        After::Keep => {}
        After::Hang => {
            let _held = conn;
            let _ = stop.wait_for(|s| *s).await;
        }
        After::Die => drop(conn),
        After::Loop => {
            drop(conn);
            while !*stop.borrow() {
                drop(Conn::open(addr).await);
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    // The subscriber ends with the client (dies with it, or is stopped at the end).
    sub.abort();
}

/// Plays one case against one scripted client and returns its `keeps-working` result.
async fn play(name: &'static str, after: After, upstream: Option<Upstream>) -> Rule {
    let mut opts = SimOptions::new(scenarios::by_name(name).unwrap());
    opts.traffic = true;
    opts.upstream = upstream;
    let sim = Simulator::start(opts).await.unwrap();
    let mut events = sim.events();
    let addr = SocketAddr::from(([127, 0, 0, 2], sim.port()));
    let (stop, stopped) = watch::channel(false);
    let task = tokio::spawn(client(addr, after, stopped));
    let mut seen = Vec::new();
    loop {
        let e = events.recv().await.expect("every event, none lagged");
        let end = matches!(e.what, What::Finished { .. });
        seen.push(e);
        if end {
            break;
        }
    }
    stop.send_replace(true);
    task.await.unwrap();
    let (scenario, speed) = (sim.scenario().clone(), sim.speed());
    sim.shutdown().await;
    let mut obs = observations(&scenario, &seen, speed);
    obs.client_process = Some(process(&obs, after, scenario.end));
    judge::judge(&obs)
        .rules
        .into_iter()
        .find(|r| r.rule == "keeps-working")
        .unwrap_or_else(|| panic!("{name}: keeps-working not judged"))
}

/// The client's process as certify would have seen it: stopped at the end, or dead when its
/// connection dropped.
fn process(obs: &judge::Observations, after: After, end: f64) -> ClientProcess {
    let died = obs
        .connections
        .iter()
        .filter_map(|c| c.closed.map(|x| x.at))
        .fold(end, f64::min);
    let dead = after == After::Die;
    ClientProcess {
        program: "scripted".into(),
        exit_code: Some(if dead { 1 } else { 0 }),
        signal: None,
        at: if dead { died } else { end },
        stopped: !dead,
        stderr_tail: vec![if dead {
            "Error: scripted death on the frame".into()
        } else {
            String::new()
        }],
        output_file: None,
        no_resolver: None,
    }
}

fn cases() -> Vec<&'static str> {
    scenarios::names()
        .into_iter()
        .filter(|n| scenarios::is_robustness(n))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_case_passes_a_client_that_keeps_working_and_fails_one_that_dies_hangs_or_loops() {
    let redis = RealRedis::start("robustness_cases", &[]).await;
    let upstream = redis.as_ref().map(|r| Upstream::parse(&r.url()).unwrap());
    let mut cases = cases();
    assert!(cases.len() >= 25, "{cases:?}");
    if upstream.is_none() {
        // The states these cases' pushes wait for come from commands only a real server runs.
        cases.retain(|n| !n.starts_with("robust-push-"));
        crate::common::skip(
            "every_case_passes_a_client_that_keeps_working_and_fails_one_that_dies_hangs_or_loops",
            "the robust-push-* cases need redis-server as the upstream",
        );
    }
    let failing = [After::Die, After::Hang, After::Loop];
    let mut runs = tokio::task::JoinSet::new();
    for (i, name) in cases.iter().copied().enumerate() {
        for after in [After::Keep, failing[i % failing.len()]] {
            let upstream = upstream.clone();
            runs.spawn(async move { (name, after, play(name, after, upstream).await) });
        }
    }
    let results = tokio::time::timeout(HANG_GUARD, runs.join_all())
        .await
        .expect("hang guard");
    assert_eq!(results.len(), cases.len() * 2);
    for (name, after, rule) in results {
        let (verdict, words) = match after {
            After::Keep => (Verdict::Pass, "reached the server after the frame"),
            After::Hang => (Verdict::Fail, "hung: no command of it reached the server"),
            After::Die => (Verdict::Fail, "crashed: exited 1"),
            After::Loop => (Verdict::Fail, "reconnect loop: "),
        };
        assert_eq!(rule.verdict, verdict, "{name}, {after:?}: {}", rule.detail);
        assert!(
            rule.detail.contains(words),
            "{name}, {after:?}: {}",
            rule.detail
        );
    }
}

/// docs/matrix.md's robustness table has a row for every case of the set and a column for every
/// library, and each cell that is not `ok` has its why line below, naming the library and the
/// case (as the other tables' cells have theirs, `tier_matrix.rs`).
#[test]
fn the_matrix_has_every_case_and_a_why_line_for_every_cell_that_is_not_ok() {
    let section = page::section();
    let rows = page::table(&section);
    let (head, body) = rows.split_first().expect("a table");
    assert_eq!(
        head[1..],
        ["redis-py", "node-redis", "ioredis", "go-redis", "Lettuce"]
    );
    let shown: Vec<String> = body
        .iter()
        .map(|r| format!("robust-{}", r[0].trim_matches('`')))
        .collect();
    assert_eq!(shown, cases(), "one row per case, in --list order");
    // Each bullet with its continuation lines (the block of runs has bullets of its own).
    let mut bullets: Vec<String> = Vec::new();
    for line in page::prose(&section).lines() {
        match bullets.last_mut() {
            _ if line.starts_with("- ") => bullets.push(line.to_string()),
            Some(last) if line.starts_with("  ") => last.push_str(line),
            _ => {}
        }
    }
    for row in body {
        for (lib, cell) in head[1..].iter().zip(&row[1..]) {
            if *cell == "ok" {
                continue;
            }
            let named = bullets
                .iter()
                .any(|b| b.starts_with(&format!("- {lib} ")) && b.contains(row[0]));
            assert!(named, "{lib}, {}: {cell} has no why line", row[0]);
        }
    }
}

tier::tier_tests! {
    /// The newest redis-py's robustness column, from `certify --scenarios robustness` with
    /// tests/clients/redis_py_robust_app.py: every cell as docs/matrix.md records it.
    redis_py_robustness_column: robustness_column(tier::REDIS_PY, "redis_py_robust_app.py");
    /// The same for node-redis (tests/clients/node_redis_robust_app.js).
    node_redis_robustness_column: robustness_column(tier::NODE_REDIS, "node_redis_robust_app.js");
    /// The same for ioredis (tests/clients/ioredis_robust_app.js).
    ioredis_robustness_column: robustness_column(tier::IOREDIS, "ioredis_robust_app.js");
    /// The same for go-redis (tests/clients/go-redis/go_redis_robust_app, built with the others).
    go_redis_robustness_column: robustness_column(tier::GO_REDIS, "go_redis_robust_app");
    /// The same for Lettuce (LettuceRobustApp, at its tier's --jobs).
    lettuce_robustness_column: robustness_column(tier::LETTUCE, "maintwatch.LettuceRobustApp");
}

/// Certifies the library's robustness application on the whole set and checks every cell
/// against its column of docs/matrix.md, when the newest release is the one the page names;
/// `None` after a SKIP line. A cell whose recorded runs varied takes any verdict they gave (one
/// they never gave is named, to be measured again); the others must be what they were. With
/// `MAINTWATCH_REGENERATE=1` the column and its runs' lines are rewritten instead, over
/// `MAINTWATCH_MATRIX_RUNS` runs (scripts/clients/matrix.sh).
async fn robustness_column(test: &str, lib: &Library, app: &str) -> Option<()> {
    let (dir, version, redis) = lib.with_redis(test)?;
    let section = page::section();
    // As the matrix's rows name it (Lettuce's `.RELEASE` left out).
    let label = lib.tier_version(&dir, &version).label;
    if !section.contains(&label) && !crate::common::regenerating() {
        crate::common::skip(
            test,
            &format!("docs/matrix.md's robustness table is not of {label}: measure it"),
        );
        return None;
    }
    let cmd = lib.command(&dir, app, &[]);
    let runs = tier::matrix_runs().to_string();
    let mut flags: Vec<&str> = lib.jobs.map_or(Vec::new(), |j| vec!["--jobs", j]);
    flags.extend(["--runs", &runs]);
    let certified =
        tier::certify_with(&redis, Some(&["robustness"]), &cmd, &lib.env(&dir), &flags).await;
    if crate::common::regenerating() {
        let s = if runs == "1" { "" } else { "s" };
        let measured = format!(
            "{}, {runs} run{s}, load up to {}",
            tier::today(),
            tier::load_average()
        );
        page::rewrite_column(lib.name, &label, &certified.row, &measured);
        return Some(());
    }
    check_column(&section, lib.name, &label, &certified.row);
    Some(())
}

/// Each case's cell as certify gave it against the column `name` of the page's table.
fn check_column(
    section: &str,
    name: &str,
    label: &str,
    row: &std::collections::BTreeMap<String, (String, String)>,
) {
    let rows = page::table(section);
    let column = rows[0].iter().position(|h| *h == name).expect("a column");
    let recorded = page::runs(section).remove(label).unwrap_or_default();
    let how = recorded.measured.as_deref().unwrap_or("once");
    for cells in &rows[1..] {
        let case = format!("robust-{}", cells[0].trim_matches('`'));
        let (short, full) = &row[&case];
        if let Some(doc) = recorded.varied.get(&case) {
            let variants = matrix::variants_of(doc);
            if !matrix::variants_of(full)
                .iter()
                .all(|(f, _)| variants.iter().any(|(v, _)| v == f))
            {
                crate::common::visible(&format!(
                    "{label}, {case}: `{full}` not seen in the recorded runs ({doc}): re-measure \
                     the column (scripts/clients/matrix.sh)"
                ));
            }
            continue;
        }
        assert_eq!(
            short, cells[column],
            "{label}, {case}: certify gave {full}, docs/matrix.md records {} (measured {how}: \
             if the client varies, re-measure the column)",
            cells[column]
        );
    }
}

/// `decode --clients` beside every measured cell: for each case and each library whose parser it
/// models, it predicts that the process ends (a failure left unhandled) exactly where
/// docs/matrix.md records `srv` failing, and a hang (the phrase `; hangs: ` in an `acts` verdict:
/// the client acts on a MOVING whose target cannot be connected to and sends nothing more)
/// exactly where it records `kw` failing without `srv`, in a case that does not end the process
/// (docs/clients.md, "The robustness set,
/// measured").
#[test]
fn decode_clients_predicts_a_crash_where_srv_and_a_hang_where_kw_alone_was_measured() {
    use maintwatch::grading::clients::{predicted_hang, verdicts, Verdict as Predicted};
    use maintwatch::protocol::resp::{Scan, Scanner};
    use maintwatch::simulator::sim::scenario::{Action, Push};
    let section = page::section();
    let rows = page::table(&section);
    let (head, body) = rows.split_first().expect("a table");
    let (mut compared, mut hangs) = (0, 0);
    for row in body {
        let case = format!("robust-{}", row[0].trim_matches('`'));
        let scenario = scenarios::by_name(&case).unwrap();
        let frames: Vec<Vec<u8>> = scenario
            .steps
            .iter()
            .filter_map(|s| match &s.action {
                Action::Push {
                    push: Push::Raw(b) | Push::RawWhen(b, _),
                    ..
                } => Some(b.clone()),
                _ => None,
            })
            .collect();
        for (lib, cell) in head[1..].iter().zip(&row[1..]) {
            let (mut modelled, mut crash, mut hang) = (false, false, false);
            for bytes in &frames {
                let Ok(Scan::Frame(frame, _)) = Scanner::default().scan(bytes) else {
                    panic!("{case}: not a frame");
                };
                for v in verdicts(&frame, None).iter().filter(|v| v.client == *lib) {
                    modelled |= !matches!(v.verdict, Predicted::Unknown);
                    crash |=
                        matches!(&v.verdict, Predicted::Fails { how } if how.contains("unhandled"));
                    hang |= predicted_hang(&v.verdict).is_some();
                }
            }
            if !modelled {
                continue;
            }
            compared += 1;
            let failed = |rule: &str| cell.split_whitespace().any(|c| c == rule);
            let (srv, kw_alone) = (failed("srv"), failed("kw") && !failed("srv"));
            // A case that ends the process leaves nothing to hang (wrong-types: node-redis dies on
            // its first MOVING before the second, whose integer target it could not reach).
            let hang = hang && !crash;
            hangs += usize::from(hang);
            let predicted =
                |yes: bool, what: &str| format!("{}{what}", if yes { "" } else { "no " });
            assert_eq!(
                (crash, hang),
                (srv, kw_alone),
                "{lib}, {case}: decode --clients predicts {} and {}, docs/matrix.md records {cell}",
                predicted(crash, "crash"),
                predicted(hang, "hang")
            );
        }
    }
    assert!(compared >= 100, "only {compared} cells compared");
    assert!(hangs > 0, "no hang predicted in {compared} cells");
}
