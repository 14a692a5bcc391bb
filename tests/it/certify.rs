//! `maintwatch certify`: its JUnit report, checked by the readers CI systems use (xmllint against
//! the Surefire-shaped schema in tests/fixtures/junit.xsd, and PyPI's `junitparser`), its exit
//! code against the grades, and its stop on SIGTERM with no process left behind.
//!
//! The client is maintwatch's own `watch`, a real client that opts in, started by certify as any
//! application is: it needs neither Python nor Node. The runs need a redis-server
//! (`MAINTWATCH_REDIS_SERVER`, for `--upstream spawn`); the readers are optional, each with a
//! SKIP line when absent.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use maintwatch::grading::judge::grade_lines::GradeLine;
use maintwatch::grading::judge::{
    ClientGrade, ClientProcess, Counts, Grade, NotificationGrade, Rule, Verdict,
};
use maintwatch::present::certify::{junit, summary, worst, Outcome};
use serde_json::Value;

const GUARD: Duration = Duration::from_secs(120);

fn skip(why: String) {
    crate::common::visible(&format!("SKIP: {why}"));
}

/// Validates `file` against tests/fixtures/junit.xsd when xmllint is on PATH (else a SKIP line).
fn validate(test: &str, file: &Path) {
    let schema = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/junit.xsd");
    let out = match std::process::Command::new("xmllint")
        .args(["--noout", "--schema"])
        .arg(&schema)
        .arg(file)
        .output()
    {
        Ok(out) => out,
        Err(e) => {
            return skip(format!(
                "{test}: xmllint not found ({e}): install libxml2-utils"
            ))
        }
    };
    assert!(
        out.status.success(),
        "the JUnit report does not validate: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        std::fs::read_to_string(file).unwrap_or_default()
    );
}

/// Reads the report back with PyPI's junitparser: per suite its name, counts and cases (name,
/// classname, and each result's class and message).
const READER: &str = r#"
import json, sys
from junitparser import JUnitXml
out = []
for s in JUnitXml.fromfile(sys.argv[1]):
    cases = [{"name": c.name, "classname": c.classname,
              "results": [[type(r).__name__, r.message] for r in c.result]} for c in s]
    out.append({"name": s.name, "tests": s.tests, "failures": s.failures,
                "skipped": s.skipped, "errors": s.errors, "cases": cases})
print(json.dumps(out))
"#;

