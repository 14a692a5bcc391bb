//! What a person sees: the binary runs in a tmux pane 80 and 200 columns wide, and the pane is
//! read back with `capture-pane`, as a terminal shows it.
//!
//! Two captures of the same pane are compared: rows as shown (`capture-pane -p`), and rows with
//! the terminal's own wrapping undone (`-J`). A joined row wider than the pane is a line the
//! terminal had to wrap, which is what these tests exist to catch; our own breaks are seen in
//! the rows as shown.
//!
//! tmux is found through `MAINTWATCH_TMUX` (a path), else on `PATH`. Absent (or the variable set
//! empty), each test prints a visible SKIP line and passes; set but not running, it fails.
//! Nothing here waits a fixed time: each step polls the pane until a line it names appears,
//! with a generous deadline that fails the test.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const TMUX_VAR: &str = "MAINTWATCH_TMUX";

/// A hang guard only: the steps take a few seconds.
const DEADLINE: Duration = Duration::from_secs(120);

use crate::common;

use common::BIN;

/// Words a number is followed by; a row ending in a number must not leave one to the next row.
const UNITS: [&str; 2] = ["s", "ms"];

/// The tmux to use, or `None` after the SKIP line.
fn tmux(test: &str) -> Option<String> {
    let bin = match std::env::var_os(TMUX_VAR) {
        Some(v) if v.to_string_lossy().trim().is_empty() => {
            crate::common::skip(test, &format!("{TMUX_VAR} is set empty"));
            return None;
        }
        Some(v) => v.to_string_lossy().trim().to_string(),
        None => match on_path("tmux") {
            Some(p) => p.to_string_lossy().into_owned(),
            None => {
                crate::common::skip(test, &format!("no tmux on PATH and {TMUX_VAR} is unset"));
                return None;
            }
        },
    };
    let runs = Command::new(&bin)
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(runs, "{bin} (tmux) does not run: `{bin} -V` failed");
    Some(bin)
}

fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// One tmux server of our own (its socket in a temporary directory, no user configuration), one
/// pane running one shell command. Dropped, the server and everything in the pane end.
struct Pane {
    tmux: String,
    socket: PathBuf,
    width: usize,
    _dir: tempfile::TempDir,
}

impl Pane {
    fn start(tmux: &str, width: usize, height: usize, command: &str) -> Pane {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("tmux.sock");
        let config = dir.path().join("tmux.conf");
        // Room for every line in the history: the whole run is read back at the end.
        std::fs::write(&config, "set -g history-limit 50000\n").unwrap();
        // The terminal echoes a Ctrl-C as `^C` at wherever the cursor is, racing the program's
        // own next line onto the same row: that echo is the tty's, not the program's output.
        let command = format!("stty -echoctl; {command}");
        let status = Command::new(tmux)
            .arg("-S")
            .arg(&socket)
            .arg("-f")
            .arg(&config)
            .args(["new-session", "-d", "-x", &width.to_string()])
            .args(["-y", &height.to_string(), &command])
            // The pane's width is the only width: no inherited override, no outer tmux.
            .env_remove("COLUMNS")
            .env_remove("LINES")
            .env_remove("TMUX")
            .stdin(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "tmux new-session failed: {status}");
        Pane {
            tmux: tmux.to_string(),
            socket,
            width,
            _dir: dir,
        }
    }

    fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new(&self.tmux)
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "tmux {args:?}: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    }

    /// The pane from the first line of its history, as rows shown (`joined` false) or with the
    /// terminal's wrapping undone.
    fn capture(&self, joined: bool) -> Vec<String> {
        let mut args = vec!["capture-pane", "-p", "-S", "-"];
        if joined {
            args.push("-J");
        }
        let text = self.tmux(&args);
        let mut rows: Vec<String> = text.lines().map(|l| l.trim_end().to_string()).collect();
        while rows.last().is_some_and(|r| r.is_empty()) {
            rows.pop();
        }
        rows
    }

