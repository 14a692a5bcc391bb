//! The client tier, shared by `tests/it/redis_py.rs`, `tests/it/redis_py_app.rs`, `tests/it/node_redis.rs`
//! and `tests/it/tier_matrix.rs`: an unmodified client application run by
//! `maintwatch simulate --upstream spawn --grade -- CMD`, its grade, and the cell of the README's
//! client matrix it earns, written to `target/client-matrix/` for `tier_matrix` to compare.
//!
//! The real parts: a redis-server (`MAINTWATCH_REDIS_SERVER`, the upstream) and the client's own
//! runtime, named by its own variable (`MAINTWATCH_PYTHON`, `MAINTWATCH_NODE_REDIS`). Unset: a
//! SKIP line. Set but unusable: the test fails.

use super::{maintwatch_async, redis_server_from};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::AsyncReadExt;

/// The `grade` line of a `--grade-json` file, as JSON.
fn grade_value(text: &str) -> Value {
    let grade = maintwatch::judge::lines::grade_of(text).expect("a grade line");
    serde_json::to_value(grade).unwrap()
}

/// The scenarios where a client can act, in the matrix's column order, with the speed each is
/// graded at: clients act on the MOVING's declared window (15 s, not scaled), so the MOVING
/// scenarios where a client is meant to act run at real speed. `oss-cluster` is played to each
/// library's cluster client.
pub const SCENARIOS: [(&str, f64); 7] = [
    ("single-proxy", 1.0),
    ("multi-proxy", 1.0),
    ("dns-race", 4.0),
    ("shard-migration", 1.0),
    ("failover", 1.0),
    ("silent-shrink", 2.0),
    ("oss-cluster", 1.0),
];

/// The scenario that needs the cluster client.
pub const CLUSTER: &str = "oss-cluster";

const HANG_GUARD: Duration = Duration::from_secs(150);

/// One graded run.
pub struct TierRun {
    pub grade: Value,
    /// Everything `simulate` printed.
    pub table: String,
    pub code: Option<i32>,
    /// The client's own stdout and stderr.
    pub output: String,
}

impl TierRun {
    /// The verdict (`pass`, `fail`, `not_judged`) of a rule on the first notification of the
    /// client named `prefix...`.
    pub fn verdict(&self, prefix: &str, rule: &str) -> String {
        let n = &self.client(prefix)["notifications"][0];
        n["rules"]
            .as_array()
            .unwrap_or_else(|| panic!("no rules: {}", self.table))
            .iter()
            .find(|x| x["rule"] == rule)
            .unwrap_or_else(|| panic!("no rule {rule}: {}", self.table))["verdict"]
            .as_str()
            .unwrap()
            .to_string()
    }

    /// Whether a rule passed on the first notification of the client named `prefix...`.
    pub fn held(&self, prefix: &str, rule: &str) -> bool {
        self.verdict(prefix, rule) == "pass"
    }

    /// The failover and shard-migration windows judge the timeout: `relaxed-timeout` is PASS or
    /// FAIL on the opening notification, and its reason gives the stall, the client's own
    /// timeout and what it did. In oss-cluster, the SMIGRATED judges the refresh.
    pub fn assert_maintenance_rules_judged(&self, prefix: &str, scenario: &str) {
        if scenario == CLUSTER {
            return self.assert_refresh_judged(prefix);
        }
        if !["failover", "shard-migration"].contains(&scenario) {
            return;
        }
        let v = self.verdict(prefix, "relaxed-timeout");
        assert_ne!(v, "not_judged", "{scenario}: {}", self.table);
        let rules = &self.client(prefix)["notifications"][0]["rules"];
        let detail = rules
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["rule"] == "relaxed-timeout")
            .unwrap()["detail"]
            .as_str()
            .unwrap();
        assert!(
            detail.contains(" s stall") && detail.contains("its own timeout ("),
            "{scenario}: {detail}"
        );
    }

    /// `oss-cluster`: `smigrated-refresh` is PASS or FAIL on the SMIGRATED, saying how the client
    /// learnt the move and how many `-MOVED` it got.
    fn assert_refresh_judged(&self, prefix: &str) {
        self.assert_smigrated_judged(prefix, "smigrated-refresh", "-MOVED");
    }

    /// `oss-cluster` with a sharded subscriber: `sharded-resubscribe` is PASS or FAIL on the
    /// SMIGRATED, counting the messages published on the app's channel.
    pub fn assert_sharded_judged(&self, prefix: &str) {
        self.assert_smigrated_judged(
            prefix,
            "sharded-resubscribe",
            "message(s) published on app:sharded:",
        );
    }

    /// A rule is PASS or FAIL (not NOT JUDGED) on the client's SMIGRATED, its reason saying `says`.
    fn assert_smigrated_judged(&self, prefix: &str, rule: &str, says: &str) {
        let n = self.client(prefix)["notifications"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| {
                n["notification"]
                    .as_str()
                    .unwrap_or("")
                    .starts_with("SMIGRATED")
            })
            .unwrap_or_else(|| panic!("no SMIGRATED: {}", self.table));
        let r = n["rules"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["rule"] == rule)
            .unwrap_or_else(|| panic!("no {rule}: {}", self.table));
        assert_ne!(r["verdict"], "not_judged", "{}", self.table);
        assert!(
            r["detail"].as_str().unwrap().contains(says),
            "{}",
            self.table
        );
    }

    pub fn client(&self, prefix: &str) -> &Value {
        self.grade["clients"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["client"].as_str().unwrap_or("").starts_with(prefix))
            .unwrap_or_else(|| panic!("{prefix} not among the clients: {}", self.table))
    }

    /// Whether the client got a private resolv.conf (else `simulate` fell back to variables).
    pub fn private_resolv(&self) -> bool {
        self.table
            .contains("resolving through its own /etc/resolv.conf")
    }
}