/// The report as junitparser reads it, or `None` after a SKIP line when `MAINTWATCH_PYTHON` is
/// unset or has no junitparser.
fn read_back(test: &str, file: &Path) -> Option<Vec<Value>> {
    let Some(py) = common::redis_server_from(std::env::var_os("MAINTWATCH_PYTHON")) else {
        skip(format!(
            "{test}: MAINTWATCH_PYTHON is unset (.ci/run sets it to a venv with junitparser)"
        ));
        return None;
    };
    let has = std::process::Command::new(&py)
        .args(["-c", "import junitparser"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has {
        skip(format!("{test}: {py} cannot import junitparser"));
        return None;
    }
    let out = std::process::Command::new(&py)
        .args(["-c", READER])
        .arg(file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "junitparser cannot read the report: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(serde_json::from_slice::<Vec<Value>>(&out.stdout).unwrap())
}

/// What a server could have sent: markup, quotes, an entity, a control character and a CDATA end.
const HOSTILE: &str = "evil</testcase><x a=\"1\">&amp; 'q' \u{1}\u{1b}[31m ]]> é";

fn notification(name: &str, rules: Vec<Rule>) -> NotificationGrade {
    NotificationGrade {
        notification: name.into(),
        at: 1.0,
        window: 15.0,
        received: 1,
        commands_inside: 0,
        commands_outside: 0,
        failed_inside: 0,
        failed_outside: 0,
        moving: None,
        rules,
    }
}

/// A grade with a run rule, a notification's three verdicts, and hostile text everywhere a
/// server's or client's words end up.
fn hand_made() -> Grade {
    let client = ClientGrade {
        client: format!("lib/{HOSTILE}"),
        connections: 1,
        reached: "by name".into(),
        opted_in: BTreeMap::new(),
        never_opted_in: 0,
        refused_opt_in: 0,
        handshake_unknown: 0,
        commands: 3,
        errors: 0,
        notifications: vec![notification(
            &format!("MOVING seq 0 {HOSTILE}"),
            vec![
                Rule::decided("opt-in", true, "fine".into()),
                Rule::decided("moved-before-close", false, format!("stayed on {HOSTILE}")),
                Rule::not_judged("no-storm", format!("unknown: {HOSTILE}")),
            ],
        )],
    };
    let mut g = Grade {
        scenario: "single-proxy".into(),
        clients: vec![client],
        rules: vec![Rule::decided("survives", true, "still running".into())],
        verdict: Verdict::Pass,
        counts: Counts::default(),
        passed: true,
        nothing_judged: None,
        not_exercised: vec![],
        client_process: Some(ClientProcess {
            program: "app".into(),
            exit_code: Some(1),
            signal: None,
            at: 4.5,
            stopped: false,
            stderr_tail: vec![format!("Error: {HOSTILE}")],
            output_file: None,
            no_resolver: None,
        }),
    };
    g.settle();
    g
}

/// The writer alone, on a hand-made grade: hostile text stays text, and the counts, failure and
/// skipped elements are what the grade says.
#[test]
fn junit_of_a_hand_made_grade_escapes_what_the_wire_sent() {
    let g = hand_made();
    let nothing = {
        let mut n = hand_made();
        n.scenario = "refusing".into();
        n.clients.clear();
        n.rules.clear();
        n.nothing_judged = Some(format!("never connected {HOSTILE}"));
        n.settle();
        n
    };
    let outcomes = [
        Outcome {
            scenario: "single-proxy".into(),
            run: None,
            grade: g.clone(),
            seconds: 3.25,
            page: None,
        },
        Outcome {
            scenario: "refusing".into(),
            run: None,
            grade: nothing,
            seconds: 0.5,
            page: None,
        },
    ];
    assert_eq!(worst(&outcomes), Verdict::Fail);
    let xml = junit(&outcomes);
    assert!(!xml.contains("</testcase><x"), "{xml}");
    assert!(!xml.contains('\u{1}') && !xml.contains('\u{1b}'), "{xml}");
    assert!(
        xml.contains("&lt;/testcase&gt;&lt;x a=&quot;1&quot;&gt;&amp;amp;"),
        "{xml}"
    );
    assert!(xml.contains(
        "<testsuite name=\"single-proxy\" tests=\"4\" failures=\"1\" errors=\"0\" skipped=\"1\""
    ));
    assert!(xml.contains("name=\"survives\" classname=\"maintwatch.single-proxy\""));

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("junit.xml");
    std::fs::write(&file, &xml).unwrap();
    validate("junit_of_a_hand_made_grade", &file);
    let Some(suites) = read_back("junit_of_a_hand_made_grade", &file) else {
        return;
    };
    let s = &suites[0];
    assert_eq!(
        (&s["tests"], &s["failures"], &s["skipped"]),
        (&Value::from(4), &Value::from(1), &Value::from(1))
    );
    let moved = s["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| {
            c["name"]
                .as_str()
                .unwrap()
                .starts_with("moved-before-close / MOVING seq 0")
        })
        .unwrap();
    // The reader gets back exactly the text, less what XML cannot carry.
    assert_eq!(moved["results"][0][0], "Failure");
    let message = moved["results"][0][1].as_str().unwrap();
    assert!(
        message.starts_with("stayed on evil</testcase><x a=\"1\">&amp; 'q' \\u{1}"),
        "{message}"
    );
    let refusing = &suites[1];
    assert_eq!(refusing["cases"][0]["results"][0][0], "Skipped");
    assert!(refusing["cases"][0]["results"][0][1]
        .as_str()
        .unwrap()
        .starts_with("never connected evil</testcase>"));
}

/// `--upstream spawn` takes redis-server from PATH: the configured one first.
fn path_with(redis: &str) -> std::ffi::OsString {
    let bin_dir = Path::new(redis)
        .parent()
        .map(PathBuf::from)
        .unwrap_or_default();
    let rest = std::env::var_os("PATH").unwrap_or_default();
    std::env::join_paths(std::iter::once(bin_dir).chain(std::env::split_paths(&rest))).unwrap()
}

/// `certify --speed 5 ARGS -- sh -c 'exec maintwatch watch ...'`: maintwatch's own watch is the
/// client, pointed at the simulator by the variables certify gives it.
fn certify(redis: &str, dir: &Path, args: &[&str]) -> tokio::process::Command {
    let watch = "exec \"$MW\" watch \"$MAINTWATCH_SIM_URL\" --dns-server \"$MAINTWATCH_SIM_DNS\" \
                 --sim-speed \"$MW_SPEED\"";
    certify_running(redis, dir, args, &["sh", "-c", watch])
}

/// `certify ARGS -- CLIENT`, with the reports and the client's output in `dir`.
fn certify_running(
    redis: &str,
    dir: &Path,
    args: &[&str],
    client: &[&str],
) -> tokio::process::Command {
    let mut cmd = common::maintwatch_async(["certify"]);
    cmd.args(args)
        .arg("--junit")
        .arg(dir.join("junit.xml"))
        .arg("--grade-json")
        .arg(dir.join("grades.jsonl"))
        .arg("--client-output")
        .arg(dir.join("client"))
        .arg("--")
        .args(client)
        .env("MW", common::BIN)
        .env("PATH", path_with(redis));
    cmd
}

/// Every `grade` line of a `--grade-json` file.
fn grades(file: &Path) -> Vec<Grade> {
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .filter_map(|l| match serde_json::from_str(l) {
            Ok(GradeLine::Grade { grade, .. }) => Some(grade),
            _ => None,
        })
        .collect()
}

/// The `(tests, failures, skipped)` attributes of each `<testsuite>`, by name.
fn suite_counts(xml: &str) -> BTreeMap<String, (usize, usize, usize)> {
    let attr = |tag: &str, name: &str| -> String {
        let start = tag.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
        tag[start..].split('"').next().unwrap().to_string()
    };
    xml.split("<testsuite ")
        .skip(1)
        .map(|t| {
            let tag = &format!(" {}", &t[..t.find('>').unwrap()]);
            let n = |a: &str| attr(tag, a).parse::<usize>().unwrap();
            (attr(tag, "name"), (n("tests"), n("failures"), n("skipped")))
        })
        .collect()
}

/// single-proxy (watch does not move: FAIL) then failover at 5x (the timeout rules: NOT
/// JUDGED): exit 1 for the worst, a line per scenario in order, and JUnit counts equal to the
/// grades' counts.
#[tokio::test]
async fn certify_exits_with_the_worst_verdict_and_junit_counts_the_grades() {
    let test = "certify_exits_with_the_worst_verdict";
    let Some(redis) = common::redis_server_binary(test) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("certify.html");
    let mut cmd = certify(
        &redis,
        dir.path(),
        &[
            "--scenarios",
            "single-proxy,failover",
            "--speed",
            "5",
            "--report",
            page.to_str().unwrap(),
        ],
    );
    cmd.env("MW_SPEED", "5");
    let exit = common::Proc::spawn(cmd).finish(GUARD).await;
    let out = &exit.stdout;
    assert_eq!(exit.code, Some(1), "{out}\n{}", exit.stderr);
    let single = out.find("certify: single-proxy: a rule failed").expect(out);
    let failover = out
        .find("certify: failover: no rule failed, but not every rule was judged")
        .expect(out);
    assert!(single < failover, "{out}");
    // The row: each scenario's short cell, then its full cell.
    let row = |scenario: &str, short: &str, full: &str| {
        out.lines().any(|l| {
            l.strip_prefix(&format!("  {scenario}"))
                .map(|rest| rest.trim_start())
                .and_then(|rest| rest.strip_prefix(short))
                .is_some_and(|rest| rest.starts_with("  ") && rest.trim_start().starts_with(full))
        })
    };
    assert!(row("single-proxy", "F mov", "FAIL mov;"), "{out}");
    assert!(row("failover", "NJ rlx rst", "NJ rlx rst;"), "{out}");
    assert!(
        out.contains("NOT JUDGED  timeout-restored / FAILING_OVER seq 0"),
        "{out}"
    );

    let grades = grades(&dir.path().join("grades.jsonl"));
    // Each grade names its scenario (`scenario failover`).
    let name = |g: &Grade| g.scenario.trim_start_matches("scenario ").to_string();
    let names: Vec<String> = grades.iter().map(name).collect();
    assert_eq!(names, ["single-proxy", "failover"]);
    let xml_file = dir.path().join("junit.xml");
    let xml = std::fs::read_to_string(&xml_file).unwrap();
    let counts = suite_counts(&xml);
    for g in &grades {
        let c = g.counts;
        assert_eq!(
            counts[&name(g)],
            (c.pass + c.fail + c.not_judged, c.fail, c.not_judged),
            "{}: {xml}",
            g.scenario
        );
    }
    assert_eq!(grades[0].verdict, Verdict::Fail);
    assert_eq!(grades[1].verdict, Verdict::NotJudged);
    assert!(xml.contains("<failure message=\""), "{xml}");
    assert!(xml.contains("<skipped message=\""), "{xml}");
    assert!(xml.contains("<system-err>client process sh "), "{xml}");
    assert!(dir.path().join("client/failover.log").exists());
    report_has_a_section_per_scenario(&page, &grades);

    validate(test, &xml_file);
    let Some(suites) = read_back(test, &xml_file) else {
        return;
    };
    for (s, g) in suites.iter().zip(&grades) {
        assert_eq!(s["name"], name(g).as_str());
        assert_eq!(s["failures"], g.counts.fail);
        assert_eq!(s["skipped"], g.counts.not_judged);
        let failed: Vec<&Value> = s["cases"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["results"][0][0] == "Failure")
            .collect();
        assert_eq!(failed.len(), g.counts.fail);
        for case in failed {
            let rule = case["name"].as_str().unwrap().split(" / ").next().unwrap();
            let detail = g
                .all_rules()
                .find(|r| r.rule == rule)
                .unwrap()
                .detail
                .as_str();
            assert_eq!(case["results"][0][1], detail);
        }
    }
}

/// `--report`: one page, a section per scenario in order, each with its verdict, its drawing
/// and a row per rule result.
fn report_has_a_section_per_scenario(page: &Path, grades: &[Grade]) {
    let html = std::fs::read_to_string(page).unwrap();
    let sections: Vec<&str> = html.split("<section class=\"run\"").skip(1).collect();
    assert_eq!(sections.len(), grades.len(), "{html}");
    for (s, g) in sections.iter().zip(grades) {
        assert!(
            s.contains(&format!("data-source=\"{}\"", g.scenario)),
            "{s}"
        );
        assert!(
            s.contains(&format!("data-verdict=\"{}\"", g.verdict.words())),
            "{s}"
        );
        assert!(s.contains("<svg"), "{s}");
        let c = g.counts;
        assert_eq!(
            s.matches("<tr class=\"rule ").count(),
            c.pass + c.fail + c.not_judged,
            "{s}"
        );
    }
    // Every id is one element's (`id="grade"` was on every section's heading, the arrowheads'
    // on every drawing), and no time reads `+-`.
    let ids: Vec<&str> = html
        .split(" id=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .collect();
    let unique: std::collections::BTreeSet<&str> = ids.iter().copied().collect();
    assert_eq!(unique.len(), ids.len(), "duplicate ids in {ids:?}");
    assert!(!html.contains("+-"), "a time reads +-");
    // The summary comes first: a row per scenario linking to its section, the worst first.
    let contents = html
        .split("<table class=\"contents\">")
        .nth(1)
        .and_then(|t| t.split("</table>").next())
        .unwrap_or_else(|| panic!("no summary table: {html}"));
    assert!(html.find("class=\"contents\"") < html.find("<section"));
    for i in 1..=grades.len() {
        let link = format!("href=\"#run-{i}\"");
        assert!(contents.contains(&link), "{link}: {contents}");
        assert!(unique.contains(format!("run-{i}").as_str()), "{ids:?}");
    }
    let worst = grades.iter().map(|g| g.verdict).max().unwrap();
    let first = contents.split("data-verdict=\"").nth(1).unwrap_or("");
    assert!(first.starts_with(worst.words()), "{contents}");
    // As a browser builds it: the summary's links and the sections they lead to.
    let Some(bin) = crate::report::chromium() else {
        return skip("certify report summary: chromium not installed".into());
    };
    let dom =
        String::from_utf8(crate::report::headless(&bin, page, &["--dump-dom".into()])).unwrap();
    assert!(
        dom.find("class=\"contents\"") < dom.find("<section"),
        "{dom}"
    );
    for i in 1..=grades.len() {
        assert!(dom.contains(&format!("href=\"#run-{i}\"")), "{dom}");
        assert!(dom.contains(&format!("id=\"run-{i}\"")), "{dom}");
        assert!(dom.contains(&format!("id=\"run-{i}-grade\"")), "{dom}");
    }
}

/// The pids of every process below `root`, from /proc's parent links.
fn descendants(root: u32) -> Vec<u32> {
    let mut parent: Vec<(u32, u32)> = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // After the command's closing parenthesis: state, then the parent's pid.
        let rest = &stat[stat.rfind(')').unwrap_or(0) + 1..];
        if let Some(ppid) = rest.split_whitespace().nth(1).and_then(|p| p.parse().ok()) {
            parent.push((pid, ppid));
        }
    }
    let mut found = vec![root];
    let mut i = 0;
    while i < found.len() {
        let p = found[i];
        found.extend(parent.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
        i += 1;
    }
    found.remove(0);
    found
}

/// Whether `pid` still runs (a zombie waiting for its reaper does not).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        let rest = &stat[stat.rfind(')').unwrap_or(0) + 1..];
        rest.split_whitespace().next() != Some("Z")
    })
}

