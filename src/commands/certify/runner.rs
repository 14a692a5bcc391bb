//! certify's run: the scenarios played one by one (or by `jobs`), each graded, then the
//! summary, the JSON, the JUnit file and the page. Kept apart from the command's root, which is
//! its map.

use crate::commands::certify::jobs;
use crate::exit;
use crate::grading::judge::{ClientProcess, Grade, Verdict};
use crate::present::certify::played::{played, worst, Outcome};
use crate::present::output::{human, terminal};
use crate::shared::escape::sanitize;
use crate::simulator::simulation;
use crate::simulator::simulation::settled::{settle, Run};
use crate::simulator::simulation::{CertifySettings, Signals, Stop};
use anyhow::Context;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::fmt::Write as _;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Once, before the first scenario: a run in a namespace of its own, or without port 53 at all,
/// is said on stderr (each scenario's own run is silent).
pub(super) fn say_isolation() {
    use crate::simulator::sim::isolation::{self, Isolation};
    match isolation::chosen() {
        Isolation::Namespace => terminal::tell("note", isolation::NAMESPACE_NOTE),
        Isolation::Refused(why) => terminal::tell(
            "warning",
            &format!(
                "the client gets no private /etc/resolv.conf: {why}; the rules that need its \
                 DNS are not judged"
            ),
        ),
        Isolation::Host => {}
    }
}

/// Runs `maintwatch certify`: plays every scenario of `args` and writes the reports.
pub async fn run(args: &CertifySettings) -> anyhow::Result<i32> {
    if let Some(why) = args.scenarios.first().and_then(cannot_start) {
        return not_started(args, &why);
    }
    say_isolation();
    let names = args.names();
    let dir = output_dir(args)?;
    // Registered before anything starts: a Ctrl-C stops the scenarios being played (their
    // servers and clients too) and writes the report so far.
    let mut signals = Signals::new()?;
    let run = if args.jobs > 1 {
        jobs::parallel(args, &mut signals).await?
    } else {
        one_by_one(args, &mut signals).await?
    };
    let outcomes: Vec<Outcome> = run.done.iter().map(|d| d.outcome.clone()).collect();
    let json: String = run.done.iter().map(|d| d.json.as_str()).collect();
    write_reports(args, &outcomes, &json)?;
    if run.usage {
        return Ok(exit::USAGE);
    }
    if let Some(code) = run.said {
        return Ok(code);
    }
    if let Some((name, e)) = run.failed {
        // The client could not be started, say: what was played before still counts.
        if crate::simulator::simulation::client::not_started(&e) {
            let text = format!("scenario {name}: {e}");
            terminal::tell("error", &text);
            return Ok(exit::CLIENT_NOT_STARTED);
        }
        return Err(e.context(format!("scenario {name}")));
    }
    let code = run
        .interrupted
        .unwrap_or_else(|| worst(&outcomes).exit_code());
    let end = End {
        names: &names,
        dir: &dir,
        interrupted: run.interrupted.is_some(),
        code,
    };
    // A closed stdout (`| head`) loses the summary, not the grade: the files are written and
    // the exit code is the one the scenarios earned.
    match print_summary(&outcomes, args, &end) {
        Err(e) if !exit::closed_pipe(&e) => return Err(e),
        _ => {}
    }
    Ok(code)
}

/// How a certification ended, for its last lines.
pub(super) struct End<'a> {
    pub names: &'a [String],
    /// Where the client's output went.
    pub dir: &'a Path,
    pub interrupted: bool,
    pub code: i32,
}

/// Why the client's program cannot be started, looked up before any scenario as `exec` looks it
/// up (a path as given, a bare name on `PATH`): a typo is said once, not once per scenario. A
/// program that is found but fails to start otherwise is still caught where it is started.
pub(super) fn cannot_start(
    sim: &crate::simulator::simulation::SimulationSettings,
) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let program = sim.client.as_ref()?.command.first()?;
    let path = Path::new(program);
    let runnable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    let found = if program.to_string_lossy().contains('/') {
        runnable(path)
    } else {
        std::env::var_os("PATH")
            .is_some_and(|dirs| std::env::split_paths(&dirs).any(|d| runnable(&d.join(path))))
    };
    let why = match std::fs::metadata(path) {
        _ if found => return None,
        Ok(m) if m.is_dir() => "it is a directory",
        Ok(_) if program.to_string_lossy().contains('/') => "it is not executable",
        _ if program.to_string_lossy().contains('/') => "no such file",
        _ => "no such program on PATH",
    };
    Some(format!(
        "cannot start {}: {why}",
        sanitize(&program.to_string_lossy())
    ))
}

