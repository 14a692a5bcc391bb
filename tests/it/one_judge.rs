//! One run, two grades: redis-py runs through `maintwatch simulate --upstream spawn --grade`
//! while real tcpdump captures it on loopback, and the same run is graded from the simulator's
//! side and from the capture (`pcap --grade`). One judge: the two grades agree rule by rule, and
//! both tell the same story per connection.
//!
//! The capture holds the application's traffic and the DNS answers on the simulator's DNS port.
//! redis-py resolves the hostname only when it (re)connects, so a second resolver on the host
//! (a poller at 127.0.0.9, as a watch beside the application would be) is what lets the capture
//! see the record change before the close, as the simulator's DNS server knows it.
//!
//! Needs `MAINTWATCH_PYTHON` (redis-py 8.1 or later), `MAINTWATCH_REDIS_SERVER` and tcpdump
//! allowed to capture; without one of them, a SKIP line. Runs at real speed: redis-py acts on
//! the declared window in real seconds.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use maintwatch::grading::judge::{grade_lines, ClientGrade, Grade, Verdict};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

use crate::common;

const GUARD: Duration = Duration::from_secs(120);
const HOST: &str = "db.sim.maintwatch.test";

fn python(test: &str) -> Option<String> {
    let Some(py) = common::redis_server_from(std::env::var_os("MAINTWATCH_PYTHON")) else {
        crate::common::skip(
            test,
            "MAINTWATCH_PYTHON is unset or empty (.ci/run sets it to a venv with redis-py)",
        );
        return None;
    };
    let ok = std::process::Command::new(&py)
        .args(["-c", "import redis, redis.maint_notifications"])
        .output()
        .unwrap_or_else(|e| panic!("MAINTWATCH_PYTHON={py} does not run: {e}"));
    assert!(
        ok.status.success(),
        "MAINTWATCH_PYTHON={py} has no usable redis-py"
    );
    Some(py)
}