/// SIGTERM while the first scenario plays: exit 143, the redis-server and the client stopped,
/// and the report of what was played so far written.
#[tokio::test]
async fn sigterm_stops_the_servers_and_the_client_and_writes_the_report_so_far() {
    let test = "sigterm_stops_the_servers_and_the_client";
    let Some(redis) = common::redis_server_binary(test) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = certify(
        &redis,
        dir.path(),
        // One at a time: the second scenario is the one left unplayed.
        &["--jobs", "1", "--scenarios", "failover,single-proxy"],
    );
    cmd.env("MW_SPEED", "1");
    let proc = common::Proc::spawn(cmd);
    // Until the client runs: a `maintwatch watch` below certify, beside the redis-server.
    let children = tokio::time::timeout(GUARD, async {
        loop {
            let found = descendants(proc.pid());
            let names: Vec<String> = found
                .iter()
                .filter_map(|p| std::fs::read_to_string(format!("/proc/{p}/cmdline")).ok())
                .collect();
            let client = names.iter().any(|n| n.contains("watch\0"));
            let redis = names.iter().any(|n| n.contains("redis-server"));
            if client && redis {
                return found;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("hang guard: the client and redis-server never ran");
    let exit = proc.stop(libc::SIGTERM, GUARD).await;
    assert_eq!(exit.code, Some(143), "{}\n{}", exit.stdout, exit.stderr);
    let left: Vec<u32> = children.into_iter().filter(|&p| running(p)).collect();
    assert!(left.is_empty(), "still running after certify: {left:?}");
    assert!(
        exit.stdout.contains("certify: failover: ")
            && exit
                .stdout
                .contains("(stopped by SIGTERM: what happened so far)"),
        "{}",
        exit.stdout
    );
    assert!(
        exit.stdout
            .contains("certify: interrupted; not played: single-proxy"),
        "{}",
        exit.stdout
    );
    let xml = std::fs::read_to_string(dir.path().join("junit.xml")).unwrap();
    assert!(xml.contains("<testsuite name=\"failover\""), "{xml}");
    assert!(!xml.contains("single-proxy"), "{xml}");
    assert_eq!(grades(&dir.path().join("grades.jsonl")).len(), 1);
}

/// A client that never connects never starts a scenario that waits for an opt-in: certify
/// stops the scenario at its start deadline rather than wait forever, and grades it NOT JUDGED.
#[tokio::test]
async fn a_scenario_the_client_cannot_start_is_not_judged_and_does_not_hang() {
    let test = "a_scenario_the_client_cannot_start";
    let Some(redis) = common::redis_server_binary(test) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let cmd = certify_running(
        &redis,
        dir.path(),
        &["--scenarios", "oss-cluster"],
        &["sleep", "600"],
    );
    let exit = common::Proc::spawn(cmd).finish(GUARD).await;
    let out = &exit.stdout;
    assert_eq!(exit.code, Some(9), "{out}\n{}", exit.stderr);
    assert!(out.contains("(the scenario never started)"), "{out}");
    assert!(out.contains("NJ scenario-started"), "{out}");
    let xml = std::fs::read_to_string(dir.path().join("junit.xml")).unwrap();
    assert!(
        xml.contains("<testcase name=\"scenario-started\" classname=\"maintwatch.oss-cluster\">\n      <skipped message=\"the scenario never started: it waits for 3 connections"),
        "{xml}"
    );
}

/// A client command that does not exist: certify's own exit code, the reason said once on
/// stderr, and the JUnit file with one case in error.
#[tokio::test]
async fn a_client_that_cannot_be_started_exits_10_with_the_report_written() {
    let test = "a_client_that_cannot_be_started_exits_10";
    let Some(redis) = common::redis_server_binary(test) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let cmd = certify_running(
        &redis,
        dir.path(),
        &["--scenarios", "refusing"],
        &["/nonexistent/maintwatch-test-client"],
    );
    let exit = common::Proc::spawn(cmd).finish(GUARD).await;
    assert_eq!(
        exit.code,
        Some(maintwatch::exit::CLIENT_NOT_STARTED),
        "{}\n{}",
        exit.stdout,
        exit.stderr
    );
    // Said once, before any scenario (it was said once per scenario, each "not played").
    assert_eq!(
        exit.stderr.trim(),
        "maintwatch: error: cannot start /nonexistent/maintwatch-test-client: no such file; no \
         scenario was played",
    );
    assert!(!exit.stdout.contains("not played"), "{}", exit.stdout);
    // The JUnit file shows it to a CI system: one case, in error.
    let xml = std::fs::read_to_string(dir.path().join("junit.xml")).unwrap();
    assert!(
        xml.contains("tests=\"1\" failures=\"0\" errors=\"1\""),
        "{xml}"
    );
    assert!(
        xml.contains("<error message=\"cannot start /nonexistent/maintwatch-test-client"),
        "{xml}"
    );
    validate(test, &dir.path().join("junit.xml"));
}

/// The `maintwatch certify` command lines of docs/certify.md, each as the CLI parses it: the
/// CI jobs' commands cannot be run here as they are (they install things), but their flags and
/// scenario names must be ones certify takes.
#[test]
fn the_commands_of_docs_certify_md_parse() {
    use clap::Parser;
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/certify.md"))
            .unwrap();
    let mut seen = 0;
    for line in doc.lines() {
        let Some(at) = line.find("maintwatch certify ") else {
            continue;
        };
        // A command, not prose: in a code block or a YAML step, never inside backquotes.
        if line[..at].contains('`') {
            continue;
        }
        let words: Vec<&str> = line[at..].split_whitespace().collect();
        let parsed = maintwatch::cli::Cli::try_parse_from(&words);
        assert!(parsed.is_ok(), "{line}: {}", parsed.err().unwrap());
        seen += 1;
    }
    assert!(seen >= 4, "only {seen} certify commands in docs/certify.md");
}

/// A scenario name certify does not have and an upstream it cannot use are usage errors, found
/// before anything starts.
#[test]
fn usage_errors_exit_2_before_anything_starts() {
    for args in [
        &["--scenarios", "failover,nope", "--", "true"][..],
        &["--upstream", "bogus://x", "--", "true"],
        &["--scenarios", "failover"],
    ] {
        let out = common::maintwatch(["certify"]).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
    }
}

/// On a terminal the row and the tables are wrapped at its width, between words, the reason
/// continuing under itself; hostile text is shown escaped.
#[test]
fn the_summary_wraps_at_the_terminals_width() {
    let outcomes = [Outcome {
        scenario: "single-proxy".into(),
        run: None,
        grade: hand_made(),
        seconds: 3.25,
        page: None,
    }];
    let text = summary(&outcomes, Some(70));
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{1}'),
        "{text}"
    );
    for line in text.lines() {
        let longest_word = line
            .split(' ')
            .map(|w| w.chars().count())
            .max()
            .unwrap_or(0);
        assert!(
            line.chars().count() <= 70 || longest_word > 30,
            "{line:?} in\n{text}"
        );
    }
    assert!(
        text.contains("  single-proxy  F mov  FAIL mov; NJ storm; PASS srv opt"),
        "{text}"
    );
    let unwrapped = summary(&outcomes, None);
    assert!(
        unwrapped.lines().any(|l| l.chars().count() > 70),
        "{unwrapped}"
    );
}

/// `--pcap DIR` where DIR is not there yet: certify makes it once, and each scenario leaves its
/// capture there (the scenarios failed with "No such file or directory" before, every one).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pcap_makes_its_directory_and_keeps_a_capture_per_scenario() {
    let test = "pcap_makes_its_directory_and_keeps_a_capture_per_scenario";
    let Some(redis) = common::redis_server_binary(test) else {
        return;
    };
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        skip(format!("{test}: capturing needs root (CAP_NET_RAW)"));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let captures = dir.path().join("not/yet");
    let pcap = ["--scenarios", "refusing,failover", "--speed", "5", "--pcap"];
    let args: Vec<&str> = pcap.into_iter().chain(captures.to_str()).collect();
    let mut cmd = certify(&redis, dir.path(), &args);
    cmd.env("MW_SPEED", "5");
    let exit = common::Proc::spawn(cmd).finish(GUARD).await;
    assert!(
        matches!(exit.code, Some(0 | 1 | 9)),
        "{}\n{}",
        exit.stdout,
        exit.stderr
    );
    for scenario in ["refusing", "failover"] {
        let file = captures.join(format!("{scenario}.pcap"));
        let bytes = std::fs::read(&file)
            .unwrap_or_else(|e| panic!("{} ({e}): {}", file.display(), exit.stderr));
        // A pcap file's magic number (microsecond or nanosecond stamps), in either byte order.
        let magic = bytes
            .get(..4)
            .map(|m| u32::from_le_bytes(m.try_into().unwrap()));
        assert!(
            matches!(
                magic.map(|m| [m, m.swap_bytes()]),
                Some([0xa1b2_c3d4 | 0xa1b2_3c4d, _] | [_, 0xa1b2_c3d4 | 0xa1b2_3c4d])
            ),
            "{}: {:02x?}",
            file.display(),
            bytes.get(..4)
        );
    }
}

/// `--runs 2`: each scenario played twice, each run's files in a folder of its own, JUnit with
/// a suite per run and every case once per run (`(run k/2)`), one row cell for the scenario
/// counting its runs, and the exit code of the worst run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_play_each_scenario_again_and_count_the_verdicts() {
    let test = "runs_play_each_scenario_again";
    let Some(redis) = common::redis_server_binary(test) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let args = ["--runs", "2", "--scenarios", "single-proxy", "--speed", "5"];
    let mut cmd = certify(&redis, dir.path(), &args);
    cmd.env("MW_SPEED", "5");
    let exit = common::Proc::spawn(cmd).finish(GUARD).await;
    let out = &exit.stdout;
    assert_eq!(exit.code, Some(1), "{out}\n{}", exit.stderr);
    for k in 1..=2 {
        assert!(
            out.contains(&format!("certify: single-proxy, run {k}/2: a rule failed")),
            "{out}"
        );
        let log = dir.path().join(format!("client/run-{k}/single-proxy.log"));
        assert!(log.exists(), "{}: {out}", log.display());
    }
    // The watch never moves: moved-before-close fails in both runs, so the cell has no count.
    let rows: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("  single-proxy  "))
        .collect();
    assert_eq!(rows.len(), 1, "{out}");
    assert!(rows[0].contains("  F mov  FAIL mov"), "{out}");
    assert!(
        out.contains("(1 more of the 2 runs gave the same cell)"),
        "{out}"
    );
    let xml_file = dir.path().join("junit.xml");
    let xml = std::fs::read_to_string(&xml_file).unwrap();
    let counts = suite_counts(&xml);
    let names: Vec<&String> = counts.keys().collect();
    assert_eq!(
        names,
        ["single-proxy, run 1/2", "single-proxy, run 2/2"],
        "{xml}"
    );
    let grades = grades(&dir.path().join("grades.jsonl"));
    assert_eq!(grades.len(), 2);
    for (k, g) in grades.iter().enumerate() {
        let cases = xml.matches(&format!("(run {}/2)\"", k + 1)).count();
        let c = g.counts;
        assert_eq!(cases, c.pass + c.fail + c.not_judged, "{xml}");
    }
    validate(test, &xml_file);
}