/// The client cannot be started: said once, recorded in `--junit` as one error a CI system
/// shows, and certify's own exit code; no scenario is played.
fn not_started(args: &CertifySettings, why: &str) -> anyhow::Result<i32> {
    terminal::tell("error", &format!("{why}; no scenario was played"));
    // The page and the grades of nothing played, as when a scenario could not start its client.
    write_reports(args, &[], "")?;
    if let Some(path) = &args.junit {
        std::fs::write(path, junit_not_started(why))
            .with_context(|| format!("writing the JUnit report to {}", path.display()))?;
    }
    Ok(exit::CLIENT_NOT_STARTED)
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

/// `--jobs 1`: each scenario in turn, in this process, in the list's order.
pub(super) async fn one_by_one(
    args: &CertifySettings,
    signals: &mut Signals,
) -> anyhow::Result<Run> {
    let mut progress = Progress::new(args.scenarios.len() as u64);
    let mut run = Run::default();
    for (i, sim_args) in args.scenarios.iter().enumerate() {
        let name = sim_args.scenario.name();
        if let Some(Stop::Signal(_, code)) = signals.pending().await {
            run.interrupted = Some(code);
            break;
        }
        progress.start(&name, &args.label(i));
        let started = Instant::now();
        let g = match simulation::graded(sim_args, signals).await {
            Ok(Some(g)) => g,
            Ok(None) => {
                run.usage = true;
                break;
            }
            Err(e) => {
                run.failed = Some((name, e));
                break;
            }
        };
        let page = args.report.as_ref().map(|_| simulation::report_parts(&g));
        let seconds = started.elapsed().as_secs_f64();
        let mut done = settle(&name, g.grade, g.obs, g.stop, seconds, page)?;
        done.outcome.run = args.run_of(i);
        progress.finished(&finished_line(&done.outcome, g.stop, g.lost));
        let stop = done.stop;
        run.done.push(done);
        if let Stop::Signal(_, code) = stop {
            run.interrupted = Some(code);
            break;
        }
    }
    progress.clear();
    Ok(run)
}

/// Where the client's output goes, made if it is not there, as is `--pcap`'s directory: once,
/// before any scenario, rather than each scenario failing on its own.
pub(super) fn output_dir(args: &CertifySettings) -> anyhow::Result<PathBuf> {
    let dir = args.output_dir().to_path_buf();
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("creating the client output directory {}", dir.display()))?;
    // Each run's folder (with a single run, the directory itself), and --pcap's.
    let outputs = args.scenarios.iter().filter_map(|s| {
        let file = s.client.as_ref()?.output.as_deref()?;
        Some(("creating the client output directory", file.parent()?))
    });
    let captures = args.scenarios.iter().filter_map(|s| {
        Some((
            "--pcap: creating the directory",
            s.pcap.as_deref()?.parent()?,
        ))
    });
    let folders: std::collections::BTreeSet<(&str, &Path)> = outputs.chain(captures).collect();
    for (what, folder) in folders {
        std::fs::create_dir_all(folder).with_context(|| format!("{what} {}", folder.display()))?;
    }
    Ok(dir)
}

/// `certify: failover: every rule held (5 passed, 0 failed, 0 not judged)`, with why the
/// scenario ended early when it did.
pub fn finished_line(o: &Outcome, stop: Stop, lost: u64) -> String {
    let verdict = o.grade.verdict_line();
    let verdict = verdict.strip_prefix("grade: ").unwrap_or(&verdict);
    let mut line = format!("certify: {}: {verdict}", played(o));
    match stop {
        Stop::ClientExited => line.push_str(" (the client exited before the scenario ended)"),
        Stop::NeverStarted(None) => line.push_str(" (the scenario never started)"),
        Stop::NeverStarted(Some(_)) => {
            line.push_str(" (the scenario never started: the run was too loaded to tell why)")
        }
        Stop::Signal(name, _) => {
            let _ = write!(line, " (stopped by {name}: what happened so far)");
        }
        Stop::Ended => {}
    }
    if lost > 0 {
        let _ = write!(line, " ({lost} events lost: figures may be low)");
    }
    // Wrapped between words on a terminal, which cut it mid-word ("0 not judge", "d)").
    match terminal::stdout_columns() {
        Some(w) => human::wrap_with(&line, w, "    ").join("\n"),
        None => line,
    }
}

