//! `simulate --grade -- CMD` with plain commands as the client (no client library needed): what
//! CMD is given (the variables, a resolv.conf of its own through which the simulator's host name
//! resolves), what becomes of its output, how its end shows in the grade, and Ctrl-C.
//! The machine's resolver files must be byte for byte the same afterwards.

use crate::common;

use std::process::Stdio;
use std::time::Duration;

/// The `grade` line of a `--grade-json` file, as JSON.
fn grade_value(text: &str) -> serde_json::Value {
    let grade = maintwatch::grading::judge::grade_lines::grade_of(text).expect("a grade line");
    serde_json::to_value(grade).unwrap()
}

const HANG_GUARD: Duration = Duration::from_secs(60);

fn resolver_files() -> Vec<Option<Vec<u8>>> {
    ["/etc/resolv.conf", "/etc/hosts"]
        .iter()
        .map(|p| std::fs::read(p).ok())
        .collect()
}

struct Ran {
    stdout: String,
    code: Option<i32>,
    grade: serde_json::Value,
    output: String,
}

/// `simulate --scenario shard-migration --grade -- sh -c SCRIPT` (nobody opts in, so the run ends
/// when the script does).
async fn ran(script: &str) -> Ran {
    let dir = tempfile::tempdir().unwrap();
    let (json, out) = (dir.path().join("g.json"), dir.path().join("client.log"));
    let run = common::maintwatch_async([
        "simulate",
        "--scenario",
        "shard-migration",
        "--grade",
        "--grade-json",
    ])
    .arg(&json)
    .arg("--client-output")
    .arg(&out)
    .args(["--", "sh", "-c", script])
    .stdout(Stdio::piped())
    .kill_on_drop(true)
    .output();
    let o = tokio::time::timeout(HANG_GUARD, run)
        .await
        .unwrap()
        .unwrap();
    Ran {
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        code: o.status.code(),
        grade: grade_value(&std::fs::read_to_string(&json).unwrap()),
        output: std::fs::read_to_string(&out).unwrap(),
    }
}

/// CMD gets the four variables; with a private resolv.conf (the banner says so), the machine's
/// own resolver (getent, through glibc) resolves the simulator's host name to its first proxy,
/// `localhost` still resolves from the untouched /etc/hosts, and the machine's files do not change.
#[tokio::test]
async fn the_client_resolves_the_simulators_name_through_the_machines_resolver() {
    let before = resolver_files();
    let r = ran(
        "echo url=$MAINTWATCH_SIM_URL host=$MAINTWATCH_SIM_HOST port=$MAINTWATCH_SIM_PORT \
         dns=$MAINTWATCH_SIM_DNS; cat /etc/resolv.conf; \
         command -v getent >/dev/null && { getent ahostsv4 $MAINTWATCH_SIM_HOST; getent hosts localhost; }; true",
    )
    .await;
    assert_eq!(
        resolver_files(),
        before,
        "the machine's resolver files changed"
    );
    let port = r
        .stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("proxies"))
        .and_then(|p| p.split_whitespace().next())
        .and_then(|a| a.rsplit(':').next())
        .unwrap()
        .to_string();
    assert!(
        r.output.contains(&format!(
            "url=redis://db.sim.maintwatch.test:{port} host=db.sim.maintwatch.test port={port} dns=127.0.0.1:"
        )),
        "{}",
        r.output
    );
    if !r
        .stdout
        .contains("resolving through its own /etc/resolv.conf")
    {
        crate::common::visible(&format!("SKIP: no private resolv.conf here: {}", r.stdout));
        assert!(
            r.stdout.contains("client: no private /etc/resolv.conf ("),
            "{}",
            r.stdout
        );
        return;
    }
    assert!(r.output.contains("nameserver 127.0.53."), "{}", r.output);
    if r.output.contains("localhost") {
        assert!(r.output.contains("127.0.0.2 "), "{}", r.output);
    } else {
        crate::common::visible(&format!("SKIP: no getent to resolve with: {}", r.output));
    }
    let p = &r.grade["client_process"];
    assert_eq!(p["program"], "sh");
    assert_eq!(p["exit_code"], 0);
    assert_eq!(p["stopped"], false);
    assert_eq!(r.code, Some(0), "{}", r.stdout);
}

