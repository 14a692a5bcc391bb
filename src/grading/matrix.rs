//! The client matrix's cells: one short code per rule, and the cell a grade earns.
//!
//! The client matrix of docs/matrix.md (written by the client tier's tests) and `maintwatch certify`'s
//! row for a client are both made here, so that a cell a client author sees in their own CI is
//! spelled exactly as the matrix spells it.

use crate::grading::judge::{Grade, Verdict};

/// Each rule's code in a matrix cell, in the order cells list them, so that a cell fits a narrow
/// column (docs/matrix.md and `certify` print the legend).
pub const CODES: [(&str, &str); 10] = [
    ("survives", "srv"),
    ("opt-in", "opt"),
    ("moved-before-close", "mov"),
    ("no-lost-commands", "lost"),
    ("no-storm", "storm"),
    ("no-loop", "loop"),
    ("relaxed-timeout", "rlx"),
    ("timeout-restored", "rst"),
    ("smigrated-refresh", "smr"),
    ("sharded-resubscribe", "ssub"),
];

/// Rules left out of a cell: with a busy client, whether a command is in flight when the server
/// closes the connection is a race, not a property of the client, so its verdict changes from
/// run to run (each run's grade still has it).
pub const RACY_RULES: [&str; 1] = ["no-lost-commands"];

/// The code of a rule; a rule without one is spelled out.
pub fn code(rule: &str) -> &str {
    CODES
        .iter()
        .find(|(r, _)| *r == rule)
        .map_or(rule, |(_, c)| c)
}

/// `srv survives, opt opt-in, ...`: the codes in words, for a legend.
pub fn legend() -> String {
    CODES
        .iter()
        .filter(|(rule, _)| !RACY_RULES.contains(rule))
        .map(|(rule, code)| format!("{code} {rule}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The matrix's columns, in order: the scenarios where a client can act that the matrix
/// carries, each with the short heading that keeps a row within 80 columns. The rest of
/// certify's scenarios are left out of docs/matrix.md (its text says why); certify prints a cell
/// for every scenario it plays.
pub const COLUMNS: [(&str, &str); 8] = [
    ("single-proxy", "single"),
    ("multi-proxy", "multi"),
    ("dns-race", "dns"),
    ("shard-migration", "shard"),
    ("failover", "failover"),
    // A maintenance whose closing notification never comes: the backstop.
    ("no-closing-notification", "noend"),
    ("silent-shrink", "shrink"),
    ("oss-cluster", "cluster"),
];

/// The short cell of a shape a client version does not have (no cluster support before its
/// release): nothing to judge, and not a NOT JUDGED either.
pub const NOT_APPLICABLE: &str = "n/a";

/// The short cell's words, for a legend.
pub const SHORT_LEGEND: &str = "F: a rule failed, the codes of those that failed follow; NJ: none \
     failed but some were not judged, their codes follow (alone: nothing was judged); ok: every \
     rule held; n/a: the version has no client of that shape";

/// The cell a grade earns: the codes of the rules that failed, were not judged, and passed (each
/// rule's worst verdict over every notification and client), in [`CODES`]' order; `nothing
/// judged` when no rule had a result.
pub fn cell(grade: &Grade) -> String {
    cell_of(grade.all_rules().map(|r| (r.rule.as_str(), r.verdict)))
}

/// The short cell a grade earns: its worst verdict and the codes at that verdict (`F mov`,
/// `NJ rlx`), `ok` when every rule held, `NJ` alone when nothing was judged.
pub fn short(grade: &Grade) -> String {
    short_of(grade.all_rules().map(|r| (r.rule.as_str(), r.verdict)))
}

/// Each rule's worst verdict, the racy rules left out, in [`CODES`]' order.
fn worst_by_rule<'a>(
    results: impl IntoIterator<Item = (&'a str, Verdict)>,
) -> Vec<(&'a str, Verdict)> {
    let mut worst: Vec<(&str, Verdict)> = Vec::new();
    for (rule, verdict) in results.into_iter().filter(|(r, _)| !RACY_RULES.contains(r)) {
        match worst.iter_mut().find(|(r, _)| *r == rule) {
            // The verdicts are ordered pass < not judged < fail: the larger is the worse.
            Some(e) => e.1 = e.1.max(verdict),
            None => worst.push((rule, verdict)),
        }
    }
    worst.sort_by_key(|(r, _)| CODES.iter().position(|(c, _)| c == r).unwrap_or(usize::MAX));
    worst
}

/// The short cell of these rule results, `(rule, verdict)`, as [`short`].
pub fn short_of<'a>(results: impl IntoIterator<Item = (&'a str, Verdict)>) -> String {
    let worst = worst_by_rule(results);
    let Some(verdict) = worst.iter().map(|(_, v)| *v).max() else {
        return "NJ".into();
    };
    let label = match verdict {
        Verdict::Pass => return "ok".into(),
        Verdict::NotJudged => "NJ",
        Verdict::Fail => "F",
    };
    let codes: Vec<&str> = worst
        .iter()
        .filter(|(_, v)| *v == verdict)
        .map(|(r, _)| code(r))
        .collect();
    format!("{label} {}", codes.join(" "))
}

/// The cell of these rule results, `(rule, verdict)`, as [`cell`]; the racy rules are left out.
pub fn cell_of<'a>(results: impl IntoIterator<Item = (&'a str, Verdict)>) -> String {
    let worst = worst_by_rule(results);
    let group = |verdict: Verdict, label: &str| {
        let codes: Vec<&str> = worst
            .iter()
            .filter(|(_, v)| *v == verdict)
            .map(|(r, _)| code(r))
            .collect();
        (!codes.is_empty()).then(|| format!("{label} {}", codes.join(" ")))
    };
    let parts: Vec<String> = [
        group(Verdict::Fail, "FAIL"),
        group(Verdict::NotJudged, "NJ"),
        group(Verdict::Pass, "PASS"),
    ]
    .into_iter()
    .flatten()
    .collect();
    if parts.is_empty() {
        return "nothing judged".into();
    }
    parts.join("; ")
}