    /// Polls the pane until `done` holds for its rows (with our own breaks joined by spaces),
    /// failing with what it shows at the deadline.
    fn wait_for(&self, what: &str, done: impl Fn(&str) -> bool) {
        let start = Instant::now();
        loop {
            let rows = self.capture(true);
            if done(&flat(&rows)) {
                return;
            }
            assert!(
                start.elapsed() < DEADLINE,
                "waited {DEADLINE:?} for {what}; the pane shows:\n{}",
                rows.join("\n")
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn keys(&self, keys: &str) {
        self.tmux(&["send-keys", keys]);
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        let _ = Command::new(&self.tmux)
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .status();
    }
}

/// Rows as one text, whitespace runs made one space: what a line says, wherever it was broken.
fn flat(rows: &[String]) -> String {
    rows.iter()
        .flat_map(|r| r.split_whitespace())
        .collect::<Vec<_>>()
        .join(" ")
}

/// `maintwatch simulate` as a child, with where it listens read from its banner. Its narration
/// is drained on a thread so that it never blocks on a full pipe.
struct Sim {
    child: Child,
    port: u16,
    dns: String,
}

impl Sim {
    fn start(scenario: &str, speed: &str) -> Sim {
        let mut child = common::maintwatch(["simulate", "--scenario", scenario, "--speed", speed])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut banner = String::new();
        while !banner.contains("  try ") {
            let before = banner.len();
            out.read_line(&mut banner).unwrap();
            assert!(banner.len() > before, "simulate ended early:\n{banner}");
        }
        std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
        let value = |label: &str| -> String {
            banner
                .lines()
                .find_map(|l| l.strip_prefix(label))
                .and_then(|l| l.split_whitespace().next())
                .unwrap_or_else(|| panic!("no {label:?} in:\n{banner}"))
                .to_string()
        };
        let proxy = value("  proxies   ");
        let port = proxy.rsplit(':').next().unwrap().parse().unwrap();
        Sim {
            child,
            port,
            dns: value("  DNS       "),
        }
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// No row is wider than the pane once the terminal's wrapping is undone: nothing was wrapped by
/// the terminal, so nothing was cut inside a word, a number or an address.
fn assert_fits(joined: &[String], width: usize) {
    for row in joined {
        assert!(
            row.chars().count() <= width,
            "a line {} columns wide on a {width}-column terminal:\n{row}\nin:\n{}",
            row.chars().count(),
            joined.join("\n")
        );
    }
}

/// What follows a fleet label on a row (the row itself when it has none).
fn unlabelled<'a>(row: &'a str, labels: &[String]) -> &'a str {
    labels
        .iter()
        .find_map(|l| row.strip_prefix(l.as_str()))
        .unwrap_or(row)
}

/// No break between a number and its unit: not between rows, nor between the lines of a table
/// cell.
fn assert_units_whole(rows: &[String], labels: &[String]) {
    let is_unit = |s: &str| {
        let word = s.split_whitespace().next().unwrap_or("");
        UNITS.contains(&word.trim_end_matches(|c: char| c.is_ascii_punctuation()))
    };
    let split =
        |a: &str, b: &str| a.trim_end().ends_with(|c: char| c.is_ascii_digit()) && is_unit(b);
    for pair in rows.windows(2) {
        let (a, b) = (unlabelled(&pair[0], labels), unlabelled(&pair[1], labels));
        let cells = |r: &str| -> Vec<String> {
            r.split(['│', '┆']).map(str::to_string).collect::<Vec<_>>()
        };
        if a.starts_with('│') && b.starts_with('│') {
            for (x, y) in cells(a).iter().zip(cells(b).iter()) {
                assert!(!split(x, y), "a cell broken inside a value:\n{a}\n{b}");
            }
        } else {
            assert!(!split(a, b), "a value broken from its unit:\n{a}\n{b}");
        }
    }
}

/// Every table of each summary (the rows after each `── label ──` heading) is as wide as the
/// others of it.
fn assert_tables_one_width(rows: &[String]) -> usize {
    let mut tables = 0;
    for summary in rows.split(|r| r.starts_with("── ")).skip(1) {
        let widths: Vec<usize> = summary
            .iter()
            .filter(|r| r.starts_with('┌'))
            .map(|r| r.chars().count())
            .collect();
        assert!(
            widths.windows(2).all(|w| w[0] == w[1]),
            "tables of different widths {widths:?}:\n{}",
            summary.join("\n")
        );
        tables += widths.len();
    }
    tables
}

/// A two-endpoint fleet against the simulator (one endpoint by address, one by name), stopped
/// with Ctrl-C once both saw the close and its verdict; returns the rows as shown and joined.
fn fleet(tmux: &str, width: usize, height: usize) -> (Vec<String>, Vec<String>, Vec<String>) {
    let sim = Sim::start("single-proxy", "5");
    let labels = vec![
        format!("127.0.0.2:{}", sim.port),
        format!("db.sim.maintwatch.test:{}", sim.port),
    ];
    let command = format!(
        "{BIN} watch redis://{} redis://{} --dns-server {}; echo SCREEN-DONE-$?; sleep 600",
        labels[0], labels[1], sim.dns
    );
    let pane = Pane::start(tmux, width, height, &command);
    pane.wait_for("both endpoints' verdicts", |text| {
        text.matches("] => a client").count() >= 2
    });
    pane.keys("C-c");
    pane.wait_for("the end of the watch", |text| text.contains("SCREEN-DONE-"));
    let (shown, joined) = (pane.capture(false), pane.capture(true));
    assert_eq!(pane.width, width);
    (shown, joined, labels)
}

fn check_fleet(width: usize, height: usize) -> Option<(Vec<String>, Vec<String>)> {
    let tmux = tmux(&format!("screen_tty: fleet at {width} columns"))?;
    let (shown, joined, labels) = fleet(&tmux, width, height);
    let all = shown.join("\n");
    assert!(flat(&joined).contains("SCREEN-DONE-130"), "{all}");
    assert_fits(&joined, width);
    assert_units_whole(&shown, &labels);
    // Every row of the watch, continuation rows too, starts with its endpoint's label.
    let watch: Vec<&String> = shown.iter().take_while(|r| !r.starts_with("── ")).collect();
    for label in &labels {
        assert!(
            watch.iter().any(|r| r.starts_with(&format!("{label} "))),
            "no line of {label}:\n{all}"
        );
    }
    for row in &watch {
        let labelled = labels.iter().any(|l| row.starts_with(&format!("{l} ")));
        // Ctrl-C's echo (off: see Pane::start) still ends the row it was typed on.
        assert!(
            labelled || row.trim().is_empty(),
            "a row with no label: {row:?}\n{all}"
        );
    }
    // Addresses are whole on the rows as shown: as many as in the joined text.
    for address in &labels {
        let on_rows: usize = shown
            .iter()
            .map(|r| r.matches(address.as_str()).count())
            .sum();
        assert_eq!(
            on_rows,
            flat(&joined).matches(address.as_str()).count(),
            "{all}"
        );
    }
    // One summary per endpoint, each with its events and totals tables, of one width.
    assert_eq!(
        shown.iter().filter(|r| r.starts_with("── ")).count(),
        2,
        "{all}"
    );
    assert_eq!(assert_tables_one_width(&shown), 4, "{all}");
    Some((shown, labels))
}

#[test]
fn a_fleet_at_80_columns_wraps_each_line_once_beside_its_label() {
    let Some((shown, labels)) = check_fleet(80, 24) else {
        return;
    };
    // At 80 columns the long entries did need wrapping: it was done by us, under the label.
    let continued = shown
        .iter()
        .filter(|r| {
            labels
                .iter()
                .any(|l| r.starts_with(&format!("{l}         ")))
        })
        .count();
    assert!(continued > 0, "{}", shown.join("\n"));
}

#[test]
fn a_fleet_at_200_columns_is_not_wrapped_at_80() {
    let Some((shown, labels)) = check_fleet(200, 50) else {
        return;
    };
    // Both verdicts run past 80 columns on their first row; the one of the endpoint by name
    // (the shorter) is one row.
    let verdicts: Vec<&String> = shown
        .iter()
        .filter(|r| r.contains("] => a client"))
        .collect();
    assert_eq!(verdicts.len(), 2, "{}", shown.join("\n"));
    for row in &verdicts {
        assert!(row.chars().count() > 80, "{row}");
    }
    assert!(
        verdicts.iter().any(|r| r.starts_with(&labels[1])
            && r.contains("would have moved at +")
            && r.contains(" before the close at +")
            && r.ends_with(" s")),
        "{verdicts:?}"
    );
}

/// `simulate`'s header with a password (the longest `try` lines), until its last line shows.
fn simulate_header(tmux: &str, width: usize, height: usize) -> (Vec<String>, Vec<String>) {
    let command = format!(
        "MAINTWATCH_SIM_PASSWORD=screen-test-pw {BIN} simulate --scenario single-proxy; sleep 600"
    );
    let pane = Pane::start(tmux, width, height, &command);
    pane.wait_for("the header's last line", |text| {
        text.contains("it is already set")
    });
    (pane.capture(false), pane.capture(true))
}

/// The `try` command that starts with `start`, its rows joined as a shell reads them (` \` and
/// a newline continue the line).
fn pasted(rows: &[String], start: &str) -> String {
    let first = rows
        .iter()
        .position(|r| r.contains(start))
        .unwrap_or_else(|| panic!("no {start:?} in:\n{}", rows.join("\n")));
    let mut command = String::new();
    for row in &rows[first..] {
        let row = row.trim();
        match row.strip_suffix(" \\") {
            Some(part) => {
                command.push_str(part);
                command.push(' ');
            }
            None => {
                command.push_str(row);
                break;
            }
        }
    }
    command
}

fn check_header(width: usize, height: usize) -> Option<Vec<String>> {
    let tmux = tmux(&format!("screen_tty: simulate header at {width} columns"))?;
    let (shown, joined) = simulate_header(&tmux, width, height);
    let all = shown.join("\n");
    assert_fits(&joined, width);
    assert_units_whole(&shown, &[]);
    assert!(!all.contains("screen-test-pw"), "{all}");
    // Pasted as shown, the watch command is whole: host, port and DNS server in one command.
    let watch = pasted(&shown, "maintwatch watch");
    let words: Vec<&str> = watch.split_whitespace().collect();
    let at = words.iter().position(|w| *w == "watch").unwrap();
    assert!(
        words[at + 1].starts_with("redis://db.sim.maintwatch.test:"),
        "{watch}"
    );
    assert_eq!(words[at + 2], "--dns-server", "{watch}");
    assert!(words[at + 3].starts_with("127.0.0.1:"), "{watch}");
    Some(shown)
}

#[test]
fn the_simulate_header_at_80_columns_wraps_under_its_values() {
    let Some(shown) = check_header(80, 24) else {
        return;
    };
    let all = shown.join("\n");
    // The scenario's description goes on under itself, the sentence whole.
    let about = shown
        .iter()
        .position(|r| r.starts_with("  One proxy retired"))
        .unwrap_or_else(|| panic!("{all}"));
    assert!(
        shown[about + 1].starts_with("    ") && !shown[about + 1].starts_with("     "),
        "{all}"
    );
    assert!(
        flat(&shown).contains("closes every connection of the old proxy +16.6 s."),
        "{all}"
    );
    // A command broken over rows says so to the shell.
    assert!(shown.iter().any(|r| r.ends_with(" \\")), "{all}");
}

#[test]
fn the_simulate_header_at_200_columns_is_not_wrapped_at_80() {
    let Some(shown) = check_header(200, 50) else {
        return;
    };
    let about = shown
        .iter()
        .find(|r| r.starts_with("  One proxy retired"))
        .unwrap_or_else(|| panic!("{}", shown.join("\n")));
    assert!(about.chars().count() > 80, "{about}");
    assert!(about.ends_with("+16.6 s."), "{about}");
    assert!(
        !shown.iter().any(|r| r.ends_with(" \\")),
        "{}",
        shown.join("\n")
    );
}

/// The rule the tests above rely on, on made-up rows: a unit alone at the start of a row is
/// caught, in text and in a table cell; a number that is not followed by a unit is not.
#[test]
fn the_unit_check_finds_a_broken_value() {
    let rows = |r: &[&str]| r.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let broken = std::panic::catch_unwind(|| {
        assert_units_whole(&rows(&["a 127.0.0.2:1 at +0.8", "        s later"]), &[])
    });
    assert!(broken.is_err());
    let cell = std::panic::catch_unwind(|| {
        assert_units_whole(&rows(&["│ x ┆ +0.8 ┆ y │", "│   ┆ s    ┆   │"]), &[])
    });
    assert!(cell.is_err());
    assert_units_whole(
        &rows(&["seq 3", "        shards 27", "│ +0.8 s ┆ 2 │"]),
        &[],
    );
}

/// One endpoint (the demo: a watch of the simulator) on a 200-column terminal: its long entries
/// are one row each, not wrapped at 80.
#[test]
fn a_single_watch_at_200_columns_is_not_wrapped_at_80() {
    let Some(tmux) = tmux("screen_tty: a single watch at 200 columns") else {
        return;
    };
    let command = format!("{BIN} demo --speed 5; echo SCREEN-DONE-$?; sleep 600");
    let pane = Pane::start(&tmux, 200, 50, &command);
    pane.wait_for("the end of the demo", |text| text.contains("SCREEN-DONE-"));
    let (shown, joined) = (pane.capture(false), pane.capture(true));
    let all = shown.join("\n");
    assert!(flat(&joined).contains("SCREEN-DONE-0"), "{all}");
    assert_fits(&joined, 200);
    assert_units_whole(&shown, &[]);
    let verdict = shown
        .iter()
        .find(|r| r.contains("] => a client following the dry-run"))
        .unwrap_or_else(|| panic!("no verdict in:\n{all}"));
    assert!(verdict.chars().count() > 80, "{verdict}");
    assert!(verdict.contains(" before the close at +"), "{verdict}");
    // Nothing in the watch needed a second row.
    assert!(
        !shown
            .iter()
            .any(|r| r.starts_with("        ") && !r.trim_start().starts_with('>')),
        "{all}"
    );
}

/// `replay --grade` at 80 columns: every line fits, so no word is cut by the terminal, and a
/// rule's long reason continues under the reason column rather than under the verdicts.
#[test]
fn a_grade_at_80_columns_wraps_its_reasons_under_the_reason_column() {
    let Some(tmux) = tmux("screen_tty: a grade at 80 columns") else {
        return;
    };
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/grades/maintenance-v4.jsonl"
    );
    let command = format!("{BIN} replay --grade {fixture}; echo REPLAY-ENDED; sleep 600");
    let pane = Pane::start(&tmux, 80, 50, &command);
    pane.wait_for("the grade's end", |text| text.contains("REPLAY-ENDED"));
    let (shown, joined) = (pane.capture(false), pane.capture(true));
    assert_fits(&joined, 80);
    assert_units_whole(&shown, &[]);
    let is_rule = |r: &str| {
        ["    PASS ", "    FAIL ", "    NOT JUDGED "]
            .iter()
            .any(|p| r.starts_with(p))
    };
    let indent = |r: &str| r.len() - r.trim_start().len();
    // Every row that continues a rule starts at the reason column, and some rule continues.
    let mut continued = 0;
    for pair in shown.windows(2) {
        if is_rule(&pair[0]) && indent(&pair[1]) > 4 && !is_rule(&pair[1]) {
            assert_eq!(
                indent(&pair[1]),
                35,
                "the reason of\n{}\ncontinues elsewhere:\n{}",
                pair[0],
                shown.join("\n")
            );
            continued += 1;
        }
    }
    assert!(
        continued > 0,
        "no reason was wrapped:\n{}",
        shown.join("\n")
    );
}

/// `simulate -- CMD`'s narration at 80 columns: a step line longer than the pane (the MOVING
/// sent to every opted-in connection) goes on under its text, never past the edge. The client is
/// maintwatch's own watch, pointed at the simulator by the variables `simulate` gives it.
#[test]
fn the_simulate_narration_at_80_columns_wraps_under_its_text() {
    let Some(tmux) = tmux("screen_tty: simulate narration at 80 columns") else {
        return;
    };
    let command = format!(
        "{BIN} simulate --scenario single-proxy --speed 20 --quiet -- sh -c 'exec {BIN} watch \
         \"$MAINTWATCH_SIM_URL\" --dns-server \"$MAINTWATCH_SIM_DNS\" --sim-speed 20 \
         >/dev/null'; sleep 600"
    );
    let pane = Pane::start(&tmux, 80, 60, &command);
    pane.wait_for("the scenario's end", |text| text.contains("scenario ended"));
    let (shown, joined) = (pane.capture(false), pane.capture(true));
    assert_fits(&joined, 80);
    let all = shown.join("\n");
    let step = shown
        .iter()
        .position(|r| r.contains("step line 10: MOVING"))
        .unwrap_or_else(|| panic!("{all}"));
    assert!(
        shown[step + 1].starts_with("            ")
            && !shown[step + 1].starts_with("             "),
        "{all}"
    );
    assert!(flat(&shown).contains("opted-in connection(s)"), "{all}");
}

/// `doctor` against a port that does not speak TLS, at 80 columns: a progress line naming what
/// it waits for while the handshake is unanswered, then probe's one line for the failure,
/// wrapped between words, once, and the progress line gone. The port holds the connection until
/// the pane has shown the progress line, then closes it (as a plain Redis does on a TLS hello):
/// the order is forced, nothing waits on a clock.
#[test]
fn doctor_against_a_tls_mismatch_at_80_columns_shows_progress_then_one_line() {
    let Some(tmux) = tmux("screen_tty: doctor against a TLS mismatch at 80 columns") else {
        return;
    };
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, held) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        while let Ok((s, _)) = listener.accept() {
            let _ = tx.send(s);
        }
    });
    let command =
        format!("{BIN} doctor rediss://{addr} --connect-timeout 120s; echo doctor-end; sleep 600");
    let pane = Pane::start(&tmux, 80, 40, &command);
    let first = held.recv_timeout(DEADLINE).expect("doctor connects");
    pane.wait_for("the progress line", |text| {
        text.contains(&format!("doctor: asking rediss://{addr}: connecting"))
    });
    drop(first);
    pane.wait_for("doctor's end", |text| text.contains("doctor-end"));
    let (shown, joined) = (pane.capture(false), pane.capture(true));
    assert_fits(&joined, 80);
    let text = flat(&shown);
    let all = shown.join("\n");
    assert!(text.contains(&format!("rediss://{addr}: ")), "{all}");
    assert_eq!(
        text.matches("is TLS enabled on this port").count(),
        1,
        "{all}"
    );
    assert!(text.contains("doctor stopped there"), "{all}");
    assert!(
        !text.contains("doctor: asking"),
        "the progress line stays:\n{all}"
    );
    assert!(
        held.try_recv().is_err(),
        "doctor tried a second connection after the first failed:\n{all}"
    );
}

