//! The judge's answer: per client and per notification, each rule's result with its reason,
//! and a verdict per connection in the words shared by the grade, `pcap` and the watch's summary.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::observe::evidence::process::ClientProcess;
use crate::shared::escape::sanitize;

/// A rule's result: what the evidence showed, or that the evidence needed was missing.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The evidence shows the rule held.
    Pass,
    /// The evidence needed is missing; the reason names it and how to get it.
    NotJudged,
    /// The evidence shows the rule did not hold.
    Fail,
}

impl Verdict {
    /// `PASS`, `FAIL`, `NOT JUDGED`: the words of the table, the matrix and the report.
    pub fn words(self) -> &'static str {
        match self {
            Verdict::Pass => "PASS",
            Verdict::Fail => "FAIL",
            Verdict::NotJudged => "NOT JUDGED",
        }
    }

    /// The exit code of a grading command for a grade with this overall verdict.
    pub fn exit_code(self) -> i32 {
        match self {
            Verdict::Pass => crate::exit::SUCCESS,
            Verdict::Fail => crate::exit::FAILURE,
            Verdict::NotJudged => crate::exit::NOT_JUDGED,
        }
    }
}

/// A rule the run never put to the test, and why.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NotExercised {
    pub rule: String,
    pub why: String,
}

/// How many rule results of each verdict a grade holds.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Counts {
    pub pass: usize,
    pub fail: usize,
    pub not_judged: usize,
}

