//! `doctor`'s diagnosis for people: the screen, wrapped at the terminal's width, probe's one
//! line for a failure doctor stopped at (on the screen and in the JSON), and the spinner shown
//! while it waits on the server. The diagnosis itself is `grading::doctor`.

use std::fmt;
use std::time::Duration;

use serde::{Serialize, Serializer};

use crate::grading::doctor::diagnosis::{Answer, ClientRow, ClusterCheck, Diagnosis, Stopped};
use crate::network::conn::HelloInfo;
use crate::shared::escape::sanitize;

/// The failure doctor stopped at, as probe's one line for it.
impl fmt::Display for Stopped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let line = super::probe_table::note_line(&self.endpoint, &self.outcome);
        f.write_str(&line)
    }
}

/// In the JSON as on the screen: the one line.
impl Serialize for Stopped {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

/// The whole diagnosis, each client's version history included (`--clients all`).
impl fmt::Display for Diagnosis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Text(self, true).fmt(f)
    }
}

/// The diagnosis for people; the version history only when asked for (`.1`): it does not bear
/// on the usual answers (a server that refuses the opt-in), and it was 90 of 146 lines.
struct Text<'a>(&'a Diagnosis, bool);

impl fmt::Display for Text<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Text(d, all_versions) = *self;
        if let Some(line) = &d.stopped {
            writeln!(f, "{line}")?;
            writeln!(
                f,
                "doctor stopped there: every other check needs a connection that gets past it"
            )?;
            return write!(f, "exit code {}", d.exit_code);
        }
        write_server(d, f)?;
        write_clients(d, f, all_versions)?;
        write_rest(d, f)
    }
}

fn write_server(d: &Diagnosis, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let s = |t: &str| sanitize(t).into_owned();
    let address = d.address.as_deref().unwrap_or("-");
    writeln!(
        f,
        "endpoint {} ({address}{})",
        s(&d.endpoint),
        if d.tls { ", TLS" } else { "" }
    )?;
    writeln!(f, "server")?;
    let hello = d
        .server
        .hello
        .as_ref()
        .map(HelloInfo::describe)
        .unwrap_or_default();
    let resp3 = match d.server.resp3 {
        Some(true) => format!("yes ({})", s(&hello)),
        Some(false) => "no".into(),
        None => "unknown (no answer)".into(),
    };
    writeln!(f, "  RESP3 (HELLO 3)   {resp3}")?;
    writeln!(f, "  opt-in            {}", line(&d.server.opt_in))?;
    let first = line(&d.server.opt_in);
    let types = &d.server.endpoint_types;
    if !types.is_empty() && types.iter().all(|a| line(a) == first) {
        // One answer to every type: said once, not five times over.
        return writeln!(f, "    the same answer to every moving-endpoint-type");
    }
    for a in types {
        let t = a.endpoint_type.map_or("bare ON".into(), |t| t.to_string());
        writeln!(f, "    {t:<15} {}", line(a))?;
    }
    Ok(())
}

fn write_clients(d: &Diagnosis, f: &mut fmt::Formatter<'_>, all_versions: bool) -> fmt::Result {
    writeln!(
        f,
        "clients (would it opt in by default / its auto type / the server's answer)"
    )?;
    for c in &d.clients {
        let auto = c
            .auto_type
            .map_or("not established".into(), |t| t.to_string());
        let cost = if c.errorstats_cost.is_empty() {
            String::new()
        } else {
            format!(", costs {} per connection", counters(&c.errorstats_cost))
        };
        writeln!(
            f,
            "  {:<27} {} / {auto} / {}{cost}",
            format!("{} {}", c.client, c.version),
            yes_no(c.opts_in_by_default),
            c.server_answer.map_or("-".into(), |a| a.replace('_', " ")),
        )?;
    }
    if all_versions {
        return versions(f, &d.clients);
    }
    writeln!(
        f,
        "client versions: the releases that changed what each does, and what the client tier \
         measured: doctor --clients all"
    )
}