/// `decode --clients` at 80 columns: a client's reaction, with the releases it was measured in,
/// goes on under its text rather than past the edge.
#[test]
fn decode_clients_at_80_columns_wraps_under_its_text() {
    let Some(tmux) = tmux("screen_tty: decode --clients at 80 columns") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("moving.resp");
    std::fs::write(&file, b">4\r\n$6\r\nMOVING\r\n:1\r\n:15\r\n_\r\n").unwrap();
    let command = format!(
        "{BIN} decode --clients {}; echo decoded-end; sleep 600",
        file.display()
    );
    let pane = Pane::start(&tmux, 80, 40, &command);
    pane.wait_for("the decode's end", |text| text.contains("decoded-end"));
    let (shown, joined) = (pane.capture(false), pane.capture(true));
    assert_fits(&joined, 80);
    let all = shown.join("\n");
    let node = shown
        .iter()
        .position(|r| r.starts_with("    node-redis"))
        .unwrap_or_else(|| panic!("{all}"));
    assert!(shown[node + 1].starts_with("      "), "{all}");
    assert!(
        flat(&shown).contains("an unhandled promise rejection"),
        "{all}"
    );
}

/// `--help` at 80 columns is a screen like any other (issue 50): no row wider than the pane, no
/// value parted from its unit, the scenario lists still a column of names with their text
/// under its own column, and a long example command goes on with ` \` as a shell reads it.
#[test]
fn every_help_at_80_columns_fits_with_its_tables_whole() {
    let Some(tmux) = tmux("screen_tty: every --help at 80 columns") else {
        return;
    };
    let names = [
        "simulate", "demo", "certify", "probe", "watch", "pcap", "decide",
    ];
    let command = names
        .iter()
        .map(|n| format!("echo HELP-START-{n}; {BIN} {n} --help; echo HELP-END-{n}"))
        .collect::<Vec<_>>()
        .join("; ");
    let pane = Pane::start(&tmux, 80, 50, &format!("{command}; sleep 600"));
    pane.wait_for("every help", |text| text.contains("HELP-END-decide"));
    let (shown, joined) = (pane.capture(false), pane.capture(true));
    let all = shown.join("\n");
    assert_fits(&joined, 80);
    assert_units_whole(&shown, &[]);
    // The scenario lists: a name's row, then rows under its text's column only.
    for (list, column) in [("simulate", 27), ("demo", 27), ("certify", 35)] {
        let help: Vec<&String> = shown
            .iter()
            .skip_while(|r| !r.starts_with(&format!("HELP-START-{list}")))
            .take_while(|r| !r.starts_with(&format!("HELP-END-{list}")))
            .skip_while(|r| !r.starts_with("  single-proxy "))
            .take_while(|r| r.starts_with("  "))
            .collect();
        assert!(help.len() > 10, "{list}: {all}");
        assert!(help[0].starts_with("  single-proxy  "), "{list}: {all}");
        for row in &help {
            let indent = row.len() - row.trim_start().len();
            assert!(
                indent == 2 || indent == column,
                "{list}: a row off its column: {row:?}\n{all}"
            );
        }
    }
    // A command too long for a row ends it with ` \` and goes on deeper; pasted, it is one.
    let pasted = pasted(&shown, "maintwatch pcap --port 12000 --json");
    assert!(
        pasted.ends_with("jq -c 'select(.type == \"pcap_verdict\")'"),
        "{pasted}\n{all}"
    );
}

