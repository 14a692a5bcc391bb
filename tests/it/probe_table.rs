//! The probe table as a person sees it, against five real endpoints on loopback: the simulator
//! (accepted), a redis-server with `requirepass` given a wrong password, a closed port, a plain
//! redis-server (the opt-in refused) and that same server asked for TLS (no TLS there: the
//! handshake times out). At 80 and 200 columns, every endpoint's line says what to do and the
//! notes under the table carry the whole texts, wrapped between words.
//!
//! Read twice: through `run_with` with a terminal layout of that width, and in tmux (80x24,
//! 200x50) from the pane itself. The redis-server parts need `MAINTWATCH_REDIS_SERVER`, the
//! pane `tmux` (`MAINTWATCH_TMUX` or on PATH); without them each prints a SKIP line.

use crate::common;

use std::time::Duration;

use clap::Parser;
use maintwatch::cli::probe::ProbeArgs;
use maintwatch::commands::probe::{run_with, Layout};
use maintwatch::simulator::sim::{scenarios, SimOptions, Simulator};

const PASSWORD: &str = "right-pass-7c1";
const WRONG: &str = "wrong-pass-9d2";
const REFUSAL: &str = "ERR unknown subcommand 'MAINT_NOTIFICATIONS'. Try CLIENT HELP.";
const WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";

#[derive(Parser)]
struct T {
    #[command(flatten)]
    probe: ProbeArgs,
}

/// The five endpoints and what holds them up; `None` (with a SKIP line) without redis-server.
struct Five {
    _sim: Simulator,
    _auth: common::RealRedis,
    _plain: common::RealRedis,
    endpoints: Vec<String>,
}

impl Five {
    async fn start(test: &str) -> Option<Five> {
        let auth = common::RealRedis::start(test, &["--requirepass", PASSWORD]).await?;
        let plain = common::RealRedis::start(test, &[]).await?;
        let sim = Simulator::start(SimOptions::new(
            scenarios::by_name("single-proxy").expect("bundled"),
        ))
        .await
        .expect("simulator starts");
        let endpoints = vec![
            format!("redis://{}", sim.proxies()[0]),
            format!("redis://:{WRONG}@{}", auth.addr),
            format!("redis://{}", common::closed_port()),
            format!("redis://{}", plain.addr),
            format!("rediss://{}", plain.addr),
        ];
        Some(Five {
            _sim: sim,
            _auth: auth,
            _plain: plain,
            endpoints,
        })
    }

    /// The endpoints as the table shows them (no password).
    fn shown(&self) -> Vec<String> {
        self.endpoints
            .iter()
            .map(|e| e.replace(&format!(":{WRONG}@"), ""))
            .collect()
    }

    fn args(&self) -> Vec<String> {
        let mut args = self.endpoints.clone();
        args.extend(["--connect-timeout", "1s", "--linger", "0"].map(String::from));
        args
    }
}

/// What each endpoint's line must end with: what to do.
const HINTS: [&str; 5] = [
    "-",
    "check the password",
    "check host and port",
    "unsupported here",
    "no TLS? use redis://",
];

