//! The client matrix's cells: one short code per rule, and the cell a grade earns.
//!
//! The client matrix of docs/matrix.md (written by the client tier's tests) and `maintwatch certify`'s
//! row for a client are both made here, so that a cell a client author sees in their own CI is
//! spelled exactly as the matrix spells it.

use crate::grading::judge::{Grade, Verdict};

/// Each rule's code in a matrix cell, in the order cells list them, so that a cell fits a narrow
/// column (docs/matrix.md and `certify` print the legend).
pub const CODES: [(&str, &str); 11] = [
    ("survives", "srv"),
    ("keeps-working", "kw"),
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

/// The matrix's first table, in order: the kinds of maintenance and the cluster move, each with
/// the short heading that keeps a row within 80 columns. [`MORE_COLUMNS`] is the page's second
/// table, so that docs/matrix.md shows every scenario certify plays by default; certify prints a
/// cell for every scenario it plays.
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

/// The matrix's second table: the rest of certify's default scenarios (the edges a server may
/// show: an IPv6 target, a named one, DNS that widens unannounced, an opt-in lost, one refused)
/// and the cluster's second move.
pub const MORE_COLUMNS: [(&str, &str); 6] = [
    ("ipv6-target", "ipv6"),
    ("explicit-target", "explicit"),
    ("silent-widening", "widen"),
    ("optin-lost", "optlost"),
    ("refusing", "refuse"),
    ("cascading-smigrated", "cascade"),
];

/// The short cell of a shape a client version does not have (no cluster support before its
/// release): nothing to judge, and not a NOT JUDGED either.
pub const NOT_APPLICABLE: &str = "n/a";

/// The cell of a scenario a row's run did not play (an older release measured before the
/// matrix had that column).
pub const NOT_RUN: &str = "-";

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

/// The words of a full cell's verdicts, as [`cell_of`] writes them.
const CELL_WORDS: [(&str, Verdict); 3] = [
    ("FAIL", Verdict::Fail),
    ("NJ", Verdict::NotJudged),
    ("PASS", Verdict::Pass),
];

/// A full cell read back (`FAIL loop; PASS srv opt`): each code with its verdict, in the cell's
/// order; `nothing judged` has none.
pub fn verdicts_in(full: &str) -> Vec<(String, Verdict)> {
    let mut out = Vec::new();
    for part in full.split("; ") {
        let mut words = part.split(' ');
        let label = words.next().unwrap_or_default();
        let Some((_, verdict)) = CELL_WORDS.iter().find(|(w, _)| *w == label) else {
            continue;
        };
        out.extend(words.map(|code| (code.to_string(), *verdict)));
    }
    out
}

/// The short cell over several runs of one scenario, from each run's full cell: the worst
/// verdict any run gave, then each code that came to it: first those of every run, then the
/// others with in how many runs (`F loop mov 1/20`: `loop` failed in every run, `mov` in 1 of
/// 20). One run, or runs that all agree, give [`short`]'s cell.
pub fn short_over(fulls: &[String]) -> String {
    let runs: Vec<Vec<(String, Verdict)>> = fulls.iter().map(|f| verdicts_in(f)).collect();
    let Some(worst) = runs.iter().flatten().map(|(_, v)| *v).max() else {
        return "NJ".into();
    };
    let label = match worst {
        Verdict::Pass => return "ok".into(),
        Verdict::NotJudged => "NJ",
        Verdict::Fail => "F",
    };
    let mut codes: Vec<(&str, usize)> = Vec::new();
    for run in &runs {
        for (code, _) in run.iter().filter(|(_, v)| *v == worst) {
            match codes.iter_mut().find(|(c, _)| c == code) {
                Some(e) => e.1 += 1,
                None => codes.push((code, 1)),
            }
        }
    }
    // The codes of every run first, then those of some, each in the codes' order.
    let n = runs.len();
    codes.sort_by_key(|(c, k)| (*k < n, CODES.iter().position(|(_, x)| x == c)));
    let words: Vec<String> = codes
        .iter()
        .map(|(c, k)| match *k == n {
            true => c.to_string(),
            false => format!("{c} {k}/{n}"),
        })
        .collect();
    format!("{label} {}", words.join(" "))
}

/// Between the variants of a cell over several runs.
const VARIANTS: &str = " or ";

/// The full cell over several runs of one scenario: each distinct full cell with how many runs
/// gave it, the most frequent first (`FAIL loop; PASS srv opt mov storm (19/20) or FAIL mov
/// loop; PASS srv opt storm (1/20)`); the cell alone when every run gave it.
pub fn cell_over(fulls: &[String]) -> String {
    let mut variants: Vec<(&str, usize)> = Vec::new();
    for full in fulls {
        match variants.iter_mut().find(|(f, _)| f == full) {
            Some(e) => e.1 += 1,
            None => variants.push((full, 1)),
        }
    }
    if let [(only, _)] = variants[..] {
        return only.to_string();
    }
    // Stable: among equals, the first seen first.
    variants.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
    variants
        .iter()
        .map(|(f, n)| format!("{f} ({n}/{})", fulls.len()))
        .collect::<Vec<_>>()
        .join(VARIANTS)
}

/// A cell over runs read back ([`cell_over`]): each full cell seen with how many runs gave it;
/// a cell of one run, or of runs that all agreed, is one variant of one run.
pub fn variants_of(cell: &str) -> Vec<(String, usize)> {
    cell.split(VARIANTS)
        .map(|v| {
            let counted = v.rsplit_once(" (").and_then(|(full, count)| {
                let (k, _) = count.strip_suffix(')')?.split_once('/')?;
                Some((full.to_string(), k.parse().ok()?))
            });
            counted.unwrap_or_else(|| (v.to_string(), 1))
        })
        .collect()
}

/// The short cell of a full cell over runs ([`cell_over`]'s text): what [`short_over`] gave.
pub fn short_of_cell(cell: &str) -> String {
    let fulls: Vec<String> = variants_of(cell)
        .into_iter()
        .flat_map(|(full, n)| std::iter::repeat_n(full, n))
        .collect();
    short_over(&fulls)
}

/// A matrix table's heading: `| client | single | multi | ... |` and its rule.
pub fn header(columns: &[(&str, &str)]) -> String {
    let names: Vec<&str> = columns.iter().map(|(_, h)| *h).collect();
    format!(
        "| client | {} |\n|---|{}",
        names.join(" | "),
        "---|".repeat(names.len())
    )
}

/// A matrix row (docs/matrix.md), `| redis-py 8.1.0 | F mov | ok | ... |`: `short(scenario)` for
/// each of `columns` (`None`: not run).
///
/// A row is kept within [`ROW_WIDTH`] columns: while it is wider, the cells with the most codes
/// keep their first and mark the rest with `+` (`NJ rlx+`); the full cells under the matrix
/// name them all.
pub fn row(
    client: &str,
    columns: &[(&str, &str)],
    short: impl Fn(&str) -> Option<String>,
) -> String {
    let mut cells: Vec<String> = columns
        .iter()
        .map(|(s, _)| short(s).unwrap_or_else(|| NOT_RUN.into()))
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
    fn cells_over_runs_count_what_varied_and_agree_with_one_run() {
        let runs = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let steady = "FAIL loop; PASS srv opt mov storm";
        let other = "FAIL mov loop; PASS srv opt storm";
        let mut twenty = vec![steady; 19];
        twenty.insert(3, other);
        let twenty = runs(&twenty);
        assert_eq!(short_over(&twenty), "F loop mov 1/20");
        let over = cell_over(&twenty);
        assert_eq!(over, format!("{steady} (19/20) or {other} (1/20)"));
        assert_eq!(
            variants_of(&over),
            vec![(steady.to_string(), 19), (other.to_string(), 1)]
        );
        assert_eq!(short_of_cell(&over), "F loop mov 1/20");
        // One run, or runs that all agree: the single run's cells, read back as one variant.
        let g = grade(vec![
            Rule::decided("moved-before-close", false, String::new()),
            Rule::decided("survives", true, String::new()),
            Rule::not_judged("relaxed-timeout", String::new()),
        ]);
        assert_eq!(short_over(&runs(&[&cell(&g)])), short(&g));
        assert_eq!(short_over(&runs(&[&cell(&g), &cell(&g)])), short(&g));
        assert_eq!(cell_over(&runs(&[steady, steady])), steady);
        assert_eq!(variants_of(steady), vec![(steady.to_string(), 1)]);
        assert_eq!(short_of_cell(steady), "F loop");
        // Ok in most runs, a failure in one; nothing judged at all.
        let ok = "PASS srv opt";
        assert_eq!(
            short_over(&runs(&[ok, ok, "FAIL rlx; PASS srv opt"])),
            "F rlx 1/3"
        );
        assert_eq!(short_over(&runs(&[ok, ok])), "ok");
        assert_eq!(short_over(&runs(&["nothing judged"])), "NJ");
        assert_eq!(verdicts_in("nothing judged"), vec![]);
    }

    #[test]
    fn a_row_too_wide_keeps_each_long_cells_first_code() {
        let wide = row("Lettuce 7.0.3", &COLUMNS, |s| {
            Some(match s {
                "shard-migration" | "failover" | "no-closing-notification" => "NJ rlx rst".into(),
                "oss-cluster" => "NJ smr".into(),
                _ => "ok".into(),
            })
        });
        assert!(wide.chars().count() <= ROW_WIDTH, "{wide}");
        assert_eq!(wide.matches("NJ rlx+ |").count(), 3, "{wide}");
        assert!(wide.contains("NJ smr"), "{wide}");
        let narrow = row("go-redis 9.18.0", &COLUMNS, |_| Some("NJ rlx rst".into()));
        assert!(narrow.contains("NJ rlx+"), "{narrow}");
        let fits = row("x 1", &COLUMNS, |s| {
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