/// The azure-failover demo at 80 columns (issue 50): each AzureRedisEvents message's bytes break
/// at its `|` separators rather than being cut by the terminal, the refused opt-in is said to be
/// expected (the channel is how the news comes), and the row that ended in FailoverComplete says
/// when.
#[test]
fn the_azure_demo_at_80_columns_breaks_bytes_at_separators_and_says_what_happened() {
    let Some(tmux) = tmux("screen_tty: azure demo at 80 columns") else {
        return;
    };
    let command = format!(
        "{BIN} demo --scenario azure-failover --speed 5 --color never; echo SCREEN-DONE-$?; \
         sleep 600"
    );
    let pane = Pane::start(&tmux, 80, 50, &command);
    pane.wait_for("the end of the demo", |text| text.contains("SCREEN-DONE-"));
    let (shown, joined) = (pane.capture(false), pane.capture(true));
    let all = shown.join("\n");
    assert!(flat(&joined).contains("SCREEN-DONE-0"), "{all}");
    assert_fits(&joined, 80);
    assert_units_whole(&shown, &[]);
    // Rows of a message's bytes end at a separator or a line end, and go on under the bytes.
    let fields = shown
        .iter()
        .filter(|r| r.trim_start().starts_with("NotificationType|"))
        .count();
    assert!(fields >= 5, "{all}");
    for pair in shown.windows(2) {
        if pair[1].trim_start().starts_with("NotificationType|") {
            assert!(pair[0].ends_with("\\r\\n"), "{all}");
        }
    }
    let text = flat(&shown);
    assert!(
        text.contains("expected on Azure Cache: it announces maintenance on the AzureRedisEvents"),
        "{all}"
    );
    assert!(
        !text.contains("this server will send no notifications"),
        "{all}"
    );
    let scheduled = shown
        .iter()
        .find(|r| r.starts_with("│ azure Scheduled"))
        .unwrap_or_else(|| panic!("{all}"));
    let done = scheduled.split('┆').nth(2).unwrap().trim();
    assert!(done.starts_with('+') && done.ends_with(" s"), "{scheduled}");
}

