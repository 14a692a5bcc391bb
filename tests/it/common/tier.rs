//! The client tier, shared by `tests/it/redis_py.rs`, `tests/it/redis_py_app.rs`,
//! `tests/it/node_redis.rs`, `tests/it/go_redis.rs` and `tests/it/tier_matrix.rs`: an unmodified
//! client application run by `maintwatch simulate --upstream spawn --grade -- CMD` (one scenario)
//! or by `maintwatch certify -- CMD` (a client release's row of the client matrix, docs/matrix.md), its
//! grades, and the cells it earns, as certify printed them, written to `target/client-matrix/`
//! for `tier_matrix` to compare.
//!
//! The real parts: a redis-server (`MAINTWATCH_REDIS_SERVER`, the upstream) and the client's own
//! runtime, named by its own variable (`MAINTWATCH_PYTHON`, `MAINTWATCH_NODE_REDIS`,
//! `MAINTWATCH_GO_REDIS`; the older releases `MAINTWATCH_PYTHON_OLDER`,
//! `MAINTWATCH_NODE_REDIS_OLDER`, `MAINTWATCH_GO_REDIS_OLDER`). Unset: a SKIP line. Set but
//! unusable: the test fails. A library joins the tier as a [`Version`] per release (its
//! applications' commands) and calls [`certify_version`].

use super::{maintwatch_async, redis_server_from};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::AsyncReadExt;

/// The `grade` line of a `--grade-json` file, as JSON.
fn grade_value(text: &str) -> Value {
    let grade = maintwatch::grading::judge::grade_lines::grade_of(text).expect("a grade line");
    serde_json::to_value(grade).unwrap()
}

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
    /// timeout and what it did; no-closing-notification judges `timeout-restored` at the
    /// backstop the same way. In oss-cluster, the SMIGRATED judges the refresh.
    pub fn assert_maintenance_rules_judged(&self, prefix: &str, scenario: &str) {
        let rule = match scenario {
            CLUSTER => return self.assert_refresh_judged(prefix),
            "failover" | "shard-migration" => "relaxed-timeout",
            "no-closing-notification" => "timeout-restored",
            _ => return,
        };
        let v = self.verdict(prefix, rule);
        assert_ne!(v, "not_judged", "{scenario}: {}", self.table);
        let rules = &self.client(prefix)["notifications"][0]["rules"];
        let detail = rules
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["rule"] == rule)
            .unwrap()["detail"]
            .as_str()
            .unwrap();
        assert!(
            detail.contains(" s stall") && detail.contains("its own timeout ("),
            "{scenario}: {detail}"
        );
        if rule == "timeout-restored" {
            assert!(detail.contains("30 s backstop"), "{scenario}: {detail}");
        }
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