/// A finished scenario's line (its rows, when wrapped) on stdout.
pub(super) fn print_rows(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// A bar across the scenarios on a terminal; nothing but the finished lines on a pipe.
pub(super) struct Progress {
    pub(super) bar: Option<ProgressBar>,
}

impl Progress {
    pub(super) fn new(len: u64) -> Progress {
        let bar = std::io::stdout().is_terminal().then(|| {
            let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stdout());
            if let Ok(style) = ProgressStyle::with_template(
                "{bar:24} {pos}/{len} scenarios; playing {msg} (for {elapsed})",
            ) {
                bar.set_style(style);
            }
            bar.enable_steady_tick(Duration::from_millis(500));
            bar
        });
        Progress { bar }
    }

    pub(super) fn start(&mut self, scenario: &str, label: &str) {
        if let Some(bar) = &self.bar {
            // Its length on the scenario clock, to compare with the time elapsed.
            let length = crate::simulator::sim::scenarios::by_name(scenario)
                .map_or(String::new(), |s| format!(", {} s long", s.end));
            bar.set_message(format!("{label}{length}"));
        }
    }

    pub(super) fn finished(&mut self, line: &str) {
        match &self.bar {
            Some(bar) => {
                // Written with the bar out of the way rather than by `println`, which pads each
                // row to the terminal's width so that the terminal takes the rows of a wrapped
                // line for one line it wrapped itself.
                bar.suspend(|| print_rows(line));
                bar.inc(1);
            }
            None => {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{line}");
                let _ = out.flush();
            }
        }
    }

    pub(super) fn clear(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

/// `--junit` and `--grade-json`, with what was played so far.
pub(super) fn write_reports(
    args: &CertifySettings,
    outcomes: &[Outcome],
    json: &str,
) -> anyhow::Result<()> {
    if let Some(path) = &args.junit {
        std::fs::write(path, junit(outcomes))
            .with_context(|| format!("writing the JUnit report to {}", path.display()))?;
    }
    if let Some(path) = &args.grade_json {
        std::fs::write(path, json)
            .with_context(|| format!("writing the grades to {}", path.display()))?;
    }
    if let Some(path) = &args.report {
        write_page(outcomes, path)?;
    }
    Ok(())
}

/// `--report`: one page, a section per scenario played.
pub(super) fn write_page(outcomes: &[Outcome], path: &Path) -> anyhow::Result<()> {
    let command = crate::present::report::command_line("certify");
    let reports: Vec<crate::present::report::Report<'_>> = outcomes
        .iter()
        .filter_map(|o| {
            let p = o.page.as_ref()?;
            Some(crate::present::report::Report {
                command: &command,
                source: format!("scenario {}", o.scenario),
                lines: &p.lines,
                observations: Some(&p.obs),
                grade: Some(&o.grade),
                notes: p.notes.clone(),
            })
        })
        .collect();
    crate::present::report::write_book(&command, &reports, path)
}

/// The matrix row, every scenario's rules, then the verdict line last: what a person (or a CI
/// log's tail) reads first.
pub(super) fn print_summary(
    outcomes: &[Outcome],
    args: &CertifySettings,
    end: &End<'_>,
) -> anyhow::Result<()> {
    let width = terminal::stdout_columns();
    let mut text = summary(outcomes, width);
    let left: Vec<&str> = end
        .names
        .iter()
        .filter(|n| !outcomes.iter().any(|o| &o.scenario == *n))
        .map(String::as_str)
        .collect();
    if end.interrupted && !left.is_empty() {
        let line = format!("certify: interrupted; not played: {}", left.join(", "));
        push_wrapped(&mut text, &line, width);
    }
    push_wrapped(&mut text, &verdict_line(outcomes, args, end), width);
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// `line` and a line break, wrapped between words to `width` (on a terminal), going on 4 in.
fn push_wrapped(text: &mut String, line: &str, width: Option<usize>) {
    let pieces = match width {
        Some(w) => human::wrap_with(line, w, "    "),
        None => vec![line.to_string()],
    };
    for piece in pieces {
        let _ = writeln!(text, "{piece}");
    }
}

/// certify's last word, one line: the verdict and the exit code, the matrix row, the counts over
/// every scenario, and where the files are.
pub(super) fn verdict_line(outcomes: &[Outcome], args: &CertifySettings, end: &End<'_>) -> String {
    let verdict = if end.interrupted {
        "interrupted".to_string()
    } else {
        worst(outcomes).words().to_string()
    };
    let row: Vec<String> = by_scenario(outcomes)
        .into_iter()
        .map(|(scenario, runs)| {
            let fulls: Vec<String> = runs
                .iter()
                .map(|o| crate::grading::matrix::cell(&o.grade))
                .collect();
            let short = crate::grading::matrix::short_over(&fulls);
            format!("{} {short}", sanitize(scenario))
        })
        .collect();
    let (mut pass, mut fail, mut not_judged) = (0, 0, 0);
    for o in outcomes {
        pass += o.grade.counts.pass;
        fail += o.grade.counts.fail;
        not_judged += o.grade.counts.not_judged;
    }
    let per_run = match outcomes.iter().find_map(|o| o.run) {
        Some((_, n)) => format!(" (a folder per run, run-1 to run-{n})"),
        None => String::new(),
    };
    let mut files = vec![format!(
        "client output in {}{per_run}",
        sanitize(&end.dir.to_string_lossy())
    )];
    for (what, path) in [
        ("JUnit", &args.junit),
        ("report", &args.report),
        ("grades", &args.grade_json),
    ] {
        if let Some(p) = path {
            files.push(format!("{what} in {}", sanitize(&p.to_string_lossy())));
        }
    }
    let row = if row.is_empty() {
        "nothing played".to_string()
    } else {
        row.join(", ")
    };
    format!(
        "certify: {verdict} (exit {}): {row}; {pass} passed, {fail} failed, {not_judged} not \
         judged; {}",
        end.code,
        files.join(", ")
    )
}

/// The client's matrix row and one table per scenario, wrapped to `width` when on a terminal.
/// With several runs, a scenario's cell counts how often each verdict came, and its table is
/// shown once per different cell, from the first run that gave it.
pub fn summary(outcomes: &[Outcome], width: Option<usize>) -> String {
    let mut lines = vec![format!(
        "certify: the matrix row of {} ({}; codes: {}), each cell short then in full",
        client_name(outcomes),
        crate::grading::matrix::SHORT_LEGEND,
        crate::grading::matrix::legend()
    )];
    let scenarios = by_scenario(outcomes);
    let name_width = scenarios.iter().map(|(s, _)| s.len()).max().unwrap_or(0);
    let cells: Vec<(String, String)> = scenarios
        .iter()
        .map(|(_, runs)| {
            let fulls: Vec<String> = runs
                .iter()
                .map(|o| crate::grading::matrix::cell(&o.grade))
                .collect();
            (
                crate::grading::matrix::short_over(&fulls),
                crate::grading::matrix::cell_over(&fulls),
            )
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
fn by_scenario(outcomes: &[Outcome]) -> Vec<(&str, Vec<&Outcome>)> {
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
        let cell = crate::grading::matrix::cell(&o.grade);
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
pub(super) fn hang_of(line: &str) -> usize {
    line.rfind("  ")
        .filter(|&i| line.starts_with("  ") && i > 0)
        .map_or(4, |i| i + 2)
}

/// `failover: every rule held (...)` then one row per rule: verdict, name, reason. With
/// several runs the heading names the run, and how many more runs earned the same cell.
pub(super) fn scenario_table(o: &Outcome, alike: usize) -> Vec<String> {
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
pub(super) fn client_name(outcomes: &[Outcome]) -> String {
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

pub(super) fn suite(x: &mut String, o: &Outcome, cases: &[Case]) {
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

/// How the client process ended, in lines: how, when, its stderr's last lines, its output file.
pub(super) fn process_text(p: &ClientProcess) -> String {
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
pub(super) fn allowed_in_xml(c: char) -> bool {
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
