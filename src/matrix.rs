//! The client matrix's cells: one short code per rule, and the cell a grade earns.
//!
//! The README's client matrix (written by the client tier's tests) and `maintwatch certify`'s
//! row for a client are both made here, so that a cell a client author sees in their own CI is
//! spelled exactly as the matrix spells it.

use crate::judge::{Grade, Verdict};

/// Each rule's code in a matrix cell, in the order cells list them, so that a cell fits a narrow
/// column (the README and `certify` print the legend).
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

/// The cell a grade earns: the codes of the rules that failed, were not judged, and passed (each
/// rule's worst verdict over every notification and client), in [`CODES`]' order; `nothing
/// judged` when no rule had a result.
pub fn cell(grade: &Grade) -> String {
    cell_of(grade.all_rules().map(|r| (r.rule.as_str(), r.verdict)))
}

/// The cell of these rule results, `(rule, verdict)`, as [`cell`]; the racy rules are left out.
pub fn cell_of<'a>(results: impl IntoIterator<Item = (&'a str, Verdict)>) -> String {
    let mut worst: Vec<(&str, Verdict)> = Vec::new();
    for (rule, verdict) in results.into_iter().filter(|(r, _)| !RACY_RULES.contains(r)) {
        match worst.iter_mut().find(|(r, _)| *r == rule) {
            // The verdicts are ordered pass < not judged < fail: the larger is the worse.
            Some(e) => e.1 = e.1.max(verdict),
            None => worst.push((rule, verdict)),
        }
    }
    worst.sort_by_key(|(r, _)| CODES.iter().position(|(c, _)| c == r).unwrap_or(usize::MAX));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::{Counts, Rule};

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
        assert_eq!(cell(&grade(vec![])), "nothing judged");
        assert!(!legend().contains("lost"), "{}", legend());
    }
}
