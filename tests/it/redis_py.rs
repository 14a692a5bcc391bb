//! A real client graded: redis-py (8.1 or later, with `maint_notifications`) runs
//! `tests/clients/redis_py_workload.py` against `maintwatch simulate --upstream spawn --grade`
//! through three scenarios, and the grade it earns is asserted (what it is, not what we would
//! like: see docs/simulate.md, "Test your client against a maintenance").
//!
//! Needs `MAINTWATCH_PYTHON` (a Python with redis-py installed; `.ci/run` makes one) and
//! `MAINTWATCH_REDIS_SERVER` (the spawned upstream). Either unset or empty: a SKIP line. Set but
//! unusable (no redis module, an old one): the test fails.
//!
//! redis-py acts on the MOVING's declared window (15 s, unchanged by the speed), so the
//! scenarios where it is meant to act run at real speed.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::Command;

use crate::common;

const PYTHON_VAR: &str = "MAINTWATCH_PYTHON";
const HANG_GUARD: Duration = Duration::from_secs(90);

/// The configured Python, checked to have redis-py 8.1 or later; `None` after a SKIP line.
fn python(test: &str) -> Option<String> {
    let (py, version) = common::tier::REDIS_PY.newest(test)?;
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    assert!(
        (major, minor) >= (8, 1),
        "{PYTHON_VAR}={py}: redis-py {version} is older than 8.1"
    );
    Some(py)
}

struct Run {
    grade: Value,
    workload: Value,
    table: String,
    code: Option<i32>,
}

/// `simulate --upstream spawn --grade` with the workload pointed at its hostname.
async fn run(test: &str, scenario: &str, speed: f64) -> Option<Run> {
    let py = python(test)?;
    let redis = common::redis_server_binary(test)?;
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("grade.json");
    // `--upstream spawn` takes redis-server from PATH: the configured one first.
    let bin_dir = Path::new(&redis)
        .parent()
        .map(PathBuf::from)
        .unwrap_or_default();
    let path = std::env::join_paths(std::iter::once(bin_dir).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .unwrap();
    let mut sim = common::maintwatch_async([
        "simulate",
        "--scenario",
        scenario,
        "--speed",
        &speed.to_string(),
    ])
    .args(["--upstream", "spawn", "--quiet", "--grade", "--grade-json"])
    .arg(&json)
    .env("PATH", path)
    .stdout(Stdio::piped())
    .kill_on_drop(true)
    .spawn()
    .unwrap();
    let mut lines = BufReader::new(sim.stdout.take().unwrap()).lines();
    let end = maintwatch::simulator::sim::scenarios::by_name(scenario)
        .unwrap()
        .end;
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/clients/redis_py_workload.py"
    );
    let result = tokio::time::timeout(HANG_GUARD, async {
        let (mut port, mut dns, mut table) = (String::new(), String::new(), String::new());
        while let Some(l) = lines.next_line().await.unwrap() {
            table.push_str(&l);
            table.push('\n');
            let l = l.trim();
            if let Some(rest) = l.strip_prefix("proxies") {
                let first = rest.split_whitespace().next().unwrap();
                port = first.rsplit(':').next().unwrap().to_string();
            }
            if let Some(rest) = l.strip_prefix("DNS") {
                dns = rest.split_whitespace().next().unwrap().to_string();
            }
            if l.starts_with("upstream") {
                break;
            }
        }
        assert!(!port.is_empty() && !dns.is_empty(), "no banner: {table}");
        let mut workload = Command::new(&py)
            .arg(script)
            .args([
                "--host",
                "db.sim.maintwatch.test",
                "--port",
                &port,
                "--dns",
                &dns,
            ])
            .args(["--seconds", &format!("{:.2}", end / speed - 0.3)])
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        while let Some(l) = lines.next_line().await.unwrap() {
            table.push_str(&l);
            table.push('\n');
        }
        let code = sim.wait().await.unwrap().code();
        let mut out = String::new();
        workload
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .await
            .unwrap();
        let status = workload.wait().await.unwrap();
        assert!(status.success(), "the workload failed: {out}");
        (table, code, out)
    })
    .await;
    let (table, code, out) = result.expect("hang guard: the run did not end");
    let text = std::fs::read_to_string(&json).unwrap();
    let grade = serde_json::to_value(
        maintwatch::grading::judge::grade_lines::grade_of(&text).expect("a grade line"),
    )
    .unwrap();
    let workload: Value = serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"));
    eprintln!("{table}\nworkload: {workload}");
    Some(Run {
        grade,
        workload,
        table,
        code,
    })
}

