//! What ships under `deploy/`: the Prometheus rules (`promtool check rules` and the unit tests in
//! `deploy/prometheus/tests/`), the Grafana dashboard (every query valid PromQL over documented
//! series), and both on a real Prometheus server scraping a watch of the simulator.
//!
//! promtool comes from `MAINTWATCH_PROMTOOL` (else PATH), the server from
//! `MAINTWATCH_PROMETHEUS` (else `prometheus` on PATH); absent, a SKIP line; configured but
//! broken, a failure.

mod scrape;

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn rules_path() -> PathBuf {
    root().join("deploy/prometheus/maintwatch.rules.yml")
}

fn dashboard() -> serde_json::Value {
    let text = std::fs::read_to_string(root().join("deploy/grafana/maintwatch.json")).unwrap();
    serde_json::from_str(&text).expect("the dashboard is JSON")
}

/// Every PromQL expression of the dashboard (panels' targets and annotations), as written.
fn dashboard_queries(d: &serde_json::Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for p in d["panels"].as_array().unwrap() {
        for t in p["targets"].as_array().into_iter().flatten() {
            let title = p["title"].as_str().unwrap_or("?").to_string();
            out.push((title, t["expr"].as_str().unwrap().to_string()));
        }
    }
    for a in d["annotations"]["list"].as_array().unwrap() {
        out.push(("annotation".into(), a["expr"].as_str().unwrap().to_string()));
    }
    out
}

/// A dashboard query as Prometheus runs it for "all watchers".
fn concrete(expr: &str) -> String {
    expr.replace("$instance", ".+")
}

/// `promtool ARGS...`: panics with its output unless it succeeds.
fn promtool_ok(bin: &str, args: &[&str], dir: &Path) -> String {
    let out = Command::new(bin)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("MAINTWATCH_PROMTOOL / promtool {bin} does not run: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "promtool {args:?}: {text}");
    text
}

/// The names of the alerts in the rules file (`- alert: NAME` lines).
fn alert_names() -> Vec<String> {
    std::fs::read_to_string(rules_path())
        .unwrap()
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- alert: "))
        .map(str::to_string)
        .collect()
}

#[test]
fn the_rules_pass_promtool_check_and_their_unit_tests() {
    let Some(bin) = scrape::promtool("the_rules_pass_promtool_check_and_their_unit_tests") else {
        return;
    };
    let dir = root().join("deploy/prometheus");
    let checked = promtool_ok(&bin, &["check", "rules", "maintwatch.rules.yml"], &dir);
    assert!(checked.contains("SUCCESS"), "{checked}");
    let tested = promtool_ok(&bin, &["test", "rules", "tests/maintwatch_test.yml"], &dir);
    assert!(tested.contains("SUCCESS"), "{tested}");
}

#[test]
fn every_alert_has_a_unit_test_that_fires_and_one_that_does_not() {
    let names = alert_names();
    assert!(names.len() >= 10, "{names:?}");
    let tests = std::fs::read_to_string(root().join("deploy/prometheus/tests/maintwatch_test.yml"))
        .unwrap();
    // Each `alertname:` line is followed by its `exp_alerts:` line: `[]` or a list.
    let lines: Vec<&str> = tests.lines().map(str::trim).collect();
    for name in &names {
        let cases: Vec<&str> = lines
            .windows(2)
            .filter(|w| w[0] == format!("alertname: {name}"))
            .map(|w| w[1])
            .collect();
        assert!(
            cases.contains(&"exp_alerts: []"),
            "{name}: no case where it stays quiet"
        );
        assert!(
            cases.contains(&"exp_alerts:"),
            "{name}: no case where it fires"
        );
    }
    let rules = std::fs::read_to_string(rules_path()).unwrap();
    assert_eq!(
        rules.matches("summary:").count(),
        names.len(),
        "a summary per alert"
    );
    assert_eq!(
        rules.matches("description:").count(),
        names.len(),
        "a description per alert"
    );
}

/// Series names a PromQL text reads that are maintwatch's (histogram suffixes removed).
fn series_read(expr: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = expr;
    while let Some(i) = rest
        .find("maintwatch_")
        .into_iter()
        .chain(rest.find("redis_client_"))
        .min()
    {
        let tail = &rest[i..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        let name = &tail[..end];
        let preceded_by_colon = i > 0 && rest.as_bytes()[i - 1] == b':';
        if !preceded_by_colon {
            let base = ["_bucket", "_count", "_sum"]
                .iter()
                .find_map(|s| name.strip_suffix(s))
                .unwrap_or(name);
            out.push(base.to_string());
        }
        rest = &tail[end..];
    }
    out
}

#[test]
fn the_rules_and_the_dashboard_read_only_documented_series() {
    let doc = std::fs::read_to_string(root().join("docs/metrics.md")).unwrap();
    let rules = std::fs::read_to_string(rules_path()).unwrap();
    let exprs: Vec<String> = rules
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .map(str::to_string)
        .chain(dashboard_queries(&dashboard()).into_iter().map(|(_, e)| e))
        .collect();
    let mut seen = 0;
    for e in &exprs {
        for name in series_read(e) {
            let documented = doc.contains(&format!("`{name}`"))
                || (name == "maintwatch_build_info" && doc.contains("`maintwatch_build_info`"));
            assert!(documented, "{name} (in {e}) is not in docs/metrics.md");
            seen += 1;
        }
    }
    assert!(seen > 20, "{seen}");
}

#[test]
fn the_dashboard_has_a_row_per_watcher_and_every_query_is_valid_promql() {
    let d = dashboard();
    let vars = d["templating"]["list"].as_array().unwrap();
    assert!(vars.iter().any(|v| v["name"] == "instance"));
    let panels = d["panels"].as_array().unwrap();
    assert_eq!(panels[0]["type"], "row");
    assert_eq!(panels[0]["repeat"], "instance", "one row per watcher");
    let queries = dashboard_queries(&d);
    for (title, q) in &queries {
        assert!(
            q.contains("instance=~\"$instance\""),
            "{title}: {q} is not per watcher"
        );
    }
    let Some(bin) =
        scrape::promtool("the_dashboard_has_a_row_per_watcher_and_every_query_is_valid_promql")
    else {
        return;
    };
    // promtool parses an expression only inside a rule file: each query becomes a recording rule.
    let dir = tempfile::tempdir().unwrap();
    let mut file = String::from("groups:\n  - name: dashboard\n    rules:\n");
    for (i, (_, q)) in queries.iter().enumerate() {
        let quoted = serde_json::to_string(&concrete(q)).unwrap();
        file.push_str(&format!(
            "      - record: dashboard:query{i}\n        expr: {quoted}\n"
        ));
    }
    std::fs::write(dir.path().join("dashboard.rules.yml"), &file).unwrap();
    let out = promtool_ok(&bin, &["check", "rules", "dashboard.rules.yml"], dir.path());
    assert!(
        out.contains(&format!("SUCCESS: {} rules found", queries.len())),
        "{out}"
    );
}