/// The matrix's heading: `| client | single | multi | ... |` and its rule.
pub fn header() -> String {
    let names: Vec<&str> = COLUMNS.iter().map(|(_, h)| *h).collect();
    format!(
        "| client | {} |\n|---|{}",
        names.join(" | "),
        "---|".repeat(names.len())
    )
}

/// A matrix row (docs/matrix.md), `| redis-py 8.1.0 | F mov | ok | ... |`: `short(scenario)` for each column
/// (`None`: not run).
///
/// A row is kept within [`ROW_WIDTH`] columns: while it is wider, the cells with the most codes
/// keep their first and mark the rest with `+` (`NJ rlx+`); the full cells under the matrix
/// name them all.
pub fn row(client: &str, short: impl Fn(&str) -> Option<String>) -> String {
    let mut cells: Vec<String> = COLUMNS
        .iter()
        .map(|(s, _)| short(s).unwrap_or_else(|| "not run".into()))
        .collect();
    let line = |cells: &[String]| format!("| {client} | {} |", cells.join(" | "));
    while line(&cells).chars().count() > ROW_WIDTH {
        // Every cell of the same text at once: a row reads `NJ rlx+` alike in each column.
        let widest = cells
            .iter()
            .filter(|c| c.split(' ').count() > 2)
            .max_by_key(|c| (c.split(' ').count(), c.len()))
            .cloned();
        let Some(widest) = widest else { break };
        let mut words = widest.split(' ');
        let kept = format!(
            "{} {}+",
            words.next().unwrap_or(""),
            words.next().unwrap_or("")
        );
        for cell in cells.iter_mut().filter(|c| **c == widest) {
            cell.clone_from(&kept);
        }
    }
    line(&cells)
}

/// The widest a matrix row may be: a terminal's 80 columns.
pub const ROW_WIDTH: usize = 80;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grading::judge::{Counts, Rule};

    fn grade(rules: Vec<Rule>) -> Grade {
        let mut g = Grade {
            scenario: "t".into(),
            clients: vec![],
            rules,
            verdict: Verdict::NotJudged,
            counts: Counts::default(),
            passed: false,
            nothing_judged: None,
            not_exercised: vec![],
            client_process: None,
        };
        g.settle();
        g
    }

    #[test]
    fn a_row_too_wide_keeps_each_long_cells_first_code() {
        let wide = row("Lettuce 7.0.3", |s| {
            Some(match s {
                "shard-migration" | "failover" | "no-closing-notification" => "NJ rlx rst".into(),
                "oss-cluster" => "NJ smr".into(),
                _ => "ok".into(),
            })
        });
        assert!(wide.chars().count() <= ROW_WIDTH, "{wide}");
        assert_eq!(wide.matches("NJ rlx+ |").count(), 3, "{wide}");
        assert!(wide.contains("NJ smr"), "{wide}");
        let narrow = row("go-redis 9.18.0", |_| Some("NJ rlx rst".into()));
        assert!(narrow.contains("NJ rlx+"), "{narrow}");
        let fits = row("x 1", |s| {
            Some(if s == "failover" { "NJ rlx rst" } else { "ok" }.into())
        });
        assert!(fits.contains("NJ rlx rst"), "{fits}");
    }

    #[test]
    fn a_cell_lists_the_worst_verdict_of_each_rule_in_the_codes_order() {
        let g = grade(vec![
            Rule::decided("opt-in", true, String::new()),
            Rule::decided("survives", true, String::new()),
            Rule::decided("no-lost-commands", false, String::new()),
            Rule::not_judged("no-storm", String::new()),
            Rule::decided("no-storm", true, String::new()),
            Rule::decided("moved-before-close", false, String::new()),
        ]);
        assert_eq!(cell(&g), "FAIL mov; NJ storm; PASS srv opt");
        assert_eq!(short(&g), "F mov");
        assert_eq!(cell(&grade(vec![])), "nothing judged");
        assert_eq!(short(&grade(vec![])), "NJ");
        let nj = grade(vec![
            Rule::decided("survives", true, String::new()),
            Rule::not_judged("relaxed-timeout", String::new()),
            Rule::not_judged("opt-in", String::new()),
        ]);
        assert_eq!(short(&nj), "NJ opt rlx");
        let ok = grade(vec![Rule::decided("survives", true, String::new())]);
        assert_eq!(short(&ok), "ok");
        assert!(!legend().contains("lost"), "{}", legend());
    }
}