/// Checks a table as shown `width` columns wide: every line fits, each endpoint's line is whole
/// and ends with what to do, and the notes (joined back where they wrapped) hold the servers'
/// whole texts and no password.
fn check(screen: &str, five: &Five, width: usize) {
    assert!(!screen.contains(WRONG), "a password on screen:\n{screen}");
    let lines: Vec<&str> = screen.lines().map(str::trim_end).collect();
    for line in &lines {
        assert!(
            line.chars().count() <= width,
            "wider than {width}: {line:?}\n{screen}"
        );
    }
    let header = lines
        .iter()
        .position(|l| l.starts_with("endpoint ") && l.ends_with("what to do"))
        .unwrap_or_else(|| panic!("no table header:\n{screen}"));
    // An endpoint's line, then (when every column does not fit) its address, server and
    // maintenance on a line under it, 4 in: never cut, never left out.
    let blank = header + lines[header..].iter().position(|l| l.is_empty()).unwrap();
    let rows: Vec<&str> = lines[header + 1..blank]
        .iter()
        .copied()
        .filter(|l| !l.starts_with("    "))
        .collect();
    assert!(!screen.contains('…'), "a cut cell:\n{screen}");
    let shown = five.shown();
    for (i, (endpoint, hint)) in shown.iter().zip(HINTS).enumerate() {
        let row = rows[i];
        assert!(
            row.starts_with(&format!("{endpoint} ")),
            "{endpoint}: {row:?}\n{screen}"
        );
        assert!(
            row.ends_with(&format!("  {hint}")),
            "{hint}: {row:?}\n{screen}"
        );
    }
    for (i, outcome) in [
        "accepted",
        "auth failed",
        "unreachable",
        "refused",
        "timed out",
    ]
    .iter()
    .enumerate()
    {
        let row = rows[i];
        assert!(row.contains(&format!("  {outcome}  ")), "{row:?}\n{screen}");
    }
    assert_eq!(rows.len(), 5, "a blank line, then the notes:\n{screen}");
    if width < 200 {
        // The server is whole on the line under its endpoint.
        let under = lines[header + 1..blank].join("\n");
        assert!(
            under.contains("server redis 8.0.2 standalone master"),
            "{screen}"
        );
    }
    // Wrapped only between words: the continuation lines joined back give the texts whole.
    let notes = lines[blank + 1..].join("\n").replace("\n    ", " ");
    let note = |endpoint: &str| {
        notes
            .lines()
            .find(|l| l.starts_with(&format!("{endpoint}: ")))
            .unwrap_or_else(|| panic!("no note for {endpoint}:\n{screen}"))
            .to_string()
    };
    let auth = note(&shown[1]);
    assert!(
        auth.contains(&format!("{WRONGPASS} Check the password and the user")),
        "{auth}"
    );
    let refused = note(&shown[3]);
    assert!(
        refused.contains(&format!(
            "{REFUSAL} Redis Open Source and Valkey send no notifications"
        )),
        "{refused}"
    );
    assert!(note(&shown[2]).contains("Connection refused"), "{screen}");
    assert!(
        note(&shown[4]).contains("during the TLS handshake"),
        "{screen}"
    );
    assert!(
        notes.contains(
            "5 endpoints: 1 accepted, 1 refused, 1 auth failed, 1 timed out, 1 unreachable"
        ),
        "{screen}"
    );
}

#[tokio::test]
async fn five_real_endpoints_at_80_and_200_columns() {
    let Some(five) = Five::start("probe table of five real endpoints").await else {
        return;
    };
    let args = T::try_parse_from(std::iter::once("probe".to_string()).chain(five.args()))
        .unwrap()
        .probe;
    for width in [80, 200] {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = run_with(
            args.settings(),
            &mut "".as_bytes(),
            &mut out,
            &mut err,
            Layout::Terminal { width },
        )
        .await
        .unwrap();
        assert_eq!(code, maintwatch::exit::CONNECTION_FAILED);
        let out = String::from_utf8(out).unwrap();
        check(&out, &five, width);
        if width == 200 {
            // Room for everything: the server column, and nothing cut.
            assert!(out.contains("redis 8.0.2 standalone master"), "{out}");
            assert!(!out.contains('…'), "{out}");
        }
    }
}

/// `MAINTWATCH_TMUX`, else `tmux` on PATH; `None` (with a SKIP line) when there is none. A
/// `MAINTWATCH_TMUX` that does not run fails the test.
fn tmux(test: &str) -> Option<String> {
    if let Some(bin) = std::env::var_os("MAINTWATCH_TMUX").filter(|v| !v.is_empty()) {
        let bin = bin.to_string_lossy().into_owned();
        let ok = std::process::Command::new(&bin).arg("-V").output();
        assert!(
            ok.is_ok_and(|o| o.status.success()),
            "MAINTWATCH_TMUX={bin} does not run"
        );
        return Some(bin);
    }
    let on_path = std::process::Command::new("tmux").arg("-V").output();
    if on_path.is_ok_and(|o| o.status.success()) {
        return Some("tmux".into());
    }
    crate::common::skip(test, "no tmux (MAINTWATCH_TMUX unset, none on PATH)");
    None
}

/// A tmux server of this test's own, killed when dropped.
struct Pane {
    tmux: String,
    socket: String,
}