/// The redis-py client's grade for the first notification, and the rule verdicts by name.
fn redis_py(r: &Run) -> (&Value, &Value, impl Fn(&str) -> bool + '_) {
    let client = r.grade["clients"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["client"].as_str().unwrap_or("").starts_with("redis-py/"))
        .unwrap_or_else(|| panic!("redis-py not among the clients: {}", r.table));
    let n = &client["notifications"][0];
    let held = move |rule: &str| {
        n["rules"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["rule"] == rule)
            .unwrap_or_else(|| panic!("no rule {rule}"))["held"]
            .as_bool()
            .unwrap()
    };
    (client, n, held)
}

/// Single proxy, DNS following at +9.7 s: redis-py opts in on every connection (internal-fqdn, it
/// connected by hostname to a loopback address), recycles at half the window (+7.5 s), while DNS
/// still names the retiring proxy, so it lands there again, ignores the re-sent MOVING, and is
/// cut by the close; it reaches the new proxy only after the close. Its retries hide the cut
/// from the application.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_py_single_proxy() {
    let Some(r) = run("redis_py_single_proxy", "single-proxy", 1.0).await else {
        return;
    };
    let (client, n, held) = redis_py(&r);
    assert_eq!(client["never_opted_in"], 0, "{}", r.table);
    assert!(
        client["opted_in"]["internal-fqdn"].as_u64().unwrap() >= 1,
        "{}",
        r.table
    );
    assert!(n["received"].as_u64().unwrap() >= 1, "{}", r.table);
    assert!(
        held("opt-in") && held("no-loop") && held("no-storm"),
        "{}",
        r.table
    );
    assert!(!held("moved-before-close"), "{}", r.table);
    assert!(n["moving"]["resent"].as_u64().unwrap() >= 1, "{}", r.table);
    assert_cut_by_the_close(&n["moving"], &r.table);
    assert_eq!(r.code, Some(1), "{}", r.table);
    assert!(r.workload["ops"].as_u64().unwrap() > 0);
}

/// Two proxies advertised; DNS swaps the retiring one out at +4.4 s: redis-py's recycle at
/// +7.5 s resolves again and lands on a proxy that stays, well before the close.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_py_multi_proxy() {
    let Some(r) = run("redis_py_multi_proxy", "multi-proxy", 1.0).await else {
        return;
    };
    let (client, n, held) = redis_py(&r);
    assert_eq!(client["never_opted_in"], 0, "{}", r.table);
    assert!(
        held("opt-in") && held("no-loop") && held("no-storm"),
        "{}",
        r.table
    );
    assert!(held("moved-before-close"), "{}", r.table);
    assert_on_a_live_proxy_before_the_close(&n["moving"], &r.table);
}

/// redis-py's MOVING (`moving` of its grade) in single-proxy: cut by the close, the re-sent
/// MOVING ignored, its first new connection only after the close.
pub(crate) fn assert_cut_by_the_close(m: &Value, table: &str) {
    assert!(m["cut"].as_u64().unwrap() >= 1, "{table}");
    assert_eq!(m["reacted_to_resent"], 0, "{table}");
    let first = m["first_new_connection"].as_f64().unwrap();
    assert!(first >= m["close"].as_f64().unwrap(), "{table}");
}

/// redis-py's MOVING in multi-proxy: nothing cut, its first new connection at its recycle (half
/// the window, +7.5 s) and before the close.
pub(crate) fn assert_on_a_live_proxy_before_the_close(m: &Value, table: &str) {
    assert_eq!(m["cut"], 0, "{table}");
    let first = m["first_new_connection"].as_f64().unwrap();
    assert!(
        first >= 7.5 && first < m["close"].as_f64().unwrap(),
        "{table}"
    );
}

/// DNS losing the race, sped up: the close (+15.7 s) comes before redis-py's recycle would, and
/// before DNS names anything else, so the cut is the expected outcome.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_py_dns_race() {
    let Some(r) = run("redis_py_dns_race", "dns-race", 4.0).await else {
        return;
    };
    let (client, n, held) = redis_py(&r);
    assert_eq!(client["never_opted_in"], 0, "{}", r.table);
    assert!(held("opt-in") && held("moved-before-close"), "{}", r.table);
    assert!(n["moving"]["cut"].as_u64().unwrap() >= 1, "{}", r.table);
    assert_eq!(n["moving"]["alternative_offered"], false, "{}", r.table);
}