/// Rows as one text with every digit made `0`: two runs of one command (times, a process id in
/// a path) read alike, and a word cut in two by a row's end reads as two words.
fn masked(rows: &[String]) -> String {
    flat(rows)
        .chars()
        .map(|c| if c.is_ascii_digit() { '0' } else { c })
        .collect()
}

/// The same command in a pane `width` columns wide, until `DONE-` shows; the rows as shown and
/// joined, from the command's first row to the row before `DONE-`.
fn screen_of(tmux: &str, width: usize, command: &str) -> (Vec<String>, Vec<String>) {
    let pane = Pane::start(
        tmux,
        width,
        50,
        &format!("{command}; echo DONE-$?; sleep 600"),
    );
    pane.wait_for("the command's end", |text| text.contains("DONE-"));
    let cut = |mut rows: Vec<String>| {
        let end = rows.iter().position(|r| r.starts_with("DONE-")).unwrap();
        rows.truncate(end);
        rows
    };
    (cut(pane.capture(false)), cut(pane.capture(true)))
}

/// Each screen at 80 columns says what it says at 200, word for word: every break we made fell
/// at a space, and nothing was left to the terminal to cut.
fn same_words_at_80_as_at_200(tmux: &str, command: &str) -> Vec<String> {
    let (wide, _) = screen_of(tmux, 200, command);
    let (shown, joined) = screen_of(tmux, 80, command);
    assert_fits(&joined, 80);
    assert_eq!(masked(&shown), masked(&wide), "80:\n{}", shown.join("\n"));
    shown
}

