//! certify's summary: the client's matrix row, then one table per scenario of its rules'
//! verdicts and reasons ([`summary`]), wrapped between words at the terminal's width.

use std::fmt::Write as _;

use crate::grading::matrix;
use crate::present::certify::junit::cases;
use crate::present::certify::played::{played, Outcome};
use crate::present::output::human;
use crate::shared::escape::sanitize;

/// The client's matrix row and one table per scenario, wrapped to `width` when on a terminal.
/// With several runs, a scenario's cell counts how often each verdict came, and its table is
/// shown once per different cell, from the first run that gave it.
pub fn summary(outcomes: &[Outcome], width: Option<usize>) -> String {
    let mut lines = vec![format!(
        "certify: the matrix row of {} ({}; codes: {}), each cell short then in full",
        client_name(outcomes),
        matrix::SHORT_LEGEND,
        matrix::legend()
    )];
    let scenarios = by_scenario(outcomes);
    let name_width = scenarios.iter().map(|(s, _)| s.len()).max().unwrap_or(0);
    let cells: Vec<(String, String)> = scenarios
        .iter()
        .map(|(_, runs)| {
            let fulls: Vec<String> = runs.iter().map(|o| matrix::cell(&o.grade)).collect();
            (matrix::short_over(&fulls), matrix::cell_over(&fulls))
        })
        .collect();
    let short_width = cells.iter().map(|(s, _)| s.len()).max().unwrap_or(0);
    for ((name, _), (short, full)) in scenarios.iter().zip(&cells) {
        lines.push(format!(
            "  {name:name_width$}  {short:short_width$}  {full}"
        ));
    }
    for (_, runs) in &scenarios {
        for (o, alike) in first_of_each_cell(runs) {
            lines.push(String::new());
            lines.extend(scenario_table(o, alike));
        }
    }
    wrapped(lines, width)
}

/// The outcomes by scenario, in the order first played.
pub(super) fn by_scenario(outcomes: &[Outcome]) -> Vec<(&str, Vec<&Outcome>)> {
    let mut out: Vec<(&str, Vec<&Outcome>)> = Vec::new();
    for o in outcomes {
        match out.iter_mut().find(|(s, _)| *s == o.scenario) {
            Some(e) => e.1.push(o),
            None => out.push((&o.scenario, vec![o])),
        }
    }
    out
}

/// Of one scenario's runs, the first to give each different cell, and how many gave it.
fn first_of_each_cell<'a>(runs: &[&'a Outcome]) -> Vec<(&'a Outcome, usize)> {
    let mut out: Vec<(&Outcome, String, usize)> = Vec::new();
    for o in runs {
        let cell = matrix::cell(&o.grade);
        match out.iter_mut().find(|(_, c, _)| *c == cell) {
            Some(e) => e.2 += 1,
            None => out.push((o, cell, 1)),
        }
    }
    out.into_iter().map(|(o, _, n)| (o, n)).collect()
}

/// Summary lines wrapped to `width` (a terminal's), each under its last column when that
/// leaves room for a few words, else indented.
fn wrapped(lines: Vec<String>, width: Option<usize>) -> String {
    let mut out = String::new();
    for line in lines {
        match width {
            Some(w) => {
                for piece in wrapped_row(&line, w) {
                    let _ = writeln!(out, "{piece}");
                }
            }
            None => {
                let _ = writeln!(out, "{line}");
            }
        }
    }
    out
}

/// Where a rule's name starts in its row (`  NOT JUDGED  `): a reason that has no room beside
/// a long name goes under it.
const NAME_COLUMN: usize = 14;