/// A worker of `--jobs N` plays its scenario exactly as the parent settled it: each play's
/// settings, built from the command line, go through the one value a worker is handed (as JSON)
/// and come back the same in every field the simulation reads.
#[test]
fn a_worker_plays_what_the_parent_settled() {
    use clap::Parser;
    use maintwatch::simulator::simulation::worker::WorkerSettings;
    use maintwatch::simulator::simulation::{UpstreamChoice, Verbosity};
    let parsed = maintwatch::cli::Cli::try_parse_from([
        "maintwatch",
        "certify",
        "--scenarios=failover,cluster",
        "--runs=2",
        "--speed=2.5",
        "--pcap=/tmp/captures",
        "--client-output=/tmp/client",
        "--report=page.html",
        "--",
        "python3",
        "app.py",
        "--seconds=60",
    ])
    .unwrap();
    let maintwatch::cli::Command::Certify(args) = parsed.command else {
        panic!("not certify");
    };
    let settings = maintwatch::cli::certify::settings(&args).unwrap();
    assert_eq!(settings.scenarios.len(), 6, "3 scenarios, 2 runs");
    for (i, s) in settings.scenarios.iter().enumerate() {
        let sent = WorkerSettings::of(&settings, i).unwrap();
        assert!(sent.page);
        let w = WorkerSettings::parse(&sent.to_json()).unwrap().simulation();
        assert_eq!(w.scenario, s.scenario);
        assert_eq!(w.speed, s.speed);
        assert!(matches!(
            (&w.upstream, &s.upstream),
            (UpstreamChoice::Spawn, UpstreamChoice::Spawn)
        ));
        let (wc, sc) = (w.client.as_ref().unwrap(), s.client.as_ref().unwrap());
        assert_eq!((&wc.command, &wc.output), (&sc.command, &sc.output));
        assert_eq!(w.pcap, s.pcap);
        assert_eq!(w.start_deadline, s.start_deadline);
        assert_eq!(w.narration, Verbosity::Silent);
        assert_eq!(w.narration, s.narration);
        assert_eq!(
            (w.grade, w.grade_json.is_none(), w.report.is_none()),
            (s.grade, s.grade_json.is_none(), s.report.is_none())
        );
        assert_eq!(
            (w.repeat, w.port, w.catch_up, w.verbose),
            (s.repeat, s.port, s.catch_up, s.verbose)
        );
        assert_eq!((&w.password, &w.user), (&s.password, &s.user));
        assert!(w.api.is_none() && s.api.is_none());
        assert!(w.fault_injector.is_none() && s.fault_injector.is_none());
    }
    let second = WorkerSettings::of(&settings, 4).unwrap();
    assert_eq!(
        second.output.as_deref(),
        Some(std::ffi::OsStr::new("/tmp/client/run-2/oss-cluster.log"))
    );
    // A URL's server is one scenario's at a time: never a worker's, so its password never
    // travels.
    let mut shared = settings.clone();
    shared.scenarios[0].upstream = UpstreamChoice::At(
        maintwatch::simulator::sim::upstream::Upstream::parse("redis://u:secret@127.0.0.1:1")
            .unwrap(),
    );
    assert!(WorkerSettings::of(&shared, 0).is_err());
}