/// `certify` at 80 columns (issue 60): every reason goes on in a column, under the reason
/// column or, when a long rule name leaves no room, under the name (it went back to 4 spaces);
/// the last line is the verdict with the exit code and where the files are.
#[test]
fn certify_at_80_columns_keeps_its_reasons_in_a_column_and_ends_with_its_verdict() {
    let Some(tmux) = tmux("screen_tty: certify at 80 columns") else {
        return;
    };
    let Some(redis) = common::redis_server_binary("screen_tty: certify at 80 columns") else {
        return;
    };
    let bin_dir = std::path::Path::new(&redis)
        .parent()
        .unwrap()
        .display()
        .to_string();
    let dir = tempfile::tempdir().unwrap();
    let command = format!(
        "PATH={bin_dir}:$PATH MW={BIN} {BIN} certify --scenarios failover --speed 10 \
         --client-output {out} -- sh -c 'exec \"$MW\" watch \"$MAINTWATCH_SIM_URL\" \
         --dns-server \"$MAINTWATCH_SIM_DNS\" --sim-speed 10'",
        out = dir.path().join("client").display()
    );
    let shown = same_words_at_80_as_at_200(&tmux, &command);
    let all = shown.join("\n");
    let is_rule = |r: &str| {
        ["  PASS ", "  FAIL ", "  NOT JUDGED "]
            .iter()
            .any(|p| r.starts_with(p))
    };
    let indent = |r: &str| r.len() - r.trim_start().len();
    let mut rows = shown.iter().skip_while(|r| !is_rule(r)).peekable();
    let mut continued = 0;
    while let Some(row) = rows.next() {
        if !is_rule(row) {
            break;
        }
        while let Some(next) = rows.next_if(|r| r.starts_with("   ") && !is_rule(r)) {
            assert!(
                indent(next) >= 14,
                "a reason off its column:\n{next}\nin:\n{all}"
            );
            continued += 1;
        }
    }
    assert!(continued > 0, "no reason was wrapped:\n{all}");
    // The verdict is the last line: its first row, then its continuations only.
    let last = shown.iter().rposition(|r| !r.starts_with(' ')).unwrap();
    let verdict = flat(&shown[last..]);
    assert!(
        verdict.starts_with("certify: NOT JUDGED (exit 9): failover NJ rlx rst;"),
        "{all}"
    );
    assert!(verdict.contains("client output in "), "{all}");
}