/// A client failing on its own: its exit status and the tail of its stderr are in the grade and
/// the table, its output stays out of the narration (in the named file), and the run fails.
#[tokio::test]
async fn a_failing_client_is_a_fact_of_the_grade() {
    let r = ran("echo to-stdout; echo 'Traceback: boom' >&2; echo last >&2; exit 3").await;
    let p = &r.grade["client_process"];
    assert_eq!(p["exit_code"], 3, "{}", r.stdout);
    assert_eq!(p["stopped"], false);
    assert_eq!(
        p["stderr_tail"],
        serde_json::json!(["Traceback: boom", "last"])
    );
    assert!(r.output.contains("to-stdout") && r.output.contains("boom"));
    assert!(!r.stdout.contains("to-stdout"), "{}", r.stdout);
    assert!(
        r.stdout
            .contains("client process sh exited 3 at +0 s: Traceback: boom"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("its stdout and stderr are in "),
        "{}",
        r.stdout
    );
    assert!(r
        .stdout
        .contains("the client exited before the scenario ended"));
    assert_eq!(r.code, Some(1), "{}", r.stdout);
}

/// Ctrl-C during a graded run: the client is stopped (SIGTERM), the grade of what happened so
/// far is printed and written, and the exit code is 130.
#[tokio::test]
async fn ctrl_c_prints_the_grade_so_far() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("g.json");
    let mut sim = common::maintwatch_async([
        "simulate",
        "--scenario",
        "single-proxy",
        "--grade",
        "--grade-json",
    ]);
    sim.arg(&json)
        .arg("--client-output")
        .arg(dir.path().join("client.log"))
        .args(["--", "sleep", "30"]);
    let mut sim = common::Proc::spawn(sim);
    let (client, mut head) = sim
        .line(HANG_GUARD, "the client line", |l| {
            l.trim_start().starts_with("client ")
        })
        .await;
    head.push(client);
    let head = head.join("\n");
    assert!(head.contains("client    sleep"), "{head}");
    let exit = sim.stop(libc::SIGINT, HANG_GUARD).await;
    let (rest, code) = (exit.stdout, exit.code);
    assert!(rest.contains("grade: scenario single-proxy"), "{rest}");
    assert!(
        rest.contains("client process sleep stopped by maintwatch (signal 15)"),
        "{rest}"
    );
    assert!(
        rest.contains("grade: stopped by SIGINT before the scenario ended"),
        "{rest}"
    );
    assert_eq!(code, Some(130), "{rest}");
    let g = grade_value(&std::fs::read_to_string(&json).unwrap());
    assert_eq!(g["client_process"]["stopped"], true);
    assert_eq!(g["client_process"]["signal"], 15);
}

/// `simulate`'s narration shows the first DNS query from each address and counts the rest at
/// the end (issue 50: hundreds of lines buried the story); `--verbose` shows every one. The
/// client is maintwatch's own watch, which asks the simulator's DNS again and again.
#[tokio::test]
async fn repeated_dns_queries_are_counted_unless_verbose() {
    let run = |verbose: bool| async move {
        let mut cmd =
            common::maintwatch_async(["simulate", "--scenario", "single-proxy", "--speed", "20"]);
        if verbose {
            cmd.arg("--verbose");
        }
        let watch = format!(
            "exec {} watch \"$MAINTWATCH_SIM_URL\" --dns-server \"$MAINTWATCH_SIM_DNS\" \
             --sim-speed 20 >/dev/null",
            common::BIN
        );
        let o = cmd
            .args(["--", "sh", "-c", &watch])
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .output();
        let o = tokio::time::timeout(HANG_GUARD, o).await.unwrap().unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let quiet = run(false).await;
    let queries = |text: &str| text.matches("DNS query for").count();
    assert_eq!(queries(&quiet), 1, "{quiet}");
    let counted = quiet
        .lines()
        .find_map(|l| l.strip_prefix("("))
        .and_then(|l| l.split_once(" more DNS quer"))
        .map(|(n, _)| n.parse::<u64>().unwrap())
        .unwrap_or_else(|| panic!("no count of the rest:\n{quiet}"));
    assert!(counted >= 1, "{quiet}");
    assert!(quiet.contains("--verbose shows every one"), "{quiet}");
    let verbose = run(true).await;
    assert!(queries(&verbose) > 1, "{verbose}");
    assert!(!verbose.contains(" more DNS quer"), "{verbose}");
}