/// A summary line wrapped to `width` between words. A table row's text continues under its
/// last column when that leaves room for a few words; when it does not (a rule with a long name
/// at 80 columns), the reason starts on the next row under the rule's name and continues there,
/// a column still. Other lines continue 4 in.
fn wrapped_row(line: &str, width: usize) -> Vec<String> {
    let hang = hang_of(line);
    if !line.starts_with("  ") || hang + 30 <= width {
        let hang = if hang + 30 <= width { hang } else { 4 };
        return human::wrap_with(line, width, &" ".repeat(hang));
    }
    let (head, text) = line.split_at(hang);
    let under = " ".repeat(NAME_COLUMN.min(width / 2));
    let mut rows = human::wrap_with(head.trim_end(), width, &under);
    rows.extend(human::wrap_with(&format!("{under}{text}"), width, &under));
    rows
}

/// Where a wrapped summary line continues: under its last column (the reason, or the cell).
fn hang_of(line: &str) -> usize {
    line.rfind("  ")
        .filter(|&i| line.starts_with("  ") && i > 0)
        .map_or(4, |i| i + 2)
}

/// `failover: every rule held (...)` then one row per rule: verdict, name, reason. With
/// several runs the heading names the run, and how many more runs earned the same cell.
fn scenario_table(o: &Outcome, alike: usize) -> Vec<String> {
    let verdict = o.grade.verdict_line();
    let verdict = verdict.strip_prefix("grade: ").unwrap_or(&verdict);
    let also = match (o.run, alike) {
        (Some((_, n)), a) if a > 1 => {
            format!(" ({} more of the {n} runs gave the same cell)", a - 1)
        }
        _ => String::new(),
    };
    let mut lines = vec![format!(
        "{}{also}: {verdict}, {:.1} s",
        sanitize(&played(o)),
        o.seconds
    )];
    let cases = cases(&o.grade);
    let name_width = cases
        .iter()
        .map(|c| c.name.chars().count())
        .max()
        .unwrap_or(0);
    for c in &cases {
        lines.push(format!(
            "  {:10}  {:name_width$}  {}",
            c.verdict.words(),
            sanitize(&c.name),
            sanitize(&c.reason)
        ));
    }
    lines
}

/// The client's name for the row: the names its connections gave themselves (`CLIENT
/// SETINFO`, a connection name), else the program. A connection that named itself by neither is
/// called by its host in a grade; an address is no library's name, so the row leaves it out.
fn client_name(outcomes: &[Outcome]) -> String {
    let mut names: Vec<&str> = outcomes
        .iter()
        .flat_map(|o| o.grade.clients.iter().map(|c| c.client.as_str()))
        .filter(|n| n.parse::<std::net::IpAddr>().is_err())
        .collect();
    names.sort_unstable();
    names.dedup();
    if names.is_empty() {
        let program = outcomes
            .iter()
            .find_map(|o| o.grade.client_process.as_ref())
            .map_or("the client", |p| p.program.as_str());
        return sanitize(program).into_owned();
    }
    sanitize(&names.join(", ")).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grading::judge::Grade;

    #[test]
    fn the_rows_name_is_the_librarys_never_an_address() {
        let grade = |clients: &[&str]| -> Grade {
            let clients: Vec<serde_json::Value> = clients
                .iter()
                .map(|c| {
                    serde_json::json!({"client": c, "connections": 1, "reached": "by address",
                        "opted_in": {}, "never_opted_in": 0, "commands": 0, "errors": 0,
                        "notifications": []})
                })
                .collect();
            serde_json::from_value(serde_json::json!({"scenario": "s", "clients": clients,
                "rules": [], "verdict": "pass", "counts": {"pass": 0, "fail": 0,
                "not_judged": 0}, "passed": true}))
            .unwrap()
        };
        let outcome = |g: Grade| Outcome {
            scenario: "single-proxy".into(),
            run: None,
            grade: g,
            seconds: 1.0,
            page: None,
        };
        let both = [outcome(grade(&["127.0.0.1", "node-redis/6.4.0"]))];
        assert_eq!(client_name(&both), "node-redis/6.4.0");
        let v6 = [
            outcome(grade(&["::1"])),
            outcome(grade(&["redis-py/8.2.0"])),
        ];
        assert_eq!(client_name(&v6), "redis-py/8.2.0");
    }
}