/// `doctor` against a plain redis-server, which refuses the opt-in (issue 60): one screen, under
/// 45 lines at 80 columns (146 before, 90 of them each client's version history), saying at 80
/// what it says at 200.
#[tokio::test]
async fn doctor_against_a_refusing_server_fits_one_screen_at_80_columns() {
    let Some(tmux) = tmux("screen_tty: doctor against a refusing server") else {
        return;
    };
    let test = "screen_tty: doctor against a refusing server";
    let Some(redis) = common::RealRedis::start(test, &[]).await else {
        return;
    };
    let command = format!("{BIN} doctor {}", redis.url());
    let shown = tokio::task::spawn_blocking(move || same_words_at_80_as_at_200(&tmux, &command))
        .await
        .unwrap();
    let all = shown.join("\n");
    assert!(shown.len() < 45, "{} lines:\n{all}", shown.len());
    assert!(
        flat(&shown).contains("opt-in refused: ERR unknown subcommand"),
        "{all}"
    );
    assert!(flat(&shown).contains("doctor --clients all"), "{all}");
    assert_eq!(
        shown.last().map(String::as_str),
        Some("exit code 3"),
        "{all}"
    );
}

/// `demo --list` at 80 columns (issue 60): each description goes on under its own column,
/// between words (the terminal cut `MIG` / `RATING`), saying at 80 what it says at 200.
#[test]
fn demo_list_at_80_columns_wraps_under_its_descriptions() {
    let Some(tmux) = tmux("screen_tty: demo --list at 80 columns") else {
        return;
    };
    let shown = same_words_at_80_as_at_200(&tmux, &format!("{BIN} demo --list"));
    let all = shown.join("\n");
    let column = shown[0]
        .find("One proxy retired")
        .unwrap_or_else(|| panic!("{all}"));
    for row in &shown {
        let indent = row.len() - row.trim_start().len();
        assert!(
            indent == 2 || indent == column,
            "a row off its column: {row:?}\n{all}"
        );
    }
    assert!(
        shown
            .iter()
            .any(|r| r.len() - r.trim_start().len() == column),
        "{all}"
    );
}