/// The redis-py version a Python has; panics (the variable that named it is wrong) when it has
/// none with maintenance notifications.
pub fn python_version(py: &str) -> String {
    let out = std::process::Command::new(py)
        .args([
            "-c",
            "import redis, redis.maint_notifications; print(redis.__version__)",
        ])
        .output()
        .unwrap_or_else(|e| panic!("{py} does not run: {e}"));
    assert!(
        out.status.success(),
        "{py}: no usable redis-py: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The node-redis version of a folder whose `node_modules` has `redis`; panics when it has none.
pub fn node_redis_version(dir: &str) -> String {
    let out = std::process::Command::new("node")
        .args(["-e", "console.log(require('redis/package.json').version)"])
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("node does not run: {e}"));
    assert!(
        out.status.success(),
        "{dir}: no node-redis: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The older releases of a client the tier grades besides the newest: the paths in `var`, a list
/// as in PATH. Unset or empty: `None` after a SKIP line.
pub fn older(test: &str, var: &str) -> Option<Vec<String>> {
    let paths: Vec<String> = std::env::var_os(var)
        .map(|v| {
            std::env::split_paths(&v)
                .map(|p| p.to_string_lossy().into_owned())
                .filter(|p| !p.is_empty())
                .collect()
        })
        .unwrap_or_default();
    if paths.is_empty() {
        let _ = std::io::Write::write_fmt(
            &mut std::io::stderr(),
            format_args!(
                "SKIP: {test}: {var} is unset or empty (scripts/clients/matrix.sh sets it)\n"
            ),
        );
        return None;
    }
    Some(paths)
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

/// A client version of the tier: its row's label (`redis-py 7.0.1`), its applications and the
/// environment they need.
pub struct Version {
    pub label: String,
    /// The standalone application's command.
    pub standalone: Vec<String>,
    /// The cluster application's command; `None` when the version has no cluster client that
    /// handles the notifications (its cluster cell is `n/a`).
    pub cluster: Option<Vec<String>>,
    /// The scenarios besides `oss-cluster` the cluster application plays when the row is
    /// certified in full (go-redis: `cascading-smigrated`); their cells are printed, not put in
    /// the matrix's row, which has one cluster column.
    pub cluster_also: Vec<&'static str>,
    pub env: Vec<(String, String)>,
}

/// One `maintwatch certify` run (its exit code checked): what it printed, each scenario's grade
/// (from `--grade-json`) with the client's output, and the matrix row it printed, by scenario:
/// `(short cell, full cell)`.
pub struct Certified {
    pub stdout: String,
    pub runs: Vec<(String, TierRun)>,
    pub row: BTreeMap<String, (String, String)>,
}

/// `certify [--scenarios ...] -- CMD` with `env`; `scenarios` `None`: certify's default list,
/// every scenario where a client can act.
pub async fn certify(
    redis: &str,
    scenarios: Option<&[&str]>,
    cmd: &[String],
    env: &[(String, String)],
) -> Certified {
    certify_with(redis, scenarios, cmd, env, &[]).await
}

/// [`certify`] with more flags (`--jobs 1`).
pub async fn certify_with(
    redis: &str,
    scenarios: Option<&[&str]>,
    cmd: &[String],
    env: &[(String, String)],
    flags: &[&str],
) -> Certified {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("grades.jsonl");
    let out = dir.path().join("client");
    let mut c = maintwatch_async(["certify"]);
    c.args(flags);
    if let Some(list) = scenarios {
        c.arg("--scenarios").arg(list.join(","));
    }
    c.arg("--grade-json")
        .arg(&json)
        .arg("--client-output")
        .arg(&out)
        .arg("--")
        .args(cmd)
        .env("PATH", path_with(redis))
        .stdout(Stdio::piped());
    for (k, v) in env {
        c.env(k, v);
    }
    let mut child = c.spawn().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    // Only a guard against a hang: certify's default list lasts about 7 minutes.
    let (text, code) = tokio::time::timeout(Duration::from_secs(40 * 60), async {
        let mut text = String::new();
        stdout.read_to_string(&mut text).await.unwrap();
        (text, child.wait().await.unwrap().code())
    })
    .await
    .unwrap_or_else(|_| panic!("hang guard: certify {cmd:?} did not end"));
    eprintln!("--- certify {cmd:?}:\n{text}");
    let grades =
        std::fs::read_to_string(&json).unwrap_or_else(|e| panic!("no grades ({e}): {text}"));
    let runs: Vec<(String, TierRun)> = grades
        .lines()
        .filter(|l| l.contains("\"grade\""))
        .filter_map(|l| {
            let grade = grade_value(l);
            let scenario = grade["scenario"]
                .as_str()?
                .trim_start_matches("scenario ")
                .to_string();
            let output =
                std::fs::read_to_string(out.join(format!("{scenario}.log"))).unwrap_or_default();
            Some((
                scenario,
                TierRun {
                    grade,
                    table: text.clone(),
                    code,
                    output,
                },
            ))
        })
        .collect();
    // Its exit code is the worst grade's: 1 for a failure, 9 for NOT JUDGED, 0 when all held.
    let worst = runs_worst(&runs);
    assert_eq!(code, Some(worst), "certify's exit code: {text}");
    Certified {
        row: printed_row(&text),
        stdout: text,
        runs,
    }
}

fn runs_worst(runs: &[(String, TierRun)]) -> i32 {
    let verdicts: Vec<&str> = runs
        .iter()
        .map(|(_, r)| r.grade["verdict"].as_str().unwrap_or("?"))
        .collect();
    if verdicts.contains(&"fail") {
        1
    } else if verdicts.iter().all(|v| *v == "pass") {
        0
    } else {
        9
    }
}

/// The matrix row certify printed (on a pipe, unwrapped): the lines under `certify: the matrix
/// row of ...`, `  SCENARIO  SHORT  FULL`, up to the first blank line.
pub fn printed_row(text: &str) -> BTreeMap<String, (String, String)> {
    text.lines()
        .skip_while(|l| !l.starts_with("certify: the matrix row of "))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .map(|l| {
            let parts: Vec<&str> = l
                .split("  ")
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .collect();
            assert_eq!(parts.len(), 3, "a matrix row line of three columns: {l:?}");
            (
                parts[0].to_string(),
                (parts[1].to_string(), parts[2].to_string()),
            )
        })
        .collect()
}

/// The scenarios of the matrix's columns but the cluster one, for certify's `--scenarios`.
pub fn standalone_columns() -> Vec<&'static str> {
    maintwatch::grading::matrix::COLUMNS
        .iter()
        .map(|(s, _)| *s)
        .filter(|s| *s != CLUSTER)
        .collect()
}

/// The row of `v`: certify with its standalone application (every scenario certify plays by
/// default when `all`, else the matrix's columns) and, where it has one, with its cluster
/// application on `oss-cluster` (and, when `all`, on `cluster_also`), both at once. Each cell
/// certify printed for a column is recorded for the client matrix (a cluster cell without a
/// cluster client: `n/a`); the caller then checks the matrix's row against them
/// (`tier_matrix::check_rows`). Returns the two runs.
pub async fn certify_version(
    redis: &str,
    v: &Version,
    all: bool,
) -> (Certified, Option<Certified>) {
    certify_version_on(redis, v, all, &[CLUSTER]).await
}

/// [`certify_version`], but the cluster application is certified on `cluster_scenarios` (which
/// must include `oss-cluster`, the matrix's column; the others are for the caller to assert on).
pub async fn certify_version_on(
    redis: &str,
    v: &Version,
    all: bool,
    cluster_on: &[&str],
) -> (Certified, Option<Certified>) {
    assert!(cluster_on.contains(&CLUSTER), "{cluster_on:?}");
    let columns = standalone_columns();
    let scenarios = (!all).then_some(columns.as_slice());
    let mut cluster_scenarios = cluster_on.to_vec();
    if all {
        cluster_scenarios.extend(v.cluster_also.iter().filter(|s| !cluster_on.contains(s)));
    }
    let cluster = async {
        match &v.cluster {
            Some(cmd) => Some(certify(redis, Some(&cluster_scenarios), cmd, &v.env).await),
            None => None,
        }
    };
    let (standalone, cluster) =
        tokio::join!(certify(redis, scenarios, &v.standalone, &v.env), cluster);
    record_version(v, &columns, &standalone, cluster.as_ref());
    (standalone, cluster)
}

/// The older releases of a library (the folders in `var`, as [`older`] reads them), one after
/// another: each made a [`Version`] by `version` from its folder, certified on the matrix's
/// columns, checked by `graded`, and its README row checked. Unset: a SKIP line.
pub async fn certify_older_rows(
    test: &str,
    var: &str,
    version: impl Fn(&str) -> Version,
    graded: impl Fn(&Certified, Option<&Certified>),
) {
    let Some(dirs) = older(test, var) else {
        return;
    };
    let Some(redis) = super::redis_server_binary(test) else {
        return;
    };
    for dir in dirs {
        let v = version(&dir);
        let (standalone, cluster) = certify_version(&redis, &v, false).await;
        graded(&standalone, cluster.as_ref());
        crate::tier_matrix::check_rows(&[&v.label]);
    }
}

/// Records the cells of `v`'s row: each standalone column, and the cluster column from the
/// cluster application's run (`n/a` without one).
fn record_version(
    v: &Version,
    columns: &[&str],
    standalone: &Certified,
    cluster: Option<&Certified>,
) {
    for scenario in columns {
        let (short, full) = standalone.row.get(*scenario).unwrap_or_else(|| {
            panic!(
                "{}: no {scenario} in the row: {}",
                v.label, standalone.stdout
            )
        });
        record(&v.label, scenario, short, full);
    }
    match cluster {
        Some(c) => {
            let (short, full) = c
                .row
                .get(CLUSTER)
                .unwrap_or_else(|| panic!("{}: no {CLUSTER} in the row: {}", v.label, c.stdout));
            record(&v.label, CLUSTER, short, full);
        }
        None => record(
            &v.label,
            CLUSTER,
            maintwatch::grading::matrix::NOT_APPLICABLE,
            "no cluster client with maintenance notifications in this version",
        ),
    }
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
pub use maintwatch::grading::matrix::CODES;
use maintwatch::grading::matrix::RACY_RULES;

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

/// The matrix cell a grade earns, as `certify` prints it in full (`maintwatch::grading::matrix::cell_of`).
pub fn cell(grade: &Value) -> String {
    let verdict = |v: &str| {
        serde_json::from_value::<maintwatch::grading::judge::Verdict>(Value::from(v))
            .unwrap_or_else(|e| panic!("verdict {v:?}: {e}"))
    };
    maintwatch::grading::matrix::cell_of(
        results(grade, "").into_iter().map(|(r, v)| (r, verdict(v))),
    )
}

/// Writes the cell of `client` (e.g. `redis-py 8.1.0`) in `scenario`, short and in full, with
/// today's date (UTC), for the client matrix (`tier_matrix`).
pub fn record(client: &str, scenario: &str, short: &str, full: &str) {
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
    let date = chrono::Utc::now().format("%Y-%m-%d").to_string();
    let line = serde_json::json!({
        "client": client, "scenario": scenario, "short": short, "cell": full, "date": date
    });
    std::fs::write(
        dir.join(format!("{slug}__{scenario}.json")),
        line.to_string(),
    )
    .unwrap();
}

/// A JVM library of the tier, one row of this table per library: the variables naming its builds
/// (the newest, and the older ones as a list as in PATH) and its applications' main classes.
/// A build is a folder made by `mvn ... -Dout=DIR compile` on the library's Maven project under
/// `tests/clients/` (`.ci/run`, `install_older_clients`): `DIR/classes` and `DIR/classpath`.
pub struct Jvm {
    /// The library's name in the matrix and in CLIENTS (`maintwatch::grading::clients`).
    pub name: &'static str,
    pub var: &'static str,
    pub older_var: &'static str,
    /// The standalone application's main class; `--version` prints the library's version.
    pub app: &'static str,
    /// The cluster application's main class.
    pub cluster_app: Option<&'static str>,
}

pub const LETTUCE: Jvm = Jvm {
    name: "Lettuce",
    var: "MAINTWATCH_LETTUCE",
    older_var: "MAINTWATCH_LETTUCE_OLDER",
    app: "maintwatch.LettuceApp",
    cluster_app: Some("maintwatch.LettuceClusterApp"),
};

pub const JEDIS: Jvm = Jvm {
    name: "Jedis",
    var: "MAINTWATCH_JEDIS",
    older_var: "MAINTWATCH_JEDIS_OLDER",
    app: "maintwatch.JedisApp",
    cluster_app: None,
};

impl Jvm {
    /// The class path of a build: its classes, then the library's jars.
    pub fn classpath(dir: &str) -> String {
        let dir = Path::new(dir);
        let jars = std::fs::read_to_string(dir.join("classpath"))
            .unwrap_or_else(|e| panic!("{}: no classpath file ({e})", dir.display()));
        format!("{}:{}", dir.join("classes").display(), jars.trim())
    }

    /// `java -cp CP MAIN ARGS`.
    pub fn command(dir: &str, main: &str, args: &[&str]) -> Vec<String> {
        ["java", "-cp", &Self::classpath(dir), main]
            .iter()
            .chain(args)
            .map(|s| s.to_string())
            .collect()
    }

    /// The newest build (`var`) and its library version; `None` after a SKIP line (no `java`
    /// on PATH, or the variable unset: .ci/run sets it where Maven and Java exist).
    pub fn newest(&self, test: &str) -> Option<(String, String)> {
        if !on_path("java") {
            let _ = std::io::Write::write_fmt(
                &mut std::io::stderr(),
                format_args!("SKIP: {test}: no java on PATH\n"),
            );
            return None;
        }
        client_runtime(
            test,
            self.var,
            ".ci/run builds the JVM apps when mvn and java exist",
            |dir| {
                let cmd = Self::command(dir, self.app, &["--version"]);
                let mut c = std::process::Command::new(&cmd[0]);
                c.args(&cmd[1..]);
                c
            },
        )
    }

    /// The library version of a build; panics when it has none.
    pub fn version_of(&self, dir: &str) -> String {
        let cmd = Self::command(dir, self.app, &["--version"]);
        let out = std::process::Command::new(&cmd[0])
            .args(&cmd[1..])
            .output()
            .unwrap_or_else(|e| panic!("java does not run: {e}"));
        assert!(
            out.status.success(),
            "{dir}: no usable {}: {}",
            self.name,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// A build as a version of the tier, labelled `Lettuce 7.7.0` (Maven's `.RELEASE` dropped):
    /// the cluster application where the library has one.
    pub fn tier_version(&self, dir: &str, version: &str) -> Version {
        Version {
            label: format!("{} {}", self.name, version.trim_end_matches(".RELEASE")),
            standalone: Self::command(dir, self.app, &[]),
            cluster: self.cluster_app.map(|m| Self::command(dir, m, &[])),
            cluster_also: Vec::new(),
            env: Vec::new(),
        }
    }
}

/// Whether `program` is found on PATH.
fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
        .unwrap_or(false)
}