/// Sends a DNS query for a name no run asks to the captured DNS port, until tcpdump has written
/// it to `file`: every packet of the run, sent before it, is then in the file too.
async fn mark_the_end(file: &Path, dns_port: &str) {
    const LABEL: &[u8] = b"maintwatch-end-of-capture";
    let mut query = vec![0x6d, 0x77, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
    for label in [LABEL, b"test".as_slice()] {
        query.push(label.len() as u8);
        query.extend_from_slice(label);
    }
    query.extend_from_slice(&[0, 0, 1, 0, 1]);
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let to = format!("127.0.0.1:{dns_port}");
    tokio::time::timeout(GUARD, async {
        loop {
            socket.send_to(&query, &to).unwrap();
            let written = std::fs::read(file).unwrap_or_default();
            if written.windows(LABEL.len()).any(|w| w == LABEL) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("hang guard: tcpdump never wrote the end marker");
}

/// Asks `dns` for the hostname from 127.0.0.9 every 200 ms until `stop`.
fn poll_dns(dns: String, stop: Arc<AtomicBool>) -> tokio::task::JoinHandle<()> {
    use hickory_proto::op::{Message, Query};
    use hickory_proto::rr::{Name, RecordType};
    tokio::spawn(async move {
        let sock = tokio::net::UdpSocket::bind("127.0.0.9:0").await.unwrap();
        let mut m = Message::query();
        m.add_query(Query::query(Name::from_ascii(HOST).unwrap(), RecordType::A));
        let query = m.to_vec().unwrap();
        let mut buf = [0u8; 1500];
        while !stop.load(Ordering::Relaxed) {
            sock.send_to(&query, &dns).await.unwrap();
            let _ = tokio::time::timeout(Duration::from_millis(200), sock.recv(&mut buf)).await;
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
}

struct Run {
    sim: Grade,
    /// `None` when the run was not captured.
    pcap: Option<Grade>,
    /// The capture graded again without its DNS packets.
    no_dns: Option<Grade>,
    /// `pcap --grade --report` of the capture: the page and the JSON lines of the same reading.
    page: Option<(PathBuf, String)>,
    text: String,
    /// Holds the capture and the page until the test is done with them.
    _dir: tempfile::TempDir,
}

/// PATH with the configured redis-server's directory first (`--upstream spawn` takes it there).
fn path_with(redis: &str) -> std::ffi::OsString {
    let dir = Path::new(redis)
        .parent()
        .map(PathBuf::from)
        .unwrap_or_default();
    let rest = std::env::var_os("PATH").unwrap_or_default();
    std::env::join_paths(std::iter::once(dir).chain(std::env::split_paths(&rest))).unwrap()
}

/// One run of the redis-py workload through `scenario` at real speed, connected to `host`;
/// captured with tcpdump (and DNS polled beside it) when `capture`.
async fn run(test: &str, scenario: &str, host: &str, capture: bool) -> Option<Run> {
    let py = python(test)?;
    let redis = common::redis_server_binary(test)?;
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("grade.jsonl");
    let mut sim =
        common::maintwatch_async(["simulate", "--scenario", scenario, "--upstream", "spawn"])
            .args(["--quiet", "--grade", "--grade-json"])
            .arg(&json)
            .env("PATH", path_with(&redis))
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
    let mut out = BufReader::new(sim.stdout.take().unwrap()).lines();
    let (mut port, mut dns, mut text) = (String::new(), String::new(), String::new());
    while let Some(l) = out.next_line().await.unwrap() {
        text += &format!("{l}\n");
        let l = l.trim();
        if let Some(rest) = l.strip_prefix("proxies") {
            port = rest
                .split_whitespace()
                .next()
                .unwrap()
                .rsplit(':')
                .next()
                .unwrap()
                .into();
        }
        if let Some(rest) = l.strip_prefix("DNS") {
            dns = rest.split_whitespace().next().unwrap().into();
        }
        if l.starts_with("upstream") {
            break;
        }
    }
    assert!(!port.is_empty() && !dns.is_empty(), "no banner: {text}");
    let dns_port = dns.rsplit(':').next().unwrap().to_string();
    let file = dir.path().join("run.pcap");
    let filter = format!("tcp port {port} or udp port {dns_port}");
    let mut dump = None;
    if capture {
        let filter: Vec<&str> = filter.split(' ').collect();
        dump = Some(common::tcpdump(test, &file, &filter).await?);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let poller = capture.then(|| poll_dns(dns.clone(), stop.clone()));
    let end = maintwatch::simulator::sim::scenarios::by_name(scenario)
        .unwrap()
        .end;
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/clients/redis_py_workload.py"
    );
    let workload = Command::new(&py)
        .arg(script)
        .args(["--host", host, "--port", &port, "--dns", &dns])
        .args(["--seconds", &format!("{:.2}", end - 0.3)])
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let (status, said) = tokio::time::timeout(GUARD, async {
        while let Some(l) = out.next_line().await.unwrap() {
            text += &format!("{l}\n");
        }
        let code = sim.wait().await.unwrap().code();
        let w = workload.wait_with_output().await.unwrap();
        (code, w)
    })
    .await
    .expect("hang guard: the run did not end");
    assert!(
        said.status.success(),
        "workload: {}",
        String::from_utf8_lossy(&said.stdout)
    );
    assert!(
        status == Some(0) || status == Some(1),
        "simulate exit {status:?}: {text}"
    );
    stop.store(true, Ordering::Relaxed);
    if let Some(p) = poller {
        p.await.unwrap();
    }
    let sim_grade =
        grade_lines::grade_of(&std::fs::read_to_string(&json).unwrap()).expect("grade line");
    // The run kept as a fixture: replay --grade judges its grade_input line to the same grade.
    let again = common::maintwatch(["replay", "--grade", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let again = grade_lines::grade_of(&String::from_utf8(again.stdout).unwrap());
    assert_eq!(again.as_ref(), Some(&sim_grade), "replay --grade");
    let (mut pcap, mut no_dns, mut page) = (None, None, None);
    if let Some(mut dump) = dump {
        // -U writes each packet as it is read; SIGINT makes tcpdump write what it holds and end.
        // What it has not read yet would be lost: it is stopped only once the end marker, sent
        // after the run, is in the file (a fixed wait lost replies on a loaded machine).
        mark_the_end(&file, &dns_port).await;
        let pid = dump.id().unwrap().to_string();
        assert!(std::process::Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .unwrap()
            .success());
        let st = tokio::time::timeout(GUARD, dump.wait())
            .await
            .expect("tcpdump stops")
            .unwrap();
        assert!(st.success(), "tcpdump: {st}");
        let read = common::maintwatch([
            "pcap",
            "--json",
            "--grade",
            "--port",
            &port,
            "--dns-port",
            &dns_port,
            "--report",
        ])
        .arg(dir.path().join("r.html"))
        .arg(&file)
        .output()
        .unwrap();
        let stdout = String::from_utf8(read.stdout).unwrap();
        page = Some((dir.path().join("r.html"), stdout.clone()));
        let grade = grade_lines::grade_of(&stdout).expect("pcap wrote a grade line");
        let inputs = grade_lines::inputs(&stdout).unwrap();
        assert_eq!(inputs.len(), 1, "one grade_input line");
        // The grade_input line is enough to grade again, to the same grade.
        assert_eq!(maintwatch::grading::judge::judge(&inputs[0]), grade);
        assert_eq!(read.status.code(), Some(grade.verdict.exit_code()));
        text += &grade.table();
        pcap = Some(grade);
        no_dns = Some(grade_without_dns(&file, dir.path(), &port));
    }
    eprintln!("{text}");
    Some(Run {
        sim: sim_grade,
        pcap,
        no_dns,
        page,
        text,
        _dir: dir,
    })
}

/// The same capture with its DNS packets left out (tcpdump reading it back through a `tcp`
/// filter), graded: what a capture of the Redis port alone shows.
fn grade_without_dns(file: &Path, dir: &Path, port: &str) -> Grade {
    let tcp_only = dir.join("tcp-only.pcap");
    let st = std::process::Command::new("tcpdump")
        .arg("-r")
        .arg(file)
        .arg("-w")
        .arg(&tcp_only)
        .arg("tcp")
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success(), "tcpdump -r: {st}");
    let read = common::maintwatch(["pcap", "--json", "--grade", "--port", port])
        .arg(&tcp_only)
        .output()
        .unwrap();
    let grade =
        grade_lines::grade_of(&String::from_utf8(read.stdout).unwrap()).expect("a grade line");
    assert_eq!(read.status.code(), Some(grade.verdict.exit_code()));
    grade
}

fn redis_py<'a>(g: &'a Grade, text: &str) -> &'a ClientGrade {
    g.clients
        .iter()
        .find(|c| c.client.starts_with("redis-py"))
        .unwrap_or_else(|| panic!("no redis-py client: {text}"))
}

/// Rule name to held, for the first notification.
fn rules(c: &ClientGrade) -> BTreeMap<String, bool> {
    c.notifications[0]
        .rules
        .iter()
        .map(|r| (r.rule.clone(), r.held))
        .collect()
}

fn verdicts(c: &ClientGrade) -> Vec<(String, String)> {
    c.notifications[0]
        .moving
        .as_ref()
        .unwrap()
        .verdicts
        .iter()
        .map(|v| (v.verdict.clone(), v.text.clone()))
        .collect()
}

/// Recycled onto the retiring proxy, cut by the close, then moved after it.
fn says_recycled_cut_then_moved(c: &ClientGrade, text: &str) {
    let v = verdicts(c);
    assert!(
        v.iter()
            .any(|(w, t)| w == "recycled" && t.contains("onto the same retiring proxy")),
        "no recycle: {v:?}\n{text}"
    );
    assert!(
        v.iter()
            .any(|(w, t)| w == "cut" && t.contains("moved to 127.0.0.3 after the close")),
        "no cut then move after the close: {v:?}\n{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_run_two_grades_single_proxy() {
    let test = "one_run_two_grades_single_proxy";
    let Some(r) = run(test, "single-proxy", HOST, true).await else {
        return;
    };
    let (sim, pcap) = (
        redis_py(&r.sim, &r.text),
        redis_py(r.pcap.as_ref().unwrap(), &r.text),
    );
    assert_eq!(rules(sim), rules(pcap), "{}", r.text);
    // DNS named the new proxy at +9.7 s; redis-py had resolved once, at its recycle.
    assert!(!rules(sim)["moved-before-close"], "{}", r.text);
    // Without the DNS packets nobody can say whether anything else was offered: not judged,
    // with the hint, never a pass.
    let blind = r.no_dns.as_ref().unwrap();
    let rule = redis_py(blind, &r.text).notifications[0]
        .rules
        .iter()
        .find(|x| x.rule == "moved-before-close")
        .unwrap();
    assert_eq!(rule.verdict, Verdict::NotJudged, "{}", blind.table());
    assert!(rule.detail.contains("or port 53"), "{}", rule.detail);
    for c in [sim, pcap] {
        says_recycled_cut_then_moved(c, &r.text);
        assert!(c.reached.contains("by name"), "{}", r.text);
    }
    // The same reading drawn: every connection's bar, the MOVING and its window, the DNS change,
    // the close and the grade rows, in the file and in Chromium's DOM.
    let (html, stdout) = r.page.as_ref().unwrap();
    crate::report::check_capture_page(html, stdout, "MOVING seq 0", Some("127.0.0.3"));
    let known = &pcap.notifications[0].moving.as_ref().unwrap().known;
    assert!(
        known
            .iter()
            .any(|k| k.starts_with(&format!("resolved {HOST} -> 127.0.0.2 (stale)"))),
        "{known:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_run_two_grades_multi_proxy() {
    let test = "one_run_two_grades_multi_proxy";
    let Some(r) = run(test, "multi-proxy", HOST, true).await else {
        return;
    };
    let (sim, pcap) = (
        redis_py(&r.sim, &r.text),
        redis_py(r.pcap.as_ref().unwrap(), &r.text),
    );
    assert_eq!(rules(sim), rules(pcap), "{}", r.text);
    for (name, held) in rules(sim) {
        assert!(held, "{name} failed: {}", r.text);
    }
    for c in [sim, pcap] {
        assert!(
            verdicts(c).iter().any(|(w, _)| w == "moved"),
            "no move before the close: {}",
            r.text
        );
    }
}

/// Connected by address (as the simulator's `try` line suggests), a null target: nothing else
/// was offered, so staying until the close is not a failure.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_py_by_address_single_proxy_stayed() {
    let test = "redis_py_by_address_single_proxy_stayed";
    let Some(r) = run(test, "single-proxy", "127.0.0.2", false).await else {
        return;
    };
    let c = redis_py(&r.sim, &r.text);
    assert_eq!(c.reached, "by address", "{}", r.text);
    let moved = c.notifications[0]
        .rules
        .iter()
        .find(|x| x.rule == "moved-before-close")
        .unwrap();
    assert!(moved.held, "{}", r.text);
    assert!(
        moved.detail.starts_with("stayed: nothing else was offered"),
        "{}",
        r.text
    );
    assert!(verdicts(c).iter().any(|(w, _)| w == "stayed"), "{}", r.text);
}