/// `simulate --scenario S --speed N --upstream spawn --grade -- CMD`, with `env` added to
/// simulate's environment (CMD inherits it).
pub async fn simulate(
    redis: &str,
    scenario: &str,
    speed: f64,
    cmd: &[&str],
    env: &[(&str, &str)],
) -> TierRun {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("grade.json");
    let out = dir.path().join("client.log");
    let mut sim = maintwatch_async([
        "simulate",
        "--scenario",
        scenario,
        "--speed",
        &speed.to_string(),
    ]);
    sim.args(["--upstream", "spawn", "--quiet", "--grade", "--grade-json"])
        .arg(&json)
        .arg("--client-output")
        .arg(&out)
        .arg("--")
        .args(cmd)
        .env("PATH", path_with(redis))
        .stdout(Stdio::piped());
    for (k, v) in env {
        sim.env(k, v);
    }
    let mut child = sim.spawn().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let (table, code) = tokio::time::timeout(HANG_GUARD, async {
        let mut table = String::new();
        stdout.read_to_string(&mut table).await.unwrap();
        (table, child.wait().await.unwrap().code())
    })
    .await
    .unwrap_or_else(|_| panic!("hang guard: {scenario} did not end"));
    let grade = std::fs::read_to_string(&json)
        .map(|t| grade_value(&t))
        .unwrap_or_else(|e| panic!("no grade ({e}): {table}"));
    let output = std::fs::read_to_string(&out).unwrap_or_default();
    eprintln!("--- {scenario}:\n{table}\nclient output:\n{output}");
    TierRun {
        grade,
        table,
        code,
        output,
    }
}

/// The client's runtime, named by the variable `var`: its value and the client library's version,
/// which `check` (a command built from the value) prints. Unset or empty: `None` after a SKIP
/// line (`hint` says how CI sets it). Set but unusable: the test fails.
pub fn client_runtime(
    test: &str,
    var: &str,
    hint: &str,
    check: impl FnOnce(&str) -> std::process::Command,
) -> Option<(String, String)> {
    let Some(value) = redis_server_from(std::env::var_os(var)) else {
        let _ = std::io::Write::write_fmt(
            &mut std::io::stderr(),
            format_args!("SKIP: {test}: {var} is unset or empty ({hint})\n"),
        );
        return None;
    };
    let out = check(&value)
        .output()
        .unwrap_or_else(|e| panic!("{var}={value} does not run: {e}"));
    assert!(
        out.status.success(),
        "{var}={value} has no usable client library: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let version = String::from_utf8_lossy(&out.stdout).trim().to_string();
    Some((value, version))
}

/// The configured Python and its redis-py version (`MAINTWATCH_PYTHON`); `None` after a SKIP
/// line.
pub fn python(test: &str) -> Option<(String, String)> {
    client_runtime(
        test,
        "MAINTWATCH_PYTHON",
        ".ci/run sets it to a venv with redis-py",
        |py| {
            let mut c = std::process::Command::new(py);
            c.args([
                "-c",
                "import redis, redis.maint_notifications; print(redis.__version__)",
            ]);
            c
        },
    )
}

/// Whether `r` ran with a private resolv.conf; if not, a SKIP line says the tier cannot grade
/// the client on this machine.
pub fn resolved_privately(test: &str, r: &TierRun) -> bool {
    let private = r.private_resolv();
    if !private {
        let _ = std::io::Write::write_fmt(
            &mut std::io::stderr(),
            format_args!(
                "SKIP: {test}: no private resolv.conf on this machine: {}\n",
                r.table
            ),
        );
    }
    private
}

/// The scenarios past single- and multi-proxy, all at once, each played to `cmd(scenario)` with
/// `env`; the machine's resolver files are checked to be as they were. `None` after a SKIP line
/// when the client got no private resolv.conf.
pub async fn every_scenario(
    test: &str,
    redis: &str,
    cmd: impl Fn(&str) -> Vec<String>,
    env: &[(&str, &str)],
) -> Option<Vec<(&'static str, TierRun)>> {
    let before = resolver_files();
    let runs = SCENARIOS[2..].iter().map(|&(scenario, speed)| {
        let redis = redis.to_string();
        let cmd = cmd(scenario);
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        async move {
            let cmd: Vec<&str> = cmd.iter().map(String::as_str).collect();
            let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (&**k, &**v)).collect();
            (
                scenario,
                simulate(&redis, scenario, speed, &cmd, &env).await,
            )
        }
    });
    let runs = all(runs).await;
    assert_eq!(
        resolver_files(),
        before,
        "the machine's resolver files changed"
    );
    runs.iter()
        .all(|(_, r)| resolved_privately(test, r))
        .then_some(runs)
}

