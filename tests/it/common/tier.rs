//! The client tier, shared by the tier tests (`tests/it/redis_py_app.rs`, `node_redis.rs`,
//! `ioredis.rs`, `go_redis.rs`, `lettuce.rs`, `jedis.rs`, `jobs_verdicts.rs`) and
//! `tests/it/tier_matrix.rs`: an unmodified client application run by `maintwatch simulate
//! --upstream spawn --grade -- CMD` (one scenario) or by `maintwatch certify -- CMD` (a client
//! release's row of the client matrix, docs/matrix.md), its grades, and the cells it earns, as
//! certify printed them, written to `target/client-matrix/` for `tier_matrix` to compare.
//!
//! The real parts: a redis-server (`MAINTWATCH_REDIS_SERVER`, the upstream) and the client's own
//! build, named by its own variable (`MAINTWATCH_PYTHON`, `MAINTWATCH_NODE_REDIS`, ...; the
//! older releases `..._OLDER`). Unset: a SKIP line. Set but unusable: the test fails. A library
//! joins the tier as a [`Library`] (how its build is found and run, its applications), and its
//! test file keeps only what is its own: what its rows must show ([`Graded`]) and what was
//! measured of it. The runner is here: [`certified_row`], [`older_certified_rows`],
//! [`sharded_subscriber`], [`single_and_multi_proxy`].

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

    /// Where the failover and shard-migration windows judged the timeout, `relaxed-timeout`'s
    /// reason gives the stall, the client's own timeout and what it did; no-closing-notification
    /// judges `timeout-restored` at the backstop the same way. Whether they were judged is the
    /// row's cell ([`assert_graded_in_columns`]).
    pub fn assert_judged_lines_name_the_stall(&self, prefix: &str, scenario: &str) {
        let rule = match scenario {
            "failover" | "shard-migration" => "relaxed-timeout",
            "no-closing-notification" => "timeout-restored",
            _ => return,
        };
        if self.verdict(prefix, rule) == "not_judged" {
            return;
        }
        let rules = &self.client(prefix)["notifications"][0]["rules"];
        let detail = rules
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["rule"] == rule)
            .unwrap()["detail"]
            .as_str()
            .unwrap();
        // Judged on a stall against its own timeout, whichever way it went: go-redis's first
        // command after a notification may not be relaxed (docs/matrix.md).
        let on_a_stall = detail.contains(" s stall") || detail.contains("on a reply held ");
        assert!(
            on_a_stall && detail.contains("its own timeout ("),
            "{scenario}: {detail}"
        );
        if rule == "timeout-restored" {
            assert!(detail.contains("30 s backstop"), "{scenario}: {detail}");
        }
    }

    /// `oss-cluster`: `smigrated-refresh` is PASS or FAIL on the SMIGRATED, saying how the client
    /// learnt the move and how many `-MOVED` it got.
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
    // A path is a scenario file (the tests' variants of an embedded one), a word a name.
    let flag = if scenario.ends_with(".scn") {
        "--scenario-file"
    } else {
        "--scenario"
    };
    let sim = maintwatch_async([
        "simulate",
        flag,
        scenario,
        "--speed",
        &speed.to_string(),
        "--upstream",
        "spawn",
        "--quiet",
        "--grade",
    ]);
    let (table, code) = run_graded(sim, (&json, &out), cmd, redis, env, HANG_GUARD)
        .await
        .unwrap_or_else(|| panic!("hang guard: {scenario} did not end"));
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

const CERTIFY_GUARD: Duration = Duration::from_secs(40 * 60);