/// The whole grade.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Grade {
    /// What was graded: the scenario's name, or the capture's files.
    pub scenario: String,
    pub clients: Vec<ClientGrade>,
    /// Rules about the whole run rather than one notification (`survives`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<Rule>,
    /// `fail` when a rule failed; else `not_judged` when a rule was not judged or nothing was;
    /// else `pass`.
    pub verdict: Verdict,
    pub counts: Counts,
    /// True only when the verdict is `pass`.
    pub passed: bool,
    /// Why nothing was judged, when nothing was (the client never connected, say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nothing_judged: Option<String>,
    /// Rules the run never put to the test (no stall, so no timeout to relax), with why: they
    /// have no result at all, neither pass nor NOT JUDGED.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_exercised: Vec<NotExercised>,
    /// The client's own process, when maintwatch started it: a fact, not a rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_process: Option<ClientProcess>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ClientGrade {
    /// `lib-name/lib-ver`, the connection name, or the source host.
    pub client: String,
    pub connections: usize,
    /// How it reached the server: `by name NAME`, `by address`, `unknown`, or a mix.
    pub reached: String,
    /// Connections that opted in, by the endpoint type asked for (`default` for a bare ON).
    pub opted_in: BTreeMap<String, usize>,
    /// Connections whose handshake was seen and never asked to opt in.
    pub never_opted_in: usize,
    /// Connections that asked to opt in and were refused by the server.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub refused_opt_in: usize,
    /// Connections whose handshake was not observed.
    #[serde(default)]
    pub handshake_unknown: usize,
    pub commands: u64,
    pub errors: u64,
    pub notifications: Vec<NotificationGrade>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NotificationGrade {
    /// e.g. `MOVING seq 0`.
    pub notification: String,
    /// When it was pushed (the observer's clock), and its declared window (seconds).
    pub at: f64,
    pub window: f64,
    /// Connections of this client it was written to.
    pub received: usize,
    pub commands_inside: u64,
    pub commands_outside: u64,
    /// Error replies plus commands cut without a reply.
    pub failed_inside: u64,
    pub failed_outside: u64,
    /// MOVING only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moving: Option<MovingGrade>,
    pub rules: Vec<Rule>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MovingGrade {
    /// Seconds after the MOVING of the first connection to an address that is not retiring.
    pub first_new_connection: Option<f64>,
    /// Seconds after the MOVING the server closed the retiring proxy.
    pub close: Option<f64>,
    /// Connections still on the retiring proxy at the close.
    pub cut: usize,
    /// Commands to the retiring proxy after the window ended.
    pub commands_to_old_after_window: u64,
    /// New connections after the MOVING, per connection the client had open at its peak.
    pub reconnects_per_connection: f64,
    /// Connections that received a re-sent copy (they were opened after it was first pushed),
    /// and of those, opened after the client first acted on it and closed by the client before
    /// the close: acting on the same event again.
    pub resent: usize,
    pub reacted_to_resent: usize,
    /// Whether anything but a retiring address was offered to the client before the close.
    pub alternative_offered: bool,
    /// When nothing was: the time (seconds after the notification) from which what DNS named
    /// was not seen, a capture's last answer having gone stale before the close with no query
    /// after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dns_unseen_from: Option<f64>,
    /// What the client could know, in words: how it connected, the target, what DNS answered.
    pub known: Vec<String>,
    /// One verdict per connection that received it.
    pub verdicts: Vec<ConnVerdict>,
}

/// What one connection did after its notification.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ConnVerdict {
    pub conn: u64,
    /// `moved`, `recycled`, `stayed`, `cut`, `closed`, `open`.
    pub verdict: String,
    /// One sentence; its offsets say which notification they are measured from.
    pub text: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Rule {
    pub rule: String,
    pub verdict: Verdict,
    /// True only for [`Verdict::Pass`] (kept for readers of the first schema).
    pub held: bool,
    /// The reason, one sentence: for NOT JUDGED, what is missing and how to get it.
    pub detail: String,
}

impl Rule {
    pub fn new(name: &str, verdict: Verdict, detail: String) -> Rule {
        Rule {
            rule: name.into(),
            verdict,
            held: verdict == Verdict::Pass,
            detail,
        }
    }

    /// PASS when `held`, else FAIL.
    pub fn decided(name: &str, held: bool, detail: String) -> Rule {
        let v = if held { Verdict::Pass } else { Verdict::Fail };
        Rule::new(name, v, detail)
    }

    pub fn not_judged(name: &str, detail: String) -> Rule {
        Rule::new(name, Verdict::NotJudged, detail)
    }
}

impl Grade {
    /// Every rule result, run-wide ones first.
    pub fn all_rules(&self) -> impl Iterator<Item = &Rule> {
        self.rules.iter().chain(
            self.clients
                .iter()
                .flat_map(|c| c.notifications.iter().flat_map(|n| n.rules.iter())),
        )
    }

    /// Sets the verdict, the counts and `passed` from the rules.
    pub fn settle(&mut self) {
        let mut counts = Counts::default();
        for r in self.all_rules() {
            match r.verdict {
                Verdict::Pass => counts.pass += 1,
                Verdict::Fail => counts.fail += 1,
                Verdict::NotJudged => counts.not_judged += 1,
            }
        }
        self.verdict = if counts.fail > 0 {
            Verdict::Fail
        } else if counts.not_judged > 0 || counts.pass == 0 {
            Verdict::NotJudged
        } else {
            Verdict::Pass
        };
        self.counts = counts;
        self.passed = self.verdict == Verdict::Pass;
    }

    /// The last line of the table: the verdict in words, with the counts.
    pub fn verdict_line(&self) -> String {
        let c = self.counts;
        let counts = format!(
            "{} passed, {} failed, {} not judged",
            c.pass, c.fail, c.not_judged
        );
        match self.verdict {
            Verdict::Fail => format!("grade: a rule failed ({counts})"),
            Verdict::Pass => format!("grade: every rule held ({counts})"),
            Verdict::NotJudged if c.pass + c.fail + c.not_judged == 0 => format!(
                "grade: nothing was judged: {}",
                self.nothing_judged
                    .as_deref()
                    .unwrap_or("no rule had anything to judge")
            ),
            Verdict::NotJudged => {
                format!("grade: no rule failed, but not every rule was judged ({counts})")
            }
        }
    }
}

impl Grade {
    /// The table printed at the end of `simulate --grade`, `pcap --grade` and `replay --grade`.
    pub fn table(&self) -> String {
        let mut out = format!("grade: {}\n", sanitize(&self.scenario));
        if let Some(p) = &self.client_process {
            out.push_str(&process_lines(p));
        }
        for r in &self.rules {
            rule_line(&mut out, r);
        }
        for c in &self.clients {
            client_table(&mut out, c);
        }
        not_exercised_lines(&mut out, &self.not_exercised);
        let _ = writeln!(out, "{}", sanitize(&self.verdict_line()));
        out
    }
}

/// `not exercised: relaxed-timeout, timeout-restored (why)`, one line per reason.
fn not_exercised_lines(out: &mut String, rules: &[NotExercised]) {
    let mut whys: Vec<&str> = rules.iter().map(|r| r.why.as_str()).collect();
    whys.dedup();
    for why in whys {
        let names: Vec<&str> = rules
            .iter()
            .filter(|r| r.why == why)
            .map(|r| r.rule.as_str())
            .collect();
        let _ = writeln!(
            out,
            "not exercised: {} ({})",
            names.join(", "),
            sanitize(why)
        );
    }
}

fn client_table(out: &mut String, c: &ClientGrade) {
    let how: Vec<String> = c.opted_in.iter().map(|(t, n)| format!("{n} {t}")).collect();
    let refused = if c.refused_opt_in > 0 {
        format!(", refused by the server: {}", c.refused_opt_in)
    } else {
        String::new()
    };
    let unknown = if c.handshake_unknown > 0 {
        format!(", handshake not seen: {}", c.handshake_unknown)
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "client {}: {} connection(s) ({}), opted in: {}, never opted in: {}{refused}{unknown}, {} command(s), {} error(s)",
        sanitize(&c.client),
        c.connections,
        sanitize(&c.reached),
        if how.is_empty() { "none".into() } else { sanitize(&how.join(", ")).into_owned() },
        c.never_opted_in,
        c.commands,
        c.errors
    );
    for n in &c.notifications {
        let _ = writeln!(
            out,
            "  {} at +{} s (window {} s): received by {}, commands {} inside / {} outside, failed {} inside / {} outside",
            n.notification, n.at, n.window, n.received, n.commands_inside,
            n.commands_outside, n.failed_inside, n.failed_outside
        );
        if let Some(m) = &n.moving {
            let first = m
                .first_new_connection
                .map_or("never".to_string(), |t| format!("+{t} s"));
            let _ = writeln!(
                out,
                "    first connection to another address {first}, cut at the close {}, commands to the old proxy after the window {}, reconnects per connection {}, re-sent {} (acted on {})",
                m.cut, m.commands_to_old_after_window, m.reconnects_per_connection,
                m.resent, m.reacted_to_resent
            );
            for k in &m.known {
                let _ = writeln!(out, "    {}", sanitize(k));
            }
            for v in &m.verdicts {
                let _ = writeln!(out, "    conn {}: {}", v.conn, sanitize(&v.text));
            }
        }
        for r in &n.rules {
            rule_line(out, r);
        }
    }
}

/// `    PASS relaxed-timeout      reason`: verdicts padded to one width so the names align.
fn rule_line(out: &mut String, r: &Rule) {
    let _ = writeln!(
        out,
        "    {:<10} {:<19} {}",
        r.verdict.words(),
        r.rule,
        sanitize(&r.detail)
    );
}

/// How the client process ended, then the last lines of its stderr and where its output is:
/// a client that died on a notification did not "move", it crashed, and the table says so
/// before the rules.
fn process_lines(p: &ClientProcess) -> String {
    let how = p.how_it_ended();
    let why = crate::observe::evidence::process::headline(&p.stderr_tail)
        .map_or(String::new(), |l| format!(": {}", sanitize(l)));
    let mut out = format!(
        "client process {} {how} at +{} s{why}\n",
        sanitize(&p.program),
        p.at
    );
    for l in &p.stderr_tail {
        let _ = writeln!(out, "  stderr| {}", sanitize(l));
    }
    if let Some(f) = &p.output_file {
        let _ = writeln!(out, "  its stdout and stderr are in {}", sanitize(f));
    }
    out
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Clients as `client_of` names them, for a sentence: one that names itself by neither
/// `CLIENT SETINFO` nor a connection name is called by its host as such.
pub fn clients_in_words<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let words: Vec<String> = names
        .map(|n| match n.parse::<std::net::IpAddr>() {
            Ok(ip) => format!("a client that does not name itself ({ip})"),
            Err(_) => n.to_string(),
        })
        .collect();
    words.join(", ")
}
