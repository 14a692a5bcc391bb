//! The robustness set (scenarios/README.md, "The robustness set"), each case met by scripted
//! clients of ours over raw TCP: one that carries on after the frame passes `keeps-working`; one
//! that dies on it, one that stops sending (hangs) and one that reconnects over and over fail it,
//! each with its own words. The failing kinds take turns over the cases, so each meets seven.
//!
//! The clients act on what they read (the first push after their handshake), not on a timer; the
//! scenarios play at speed 1, since the rule's hang bound is real seconds and each case leaves
//! 5 s after its frame. All cases play at once, each with its own simulator.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

use maintwatch::grading::judge::{self, ClientProcess, Rule, Verdict};
use maintwatch::protocol::resp::{encode_command, StreamReader};
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
                    p += usize::from(raw[0] == b'>');
                })
                .ok()?;
            self.replies += r;
            self.pushes += p;
        }
        Some(())
    }

    /// One command and its reply; `None` when the connection ended.
    async fn set(&mut self) -> Option<()> {
        self.s
            .write_all(&encode_command(&["SET", "k", "v"]))
            .await
            .ok()?;
        self.wait_replies(1).await
    }
}

/// A client busy with one command every 20 ms until `stop`, doing `after` once a push came.
async fn client(addr: SocketAddr, after: After, mut stop: watch::Receiver<bool>) {
    let mut conn = Conn::open(addr).await;
    while !*stop.borrow() {
        let Some(c) = conn.as_mut() else {
            conn = Conn::open(addr).await;
            continue;
        };
        if c.set().await.is_none() {
            conn = None;
            continue;
        }
        if c.pushes > 0 && after != After::Keep {
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
}

/// Plays one case against one scripted client and returns its `keeps-working` result.
async fn play(name: &'static str, after: After) -> Rule {
    let mut opts = SimOptions::new(scenarios::by_name(name).unwrap());
    opts.traffic = true;
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
    let cases = cases();
    assert!(cases.len() >= 21, "{cases:?}");
    let failing = [After::Die, After::Hang, After::Loop];
    let mut runs = tokio::task::JoinSet::new();
    for (i, name) in cases.iter().copied().enumerate() {
        for after in [After::Keep, failing[i % failing.len()]] {
            runs.spawn(async move { (name, after, play(name, after).await) });
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