/// `--upstream spawn` takes redis-server from PATH: the configured one first.
pub fn path_with(redis: &str) -> std::ffi::OsString {
    let bin_dir = Path::new(redis)
        .parent()
        .map(PathBuf::from)
        .unwrap_or_default();
    std::env::join_paths(std::iter::once(bin_dir).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .unwrap()
}

/// The machine's resolver files, to check that the tier left them as they were.
pub fn resolver_files() -> Vec<(String, Option<Vec<u8>>)> {
    ["/etc/resolv.conf", "/etc/hosts"]
        .iter()
        .map(|p| (p.to_string(), std::fs::read(p).ok()))
        .collect()
}

/// Where the tier's results go: `target/client-matrix/`, beside the binary under test.
pub fn results_dir() -> PathBuf {
    let bin = Path::new(super::BIN);
    bin.parent()
        .and_then(Path::parent)
        .map(|t| t.join("client-matrix"))
        .unwrap()
}

/// Each rule's code in a matrix cell: the library's table, which `certify` prints too.
// Only some of the tests that include this module read it.
#[allow(unused_imports)]
pub use maintwatch::matrix::CODES;
use maintwatch::matrix::RACY_RULES;

/// The worse of two verdicts: fail, then not judged, then pass.
fn worse<'a>(a: &'a str, b: &'a str) -> &'a str {
    let rank = |v: &str| match v {
        "fail" => 2,
        "not_judged" => 1,
        _ => 0,
    };
    if rank(b) > rank(a) {
        b
    } else {
        a
    }
}

/// Every rule result of a grade for the client named `prefix...` (all clients when empty), run
/// rules included: (rule, verdict).
fn results<'a>(grade: &'a Value, prefix: &str) -> Vec<(&'a str, &'a str)> {
    let run = grade["rules"].as_array().into_iter().flatten();
    let clients = grade["clients"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["client"].as_str().unwrap_or("").starts_with(prefix));
    let per_notification = clients
        .flat_map(|c| c["notifications"].as_array().into_iter().flatten())
        .flat_map(|n| n["rules"].as_array().into_iter().flatten());
    run.chain(per_notification)
        .map(|r| {
            (
                r["rule"].as_str().unwrap_or("?"),
                r["verdict"].as_str().unwrap_or("?"),
            )
        })
        .filter(|(rule, _)| !RACY_RULES.contains(rule))
        .collect()
}

/// The worst verdict of every rule but the racy ones, over every notification, for the client
/// named `prefix...`.
pub fn verdicts(r: &TierRun, prefix: &str) -> BTreeMap<String, String> {
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    for (rule, v) in results(&r.grade, prefix) {
        let e = out.entry(rule.to_string()).or_insert_with(|| v.to_string());
        *e = worse(e, v).to_string();
    }
    out
}

/// The matrix cell a grade earns, as `certify` prints it (`maintwatch::matrix::cell_of`).
pub fn cell(grade: &Value) -> String {
    let verdict = |v: &str| {
        serde_json::from_value::<maintwatch::judge::Verdict>(Value::from(v))
            .unwrap_or_else(|e| panic!("verdict {v:?}: {e}"))
    };
    maintwatch::matrix::cell_of(results(grade, "").into_iter().map(|(r, v)| (r, verdict(v))))
}

/// Writes the cell of `client` (e.g. `redis-py 8.1.0`) in `scenario` for `tier_matrix`.
pub fn record(client: &str, scenario: &str, grade: &Value) {
    let dir = results_dir();
    std::fs::create_dir_all(&dir).unwrap();
    let slug: String = client
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let line = serde_json::json!({"client": client, "scenario": scenario, "cell": cell(grade)});
    std::fs::write(
        dir.join(format!("{slug}__{scenario}.json")),
        line.to_string(),
    )
    .unwrap();
}

/// Runs the futures at once, each on its own task; the results in order.
pub async fn all<F>(fs: impl Iterator<Item = F>) -> Vec<F::Output>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    let handles: Vec<_> = fs.map(tokio::spawn).collect();
    let mut out = Vec::new();
    for h in handles {
        out.push(h.await.unwrap());
    }
    out
}