fn write_rest(d: &Diagnosis, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let s = |t: &str| sanitize(t).into_owned();
    match &d.errorstats.error {
        Some(e) => writeln!(f, "errorstats: not measured: {}", s(e))?,
        None => writeln!(
            f,
            "errorstats: one handshake raised {}",
            counters(&d.errorstats.delta)
        )?,
    }
    if let Some(a) = &d.azure {
        let detail = a
            .detail
            .as_deref()
            .map(|d| format!(" ({})", s(d)))
            .unwrap_or_default();
        writeln!(
            f,
            "azure: SUBSCRIBE {} {}{detail}",
            crate::protocol::azure::CHANNEL,
            a.subscribe.replace('_', " ")
        )?;
        writeln!(f, "  listens by default: {}", a.listening.join("; "))?;
        writeln!(f, "  note: {}", a.note)?;
    }
    if let Some(c) = &d.cluster {
        writeln!(f, "cluster: {}", cluster_line(c))?;
    }
    for c in &d.caveats {
        writeln!(f, "caveat: {c}")?;
    }
    write!(f, "exit code {}", d.exit_code)
}

/// `client versions`: each client's releases that changed what it does, then what the client
/// tier measured in which releases.
fn versions(f: &mut fmt::Formatter<'_>, clients: &[ClientRow]) -> fmt::Result {
    writeln!(
        f,
        "client versions (the releases that changed what it does, and what the client tier measured)"
    )?;
    for c in clients {
        let since: Vec<String> = c
            .since
            .iter()
            .map(|(v, what)| format!("{v} {what}"))
            .collect();
        writeln!(f, "  {:<19} {}", c.client, since.join("; "))?;
        for m in c.measured {
            writeln!(
                f,
                "  {:<19} measured in {}: {} ({})",
                "",
                m.range(),
                m.what,
                m.run
            )?;
        }
    }
    Ok(())
}

fn cluster_line(c: &ClusterCheck) -> String {
    match (&c.health, &c.error) {
        (Some(h), _) => {
            let mut text = format!("{} masters, {} replicas", h.masters, h.replicas);
            if !h.failed.is_empty() {
                text.push_str(&format!("; marked fail: {}", h.failed.join(", ")));
            }
            if h.unserved_slots > 0 {
                text.push_str(&format!(
                    "; {} slots served by no live master",
                    h.unserved_slots
                ));
            }
            text
        }
        (None, Some(e)) => format!("not read: {}", sanitize(e)),
        (None, None) => "not read".into(),
    }
}

fn yes_no(b: Option<bool>) -> &'static str {
    match b {
        Some(true) => "yes",
        Some(false) => "no",
        None => "not established",
    }
}

fn counters(list: &[(String, u64)]) -> String {
    if list.is_empty() {
        return "none".into();
    }
    list.iter()
        .map(|(n, c)| format!("errorstat_{n} +{c}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn line(a: &Answer) -> String {
    let outcome = a.outcome.replace('_', " ");
    match &a.detail {
        Some(d) => format!("{outcome}: {}", sanitize(d)),
        None => outcome,
    }
}

/// The diagnosis at the terminal's width: each line wrapped between words, continued 2 spaces
/// deeper than its own indent (a caveat quotes long facts); the version history if asked for
/// (`.2`).
pub struct Wrapped<'a>(pub &'a Diagnosis, pub usize, pub bool);

impl fmt::Display for Wrapped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = Text(self.0, self.2).to_string();
        let mut first = true;
        for line in text.lines() {
            let indent = line.len() - line.trim_start().len();
            let more = " ".repeat(indent + 2);
            for part in super::human::wrap_with(line, self.1, &more) {
                if !first {
                    writeln!(f)?;
                }
                first = false;
                write!(f, "{part}")?;
            }
        }
        Ok(())
    }
}

/// A spinner on stderr while doctor waits on the server (a TLS handshake that is never answered
/// takes the whole --connect-timeout), naming the check under way; nothing off a terminal.
pub struct Progress(Option<indicatif::ProgressBar>);

impl Progress {
    /// On stderr when it is a terminal, else silent.
    pub fn on_stderr(endpoint: &str) -> Progress {
        use std::io::IsTerminal;
        if !std::io::stderr().is_terminal() {
            return Progress(None);
        }
        let bar =
            indicatif::ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::stderr());
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{spinner} doctor: asking {prefix}: {msg} ({elapsed})",
        ) {
            bar.set_style(style);
        }
        bar.set_prefix(sanitize(endpoint).into_owned());
        bar.enable_steady_tick(Duration::from_millis(200));
        Progress(Some(bar))
    }

    /// Silent: for tests and JSON pipes.
    pub fn none() -> Progress {
        Progress(None)
    }

    /// Names the check under way.
    pub fn step(&self, what: &str) {
        if let Some(bar) = &self.0 {
            bar.set_message(what.to_string());
        }
    }

    /// Takes the spinner off the screen.
    pub fn clear(&self) {
        if let Some(bar) = &self.0 {
            bar.finish_and_clear();
        }
    }
}