/// Runs `c` (`simulate ... --grade` or `certify`) with `--grade-json JSON --client-output OUT
/// -- CMD`, the configured redis-server first on PATH and `env` added, to its end: what it
/// printed and its exit code; `None` when it outlasted `guard` (a hang).
async fn run_graded(
    mut c: tokio::process::Command,
    (json, out): (&Path, &Path),
    cmd: &[impl AsRef<std::ffi::OsStr>],
    redis: &str,
    env: &[(&str, &str)],
    guard: Duration,
) -> Option<(String, Option<i32>)> {
    c.arg("--grade-json")
        .arg(json)
        .arg("--client-output")
        .arg(out)
        .arg("--")
        .args(cmd)
        .env("PATH", path_with(redis))
        .envs(env.iter().copied())
        .stdout(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    tokio::time::timeout(guard, async {
        let mut text = String::new();
        stdout.read_to_string(&mut text).await.unwrap();
        (text, child.wait().await.unwrap().code())
    })
    .await
    .ok()
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
        crate::common::skip(test, &format!("{var} is unset or empty ({hint})"));
        return None;
    };
    let version = version_printed(check(&value), &format!("{var}={value}"));
    Some((value, version))
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
        crate::common::skip(
            test,
            &format!("{var} is unset or empty (scripts/clients/matrix.sh sets it)"),
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
        crate::common::skip(
            test,
            &format!("no private resolv.conf on this machine: {}", r.table),
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
    /// certify's flags beyond the scenarios ([`Library::jobs`]).
    pub flags: Vec<&'static str>,
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
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    // Only a guard against a hang: certify's default list lasts about 7 minutes.
    let guard = CERTIFY_GUARD * matrix_runs();
    let (text, code) = run_graded(c, (&json, &out), cmd, redis, &env, guard)
        .await
        .unwrap_or_else(|| panic!("hang guard: certify {cmd:?} did not end"));
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
            // With several runs, the first run's output (`run-1/`).
            let log = format!("{scenario}.log");
            let output = std::fs::read_to_string(out.join(&log))
                .or_else(|_| std::fs::read_to_string(out.join("run-1").join(&log)))
                .unwrap_or_default();
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
    let columns = standalone_columns();
    let scenarios = (!all).then_some(columns.as_slice());
    let mut cluster_scenarios = vec![CLUSTER];
    if all {
        cluster_scenarios.extend(&v.cluster_also);
    }
    let runs = matrix_runs().to_string();
    let mut flags = v.flags.clone();
    if runs != "1" {
        flags.extend(["--runs", runs.as_str()]);
    }
    let cluster = async {
        match &v.cluster {
            Some(cmd) => {
                let scenarios = Some(cluster_scenarios.as_slice());
                Some(certify_with(redis, scenarios, cmd, &v.env, &flags).await)
            }
            None => None,
        }
    };
    let (standalone, cluster) = tokio::join!(
        certify_with(redis, scenarios, &v.standalone, &v.env, &flags),
        cluster
    );
    let columns = match all {
        true => standalone.row.keys().map(String::as_str).collect(),
        false => columns,
    };
    // A release without a cluster client has `n/a` in every cluster column of the page.
    let cluster_columns = match (all, &v.cluster) {
        (true, Some(_)) => cluster_scenarios,
        (true, None) => CLUSTER_COLUMNS.to_vec(),
        (false, _) => vec![CLUSTER],
    };
    record_version(v, &columns, &cluster_columns, &standalone, cluster.as_ref());
    (standalone, cluster)
}

/// The client matrix's columns a cluster application plays (docs/matrix.md).
const CLUSTER_COLUMNS: [&str; 2] = [CLUSTER, "cascading-smigrated"];

/// What a library's test asserts of every certified row (the standalone run, the cluster one).
pub type Graded = fn(&Certified, Option<&Certified>);

/// The tests of a library of the tier, each a runner (of this module, or the library's own)
/// on the library: `name: runner(LIB, args...);` makes the test `name`, calling
/// `runner("name", &LIB, args...)` (its doc comments kept); a runner returns `None` after a
/// SKIP line.
macro_rules! tier_tests {
    ($($(#[$doc:meta])* $name:ident: $($runner:ident)::+($lib:expr $(, $arg:expr)*);)*) => {$(
        $(#[$doc])*
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            let _ = $($runner)::+(stringify!($name), &$lib $(, $arg)*).await;
        }
    )*};
}
pub(crate) use tier_tests;

/// The newest release's row of the client matrix, from `maintwatch certify` with no
/// `--scenarios`: the application is played every scenario where a client can act, the row it
/// prints has a cell for each, `graded` holds, and the matrix's row is those cells (the cluster
/// column from the cluster application on `oss-cluster`, which plays `cluster_also` too, and
/// only those: the newest release of a library with a cluster application has its cluster
/// client). `None` after a SKIP line.
pub async fn certified_row(test: &str, lib: &Library, graded: Graded) -> Option<()> {
    let (dir, version, redis) = lib.with_redis(test)?;
    let v = lib.tier_version(&dir, &version);
    let (standalone, cluster) = certify_version(&redis, &v, true).await;
    let played: Vec<&str> = standalone.row.keys().map(String::as_str).collect();
    let mut all = maintwatch::cli::certify::default_scenarios();
    all.sort_unstable();
    assert_eq!(played, all, "{}", standalone.stdout);
    graded_once(graded, &standalone, cluster.as_ref());
    if lib.cluster_app.is_some() {
        let c = cluster
            .as_ref()
            .unwrap_or_else(|| panic!("{}: no cluster run", v.label));
        let played: Vec<&str> = c.row.keys().map(String::as_str).collect();
        let mut want = [&[CLUSTER][..], lib.cluster_also].concat();
        want.sort_unstable();
        assert_eq!(played, want, "{}", c.stdout);
    }
    crate::tier_matrix::check_rows(&[&v.label]);
    Some(())
}

/// `graded` on a row certified once, as CI certifies it. Over several runs
/// (`MAINTWATCH_MATRIX_RUNS`) a rule that one run left unjudged is what the row's cells count,
/// not a failure of the measurement: the cells say how often.
fn graded_once(graded: Graded, standalone: &Certified, cluster: Option<&Certified>) {
    if matrix_runs() == 1 {
        graded(standalone, cluster);
    }
}

/// The older releases of a library (the folders in its `older_var`, as [`older`] reads them),
/// one after another: each certified on the matrix's columns, checked by `graded`, and its row
/// of the matrix checked. Unset: a SKIP line.
pub async fn older_certified_rows(test: &str, lib: &Library, graded: Graded) {
    let Some(dirs) = older(test, lib.older_var) else {
        return;
    };
    let Some(redis) = super::redis_server_binary(test) else {
        return;
    };
    for dir in dirs {
        let v = lib.tier_version(&dir, &lib.version_of(&dir));
        let (standalone, cluster) = certify_version(&redis, &v, true).await;
        graded_once(graded, &standalone, cluster.as_ref());
        crate::tier_matrix::check_rows(&[&v.label]);
    }
}

/// The newest release's cluster application with a sharded subscriber (`--sharded`), under
/// oss-cluster; `None` after a SKIP line (no build, no redis-server, no private resolv.conf).
pub async fn sharded_subscriber(test: &str, lib: &Library) -> Option<TierRun> {
    sharded_run(test, lib, false).await
}

/// [`sharded_subscriber`] under oss-cluster's clock waiting for the subscription too
/// ([`sharded_scenario`]), and `sharded-resubscribe` is judged on the SMIGRATED: PASS or FAIL
/// with the messages counted.
pub async fn sharded_subscriber_is_judged(test: &str, lib: &Library) -> Option<()> {
    sharded_run(test, lib, true)
        .await?
        .assert_sharded_judged(lib.client);
    Some(())
}

/// The sharded subscriber's run, under oss-cluster or, `waits`, [`sharded_scenario`].
async fn sharded_run(test: &str, lib: &Library, waits: bool) -> Option<TierRun> {
    let (dir, _, redis) = lib.with_redis(test)?;
    let app = lib.cluster_app.expect("a cluster application");
    let (cmd, env) = (lib.command(&dir, app, &["--sharded"]), lib.env(&dir));
    let tmp = tempfile::tempdir().unwrap();
    let scenario = match waits {
        true => sharded_scenario(tmp.path()),
        false => CLUSTER.to_string(),
    };
    let r = simulate(&redis, &scenario, 1.0, &strs(&cmd), &pairs(&env)).await;
    resolved_privately(test, &r).then_some(r)
}

/// oss-cluster with its clock waiting for the subscriber too (`start opt-in 3 ssubscribe`),
/// written in `dir`; its path. A loaded JVM opens its pub/sub connection seconds after its
/// cluster's connections, and a subscription made after the move has nothing for it to end.
/// (A client whose SSUBSCRIBE is refused, as go-redis's is, would never start this clock.)
fn sharded_scenario(dir: &Path) -> String {
    let text = include_str!("../../../scenarios/oss-cluster.scn")
        .replace("name oss-cluster ", "name oss-cluster-sharded ")
        .replace("\nstart opt-in 3 ", "\nstart opt-in 3 ssubscribe ");
    assert!(text.contains("start opt-in 3 ssubscribe"), "{text}");
    let path = dir.join("oss-cluster-sharded.scn");
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

/// single-proxy and multi-proxy, each played by `app` and by `hooked` (the same application
/// with docs/simulate.md's resolver recipe), all four at once with `env`: `[single, multi,
/// single hooked, multi hooked]`. The machine's resolver files are left as they were; `None`
/// after a SKIP line when the client got no private resolv.conf.
pub async fn single_and_multi_proxy(
    test: &str,
    redis: &str,
    app: &[&str],
    hooked: &[&str],
    env: &[(&str, &str)],
) -> Option<[TierRun; 4]> {
    let before = resolver_files();
    let (single, multi, single_hooked, multi_hooked) = tokio::join!(
        simulate(redis, "single-proxy", 1.0, app, env),
        simulate(redis, "multi-proxy", 1.0, app, env),
        simulate(redis, "single-proxy", 1.0, hooked, env),
        simulate(redis, "multi-proxy", 1.0, hooked, env),
    );
    assert_eq!(
        resolver_files(),
        before,
        "the machine's resolver files changed"
    );
    resolved_privately(test, &single).then_some([single, multi, single_hooked, multi_hooked])
}

/// The runs of `c` in the matrix's columns but the cluster one: (scenario, run).
pub fn column_runs(c: &Certified) -> impl Iterator<Item = (&str, &TierRun)> {
    let columns = standalone_columns();
    c.runs
        .iter()
        .filter(move |(s, _)| columns.contains(&s.as_str()))
        .map(|(s, r)| (s.as_str(), r))
}

/// In every column's run of `standalone`, the client was graded under its own name (`prefix...`).
/// Its verdicts are not asserted here: they are the row's cells, which [`check_rows`] holds
/// against the measured runs, strictly where those never varied. Asserting one here (every
/// connection opted in, every timeout rule judged) would fail one CI run in as many as the
/// client varies: go-redis 9.23.0 left a connection without an opt-in in 2 of 20 runs of
/// `dns-race`, node-redis 6.4.0's timeout rules went unjudged in 4 of 20 of `failover`.
///
/// [`check_rows`]: crate::tier_matrix::check_rows
pub fn assert_graded_in_columns(standalone: &Certified, prefix: &str) {
    for (scenario, r) in column_runs(standalone) {
        assert!(
            r.client(prefix).is_object(),
            "{scenario}: no client {prefix}: {}",
            r.table
        );
        r.assert_judged_lines_name_the_stall(prefix, scenario);
    }
}

/// How many connections of the client named `prefix...` opted in (0 when the grade counts none).
pub fn opted_in(r: &TierRun, prefix: &str) -> u64 {
    r.client(prefix)["opted_in"]
        .as_object()
        .map(|m| m.values().filter_map(|n| n.as_u64()).sum())
        .unwrap_or(0)
}
/// Records the cells of `v`'s row: each standalone column, and the cluster column from the
/// cluster application's run (`n/a` without one).
fn record_version(
    v: &Version,
    columns: &[&str],
    cluster_columns: &[&str],
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
    for scenario in cluster_columns {
        match cluster {
            Some(c) => {
                let (short, full) = c.row.get(*scenario).unwrap_or_else(|| {
                    panic!("{}: no {scenario} in the row: {}", v.label, c.stdout)
                });
                record(&v.label, scenario, short, full);
            }
            None => record(
                &v.label,
                scenario,
                maintwatch::grading::matrix::NOT_APPLICABLE,
                "no cluster client with maintenance notifications in this version",
            ),
        }
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

/// Each rule's code in a matrix cell, as each rule carries it, which `certify` prints too.
// Only some of the tests that include this module read it.
#[allow(unused_imports)]
pub use maintwatch::grading::matrix::codes;
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
    let (date, load) = (today(), load_average());
    let line = serde_json::json!({
        "client": client, "scenario": scenario, "short": short, "cell": full, "date": date,
        "runs": matrix_runs(), "load": load,
    });
    std::fs::write(
        dir.join(format!("{slug}__{scenario}.json")),
        line.to_string(),
    )
    .unwrap();
}

/// Today's date (UTC), as the matrix's date lines give it.
pub fn today() -> String {
    chrono::Utc::now().format("%Y-%m-%d").to_string()
}

/// How busy the machine was: the 1-minute load average as a certification ends, which covers
/// most of it.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(String::from))
        .unwrap_or_else(|| "unknown".into())
}

/// How many times the tier plays each scenario of a row: `MAINTWATCH_MATRIX_RUNS` (certify's
/// `--runs`), 1 when unset. scripts/clients/matrix.sh sets it to measure how often each
/// verdict comes; CI plays each once and checks it against what those runs recorded.
pub fn matrix_runs() -> u32 {
    std::env::var("MAINTWATCH_MATRIX_RUNS")
        .ok()
        .map(|v| {
            v.parse()
                .unwrap_or_else(|e| panic!("MAINTWATCH_MATRIX_RUNS={v:?}: {e}"))
        })
        .unwrap_or(1)
}

/// How a library's build, named by its variable, is run and asked its version.
#[derive(Clone, Copy)]
pub enum Runtime {
    /// A Python with the library installed (`import MODULE`, printing `MODULE.__version__`);
    /// the applications are scripts under `tests/clients/`.
    Python(&'static str),
    /// A folder whose `node_modules` has the npm package; the applications are scripts under
    /// `tests/clients/`, run by `node` with NODE_PATH.
    Node(&'static str),
    /// A folder of built Go applications; `APP --version` prints the library's version.
    Go,
    /// A folder made by `mvn ... -Dout=DIR compile` on the library's Maven project under
    /// `tests/clients/` (`.ci/run`, `install_older_clients`): `DIR/classes` and
    /// `DIR/classpath`; the applications are main classes, `APP --version` prints the version.
    Jvm,
}

/// A library of the tier, one row of this table per library: its name in the matrix and in
/// CLIENTS (`maintwatch::grading::clients`), how the grade names it, the variables naming its builds
/// (the newest, and the older ones as a list as in PATH) and its applications. Its tests keep
/// only what is the library's own: what its rows must show, and what was measured of it.
pub struct Library {
    pub name: &'static str,
    /// The prefix of the grade's client name (its `LIB-NAME`).
    pub client: &'static str,
    pub var: &'static str,
    pub older_var: &'static str,
    /// How CI sets `var`, for the SKIP line.
    pub hint: &'static str,
    pub runtime: Runtime,
    /// The standalone application (a script, a program or a main class).
    pub app: &'static str,
    /// The cluster application, where the library has one.
    pub cluster_app: Option<&'static str>,
    /// The scenarios besides `oss-cluster` the cluster application plays in a full row.
    pub cluster_also: &'static [&'static str],
    /// certify's `--jobs` for this library, where not the default: a JVM starts on seconds of
    /// CPU, and eight at once (ten with the cluster application's) on 2 cores starved each
    /// other past Lettuce's 1 s handshake timeout, a load of the run's own making.
    pub jobs: Option<&'static str>,
}

const PYTHON_CHECK: &str = "import redis, redis.maint_notifications; print(redis.__version__)";

pub const REDIS_PY: Library = Library {
    name: "redis-py",
    client: "redis-py/",
    var: "MAINTWATCH_PYTHON",
    older_var: "MAINTWATCH_PYTHON_OLDER",
    hint: ".ci/run sets it to a venv with redis-py",
    runtime: Runtime::Python(PYTHON_CHECK),
    app: "redis_py_app.py",
    cluster_app: Some("redis_py_cluster_app.py"),
    cluster_also: &["cascading-smigrated"],
    jobs: None,
};

pub const NODE_REDIS: Library = Library {
    name: "node-redis",
    client: "node-redis/",
    var: "MAINTWATCH_NODE_REDIS",
    older_var: "MAINTWATCH_NODE_REDIS_OLDER",
    hint: ".ci/run installs node-redis when node and npm exist",
    runtime: Runtime::Node("redis"),
    app: "node_redis_app.js",
    cluster_app: Some("node_redis_cluster_app.js"),
    cluster_also: &["cascading-smigrated"],
    jobs: None,
};

/// ioredis sends `ioredis` as its `LIB-NAME`... or nothing; the prefix matches how the grade
/// names it. Its `Cluster` turns the feature off (see tests/it/ioredis.rs): no cluster app.
pub const IOREDIS: Library = Library {
    name: "ioredis",
    client: "ioredis",
    var: "MAINTWATCH_IOREDIS",
    older_var: "MAINTWATCH_IOREDIS_OLDER",
    hint: ".ci/run installs ioredis when node and npm exist",
    runtime: Runtime::Node("ioredis"),
    app: "ioredis_app.js",
    cluster_app: None,
    cluster_also: &[],
    jobs: None,
};

/// go-redis sends `go-redis(,go1.26.8)` as its `LIB-NAME`.
pub const GO_REDIS: Library = Library {
    name: "go-redis",
    client: "go-redis(",
    var: "MAINTWATCH_GO_REDIS",
    older_var: "MAINTWATCH_GO_REDIS_OLDER",
    hint: ".ci/run builds the go-redis applications when Go exists",
    runtime: Runtime::Go,
    app: "go_redis_app",
    cluster_app: Some("go_redis_cluster_app"),
    cluster_also: &["cascading-smigrated"],
    jobs: None,
};

pub const LETTUCE: Library = Library {
    name: "Lettuce",
    client: "Lettuce/",
    var: "MAINTWATCH_LETTUCE",
    older_var: "MAINTWATCH_LETTUCE_OLDER",
    hint: ".ci/run builds the JVM apps when mvn and java exist",
    runtime: Runtime::Jvm,
    app: "maintwatch.LettuceApp",
    cluster_app: Some("maintwatch.LettuceClusterApp"),
    cluster_also: &["cascading-smigrated"],
    jobs: Some("2"),
};

pub const JEDIS: Library = Library {
    name: "Jedis",
    client: "jedis/",
    var: "MAINTWATCH_JEDIS",
    older_var: "MAINTWATCH_JEDIS_OLDER",
    hint: ".ci/run builds the JVM apps when mvn and java exist",
    runtime: Runtime::Jvm,
    app: "maintwatch.JedisApp",
    cluster_app: None,
    cluster_also: &[],
    jobs: None,
};

/// Where the script applications are.
const CLIENTS_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/");

impl Library {
    /// The command running the application `app` of the build `dir` with `args`.
    pub fn command(&self, dir: &str, app: &str, args: &[&str]) -> Vec<String> {
        let mut cmd = match self.runtime {
            Runtime::Python(_) => vec![dir.to_string(), format!("{CLIENTS_DIR}{app}")],
            Runtime::Node(_) => vec!["node".to_string(), format!("{CLIENTS_DIR}{app}")],
            Runtime::Go => vec![Path::new(dir).join(app).to_string_lossy().into_owned()],
            Runtime::Jvm => vec!["java".into(), "-cp".into(), classpath(dir), app.into()],
        };
        cmd.extend(args.iter().map(|a| a.to_string()));
        cmd
    }

    /// The environment the applications of the build `dir` need (node: NODE_PATH).
    pub fn env(&self, dir: &str) -> Vec<(String, String)> {
        match self.runtime {
            Runtime::Node(_) => {
                let node_path = Path::new(dir).join("node_modules");
                vec![("NODE_PATH".into(), node_path.to_string_lossy().into_owned())]
            }
            _ => Vec::new(),
        }
    }

    /// The command printing the library version of the build `dir`.
    fn version_command(&self, dir: &str) -> std::process::Command {
        use std::process::Command;
        match self.runtime {
            Runtime::Python(check) => {
                let mut c = Command::new(dir);
                c.args(["-c", check]);
                c
            }
            Runtime::Node(package) => {
                let mut c = Command::new("node");
                let js = format!("console.log(require('{package}/package.json').version)");
                c.args(["-e", &js]).current_dir(dir);
                c
            }
            Runtime::Go | Runtime::Jvm => {
                let cmd = self.command(dir, self.app, &["--version"]);
                let mut c = Command::new(&cmd[0]);
                c.args(&cmd[1..]);
                c
            }
        }
    }

    /// The newest build (`var`) and its library version; `None` after a SKIP line (the variable
    /// unset, or for a JVM library no `java` on PATH). Set but unusable: the test fails.
    pub fn newest(&self, test: &str) -> Option<(String, String)> {
        if matches!(self.runtime, Runtime::Jvm) && !on_path("java") {
            crate::common::skip(test, "no java on PATH");
            return None;
        }
        client_runtime(test, self.var, self.hint, |dir| self.version_command(dir))
    }

    /// [`Library::newest`] and the configured redis-server: `(build, version, redis-server)`;
    /// `None` after a SKIP line.
    pub fn with_redis(&self, test: &str) -> Option<(String, String, String)> {
        let (dir, version) = self.newest(test)?;
        let redis = super::redis_server_binary(test)?;
        Some((dir, version, redis))
    }

    /// The library version of a build; panics when it has none.
    pub fn version_of(&self, dir: &str) -> String {
        version_printed(
            self.version_command(dir),
            &format!("{} in {dir}", self.name),
        )
    }

    /// A build as a version of the tier, labelled `redis-py 8.1.0` (Maven's `.RELEASE`
    /// dropped): the cluster application where the library has one and that release's cluster
    /// client handles the notifications (`maintwatch::grading::clients`, `cluster_since`; no such bound:
    /// every release).
    pub fn tier_version(&self, dir: &str, version: &str) -> Version {
        let cluster = maintwatch::grading::clients::has_cluster(self.name, version) != Some(false);
        Version {
            label: format!("{} {}", self.name, version.trim_end_matches(".RELEASE")),
            standalone: self.command(dir, self.app, &[]),
            cluster: self
                .cluster_app
                .filter(|_| cluster)
                .map(|app| self.command(dir, app, &[])),
            cluster_also: self.cluster_also.to_vec(),
            env: self.env(dir),
            flags: self.jobs.map_or(Vec::new(), |n| vec!["--jobs", n]),
        }
    }
}

/// The class path of a JVM build: its classes, then the library's jars.
fn classpath(dir: &str) -> String {
    let dir = Path::new(dir);
    let jars = std::fs::read_to_string(dir.join("classpath"))
        .unwrap_or_else(|e| panic!("{}: no classpath file ({e})", dir.display()));
    format!("{}:{}", dir.join("classes").display(), jars.trim())
}

/// What `c` printed, trimmed: a client library's version. `what` (the build) names it when the
/// command does not run or fails.
fn version_printed(mut c: std::process::Command, what: &str) -> String {
    let out = c
        .output()
        .unwrap_or_else(|e| panic!("{what} does not run: {e}"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{what}: no usable client library: {stderr}"
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Whether `program` is found on PATH.
fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
        .unwrap_or(false)
}

/// A command as [`simulate`] takes it.
pub fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// An environment as [`simulate`] takes it.
pub fn pairs(v: &[(String, String)]) -> Vec<(&str, &str)> {
    v.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}
