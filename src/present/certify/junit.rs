//! `certify --junit`: the rule results of every scenario played as tests ([`Case`]), written as
//! the JUnit XML a CI system shows test by test, and the file of a client that could not be
//! started.

use std::fmt::Write as _;

use crate::grading::judge::{ClientProcess, Grade, Verdict};
use crate::present::certify::played::{played, Outcome};

/// One rule result as a test: `moved-before-close / MOVING seq 0`.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    pub name: String,
    pub verdict: Verdict,
    pub reason: String,
}

/// A grade's rule results as tests: the run-level rules under their own names, then each
/// notification's rules as `rule / notification` (with the client's name when the grade has
/// several clients). A grade with no result at all is one NOT JUDGED case saying why.
pub fn cases(g: &Grade) -> Vec<Case> {
    let mut out: Vec<Case> = g
        .rules
        .iter()
        .map(|r| Case {
            name: r.rule.clone(),
            verdict: r.verdict,
            reason: r.detail.clone(),
        })
        .collect();
    let several = g.clients.len() > 1;
    for c in &g.clients {
        for n in &c.notifications {
            for r in &n.rules {
                let mut name = format!("{} / {}", r.rule, n.notification);
                if several {
                    let _ = write!(name, " ({})", c.client);
                }
                out.push(Case {
                    name,
                    verdict: r.verdict,
                    reason: r.detail.clone(),
                });
            }
        }
    }
    if out.is_empty() {
        out.push(Case {
            name: "grade".into(),
            verdict: Verdict::NotJudged,
            reason: g
                .nothing_judged
                .clone()
                .unwrap_or_else(|| "no rule had anything to judge".into()),
        });
    }
    out
}

/// The JUnit XML report: one `<testsuite>` per scenario, one `<testcase>` per [`Case`], FAIL as
/// `<failure>`, NOT JUDGED as `<skipped>`, and how the client process ended in `<system-err>`.
/// Every text is escaped: rule reasons quote what the server and the client sent.
pub fn junit(outcomes: &[Outcome]) -> String {
    let suites: Vec<(Vec<Case>, &Outcome)> =
        outcomes.iter().map(|o| (cases(&o.grade), o)).collect();
    let count = |v: Verdict| -> usize {
        suites
            .iter()
            .map(|(cs, _)| cs.iter().filter(|c| c.verdict == v).count())
            .sum()
    };
    let tests: usize = suites.iter().map(|(cs, _)| cs.len()).sum();
    let time: f64 = outcomes.iter().map(|o| o.seconds).sum();
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        x,
        "<testsuites name=\"maintwatch certify\" tests=\"{tests}\" failures=\"{}\" errors=\"0\" \
         skipped=\"{}\" time=\"{time:.3}\">",
        count(Verdict::Fail),
        count(Verdict::NotJudged)
    );
    for (cs, o) in &suites {
        suite(&mut x, o, cs);
    }
    x.push_str("</testsuites>\n");
    x
}

fn suite(x: &mut String, o: &Outcome, cases: &[Case]) {
    let n = |v: Verdict| cases.iter().filter(|c| c.verdict == v).count();
    let _ = writeln!(
        x,
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\" \
         time=\"{:.3}\">",
        xml(&played(o)),
        cases.len(),
        n(Verdict::Fail),
        n(Verdict::NotJudged),
        o.seconds
    );
    let class = xml(&format!("maintwatch.{}", o.scenario));
    let run = o
        .run
        .map_or(String::new(), |(k, n)| format!(" (run {k}/{n})"));
    for c in cases {
        let open = format!(
            "    <testcase name=\"{}{run}\" classname=\"{class}\"",
            xml(&c.name)
        );
        let reason = xml(&c.reason);
        match c.verdict {
            Verdict::Pass => {
                let _ = writeln!(x, "{open}/>");
            }
            Verdict::Fail => {
                let _ = writeln!(
                    x,
                    "{open}>\n      <failure message=\"{reason}\" type=\"FAIL\">{reason}</failure>\n    </testcase>"
                );
            }
            Verdict::NotJudged => {
                let _ = writeln!(
                    x,
                    "{open}>\n      <skipped message=\"{reason}\"/>\n    </testcase>"
                );
            }
        }
    }
    if let Some(p) = &o.grade.client_process {
        let _ = writeln!(x, "    <system-err>{}</system-err>", xml(&process_text(p)));
    }
    x.push_str("  </testsuite>\n");
}

/// The JUnit file of a client that could not be started: one case, in error.
pub fn junit_not_started(why: &str) -> String {
    let why = xml(why);
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <testsuites name=\"maintwatch certify\" tests=\"1\" failures=\"0\" errors=\"1\" \
         skipped=\"0\" time=\"0.000\">\n\
         \x20 <testsuite name=\"client\" tests=\"1\" failures=\"0\" errors=\"1\" skipped=\"0\" \
         time=\"0.000\">\n\
         \x20   <testcase name=\"client-started\" classname=\"maintwatch.client\">\n\
         \x20     <error message=\"{why}\">{why}</error>\n\
         \x20   </testcase>\n\
         \x20 </testsuite>\n\
         </testsuites>\n"
    )
}

/// How the client process ended, in lines: how, when, its stderr's last lines, its output file.
fn process_text(p: &ClientProcess) -> String {
    let how = p.how_it_ended();
    let mut out = format!("client process {} {how} at +{} s\n", p.program, p.at);
    for l in &p.stderr_tail {
        let _ = writeln!(out, "stderr| {l}");
    }
    if let Some(f) = &p.output_file {
        let _ = writeln!(out, "its stdout and stderr are in {f}");
    }
    out
}

/// Text as XML 1.0 character data or an attribute value: the five markup characters as
/// entities, line breaks and tabs as character references (an attribute keeps them so), and a
/// character XML 1.0 cannot carry at all (most C0 controls, U+FFFE, U+FFFF) as `\u{..}` text.
pub fn xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            '\t' => out.push_str("&#9;"),
            c if allowed_in_xml(c) => out.push(c),
            c => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
        }
    }
    out
}

/// XML 1.0's `Char` production, less the whitespace handled by [`xml`].
fn allowed_in_xml(c: char) -> bool {
    matches!(u32::from(c), 0x20..=0xD7FF | 0xE000..=0xFFFD | 0x10000..=0x10FFFF)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_escapes_markup_and_drops_what_xml_cannot_carry() {
        assert_eq!(
            xml("a<b>&\"c'\u{1}\u{fffe}\n"),
            "a&lt;b&gt;&amp;&quot;c&apos;\\u{1}\\u{fffe}&#10;"
        );
        assert_eq!(xml("é ✓"), "é ✓");
    }
}