impl Pane {
    fn run(&self, args: &[&str]) -> String {
        let out = std::process::Command::new(&self.tmux)
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .expect("tmux runs");
        assert!(out.status.success(), "tmux {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        let _ = std::process::Command::new(&self.tmux)
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}

/// Shell quoting for the command tmux runs.
fn quote(arg: &str) -> String {
    format!("'{}'", arg.replace('\'', r"'\''"))
}

#[tokio::test]
async fn five_real_endpoints_in_tmux_at_80x24_and_200x50() {
    let test = "probe table in tmux";
    let Some(tmux) = tmux(test) else {
        return;
    };
    let Some(five) = Five::start(test).await else {
        return;
    };
    let mut command = vec![quote(common::BIN), "probe".into()];
    command.extend(five.args().iter().map(|a| quote(a)));
    // The pane stays open after the probe, so that what it printed can be read.
    let command = format!("{}; sleep 600", command.join(" "));
    for (width, height) in [(80, 24), (200, 50)] {
        let pane = Pane {
            tmux: tmux.clone(),
            socket: format!("maintwatch-probe-{}-{width}", std::process::id()),
        };
        let (w, h) = (width.to_string(), height.to_string());
        pane.run(&["new-session", "-d", "-x", &w, "-y", &h, &command]);
        // Until the summary is on the screen: a marker, not a fixed wait. From the first row
        // of the history: at 80x24 the endpoints' second lines push the header off the screen.
        let mut screen = String::new();
        for _ in 0..600 {
            screen = pane.run(&["capture-pane", "-p", "-S", "-"]);
            if screen.contains("5 endpoints: ") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(
            screen.contains("5 endpoints: "),
            "no summary in the pane:\n{screen}"
        );
        check(&screen, &five, width);
    }
}

/// Reads the pane until `marker` shows, and returns the screen.
async fn screen_with(pane: &Pane, marker: &str) -> String {
    let mut screen = String::new();
    for _ in 0..600 {
        screen = pane.run(&["capture-pane", "-p"]);
        if screen.contains(marker) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        screen.contains(marker),
        "no {marker:?} in the pane:\n{screen}"
    );
    screen
}

/// The terminal column where `word` starts on `line`, counting wide characters as two.
fn column_of(line: &str, word: &str) -> usize {
    let at = line
        .find(word)
        .unwrap_or_else(|| panic!("{word:?} in {line:?}"));
    unicode_width::UnicodeWidthStr::width(&line[..at])
}

/// An endpoint named in CJK (two columns a character) in an 80-column pane: every column
/// starts where the header's does, and no line is wider than the pane; with `COLUMNS=70` the
/// table fits 70. No server is needed: both endpoints are unreachable (a name that does not
/// resolve, a closed port).
#[tokio::test]
async fn a_wide_character_endpoint_aligns_in_tmux_at_80_columns() {
    let test = "wide-character endpoint in tmux";
    let Some(tmux) = tmux(test) else {
        return;
    };
    let wide = "redis://数据库-主.invalid:1".to_string();
    let closed = format!("redis://{}", common::closed_port());
    for columns in [None, Some(70)] {
        let pane = Pane {
            tmux: tmux.clone(),
            socket: format!("maintwatch-wide-{}-{columns:?}", std::process::id()),
        };
        let env = columns.map_or(String::new(), |c| format!("COLUMNS={c} "));
        let command = format!(
            "{env}{} probe {} {} --connect-timeout 1s; sleep 600",
            quote(common::BIN),
            quote(&wide),
            quote(&closed)
        );
        pane.run(&["new-session", "-d", "-x", "80", "-y", "24", &command]);
        let screen = screen_with(&pane, "2 endpoints: ").await;
        let lines: Vec<&str> = screen.lines().map(str::trim_end).collect();
        let width = columns.unwrap_or(80);
        for line in &lines {
            let w = unicode_width::UnicodeWidthStr::width(*line);
            assert!(w <= width, "wider than {width}: {line:?}\n{screen}");
        }
        let header = lines
            .iter()
            .position(|l| l.starts_with("endpoint "))
            .unwrap_or_else(|| panic!("no header:\n{screen}"));
        let at = column_of(lines[header], "outcome");
        for row in &lines[header + 1..header + 3] {
            assert_eq!(column_of(row, "unreachable"), at, "{row:?}\n{screen}");
        }
        assert!(lines[header + 1].starts_with(&wide), "{screen}");
    }
}
