//! `maintwatch demo`: the simulator in-process, watched by the real watch pipeline, on a fresh
//! machine with nothing else running. It is the README's first command, so it must need no setup,
//! no network beyond loopback, and end on its own when the scenario does.
//!
//! The watch is exactly what `maintwatch watch` runs, pointed at the simulator's hostname and
//! nameserver and told the scenario's speed; the simulator's own narration is interleaved, dimmed,
//! so a reader sees cause (what the server did) next to effect (what a client saw).

use crate::cli::simulate::DemoSettings;
use crate::network::conn::url::RedisUrl;
use crate::network::conn::ConnectConfig;
use crate::observe::timeline::ScenarioClock;
use crate::present::output::human::{self, Role, Style};
use crate::simulator::sim::{scenarios, SimEvent, SimOptions, Simulator, What};
use crate::watch::{self, WatchSettings};
use anyhow::Context;
use std::io::Write;
use tokio::sync::broadcast::error::RecvError;

/// Where a wrapped narration line continues: under the text after `sim | +  0.000 s  `.
const NARRATION: &str = "                      ";

/// Runs `maintwatch demo`.
pub async fn run(args: &DemoSettings) -> anyhow::Result<i32> {
    // People who met `simulate --list` try it here too: the same list, not a usage error.
    if args.list {
        let mut out = std::io::stdout().lock();
        let columns = crate::present::output::terminal::stdout_columns();
        let row = |lead: &str, about: &str| human::hanging_at(lead, about, columns);
        write!(out, "{}", scenarios::listing_by(row))?;
        out.flush()?;
        return Ok(crate::exit::SUCCESS);
    }
    let scenario = args.scenario.load()?;
    let opts = SimOptions {
        speed: args.speed,
        // The demo ends its watch with the scenario: no close follows to be marked.
        mark_end: false,
        ..SimOptions::new(scenario)
    };
    let sim = Simulator::start(opts)
        .await
        .context("starting the simulator")?;
    let style = args.style;
    let host = sim.host().to_string();
    print_header(&sim, &host, args.speed, style.width)?;

    let mut settings = settings(&sim, &host, args, style)?;
    // The page is drawn from the watch's own lines: from the capture, a temporary one when
    // none was asked for.
    let temp = match (&args.report, &args.capture) {
        (Some(_), None) => Some(temp_capture()),
        _ => None,
    };
    if let Some(t) = &temp {
        settings.output.capture = Some(t.0.clone());
    }

    let (narrate, notes_rx) = narrate(&sim, style);
    let mut sinks = settings.sinks(std::io::stdout())?;
    let reason = watch::watch(
        &settings,
        &mut sinks,
        async {
            let _ = narrate.await;
        },
        Some(notes_rx),
    )
    .await?;
    let scenario = sim.scenario().name.clone();
    sim.shutdown().await;
    if let (Some(page), Some(capture)) = (&args.report, &settings.output.capture) {
        write_report(page, capture, &scenario)?;
    }
    drop(temp);
    Ok(reason.exit_code())
}

/// A capture file of this process's own, removed when dropped.
struct TempCapture(std::path::PathBuf);

impl Drop for TempCapture {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn temp_capture() -> TempCapture {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let name = format!("maintwatch-demo-{}-{nanos}.jsonl", std::process::id());
    // The capture sink refuses a file that exists: a file someone else put at that name is
    // never written through.
    TempCapture(std::env::temp_dir().join(name))
}

/// `--report`: the watch's lines read back from its capture and drawn. The capture was written
/// a moment ago by this process, for one endpoint, so each line is read as it was written
/// (`replay`'s reader, for captures of unknown origin, is not needed and is another command's).
fn write_report(
    page: &std::path::Path,
    capture: &std::path::Path,
    scenario: &str,
) -> anyhow::Result<()> {
    use std::io::BufRead;
    let file =
        std::fs::File::open(capture).with_context(|| format!("reading {}", capture.display()))?;
    let mut lines = crate::present::report::Collected::default();
    for text in std::io::BufReader::new(file).split(b'\n') {
        let mut text = text.with_context(|| format!("reading {}", capture.display()))?;
        // A line that does not read (a torn last line) is left out of the page.
        if let Ok(line) = crate::observe::record::WatchLine::from_json(&mut text) {
            lines.line(&line);
        }
    }
    crate::present::report::Report {
        command: &crate::present::report::command_line("demo"),
        source: format!("scenario {scenario} (the built-in simulator, watched)"),
        lines: &lines,
        observations: None,
        grade: None,
        notes: Vec::new(),
    }
    .write(page)
}

/// The simulator's side that helps read the client's: the steps, not every connection.
fn demo_shows(e: &SimEvent) -> bool {
    matches!(
        e.what,
        What::Started { .. }
            | What::Pushed { .. }
            | What::Dns { .. }
            | What::Closed { .. }
            | What::Listening { .. }
            | What::Assigned { .. }
            | What::AzurePublished { .. }
            | What::Say { .. }
            | What::Stalled { .. }
            | What::Finished { .. }
            | What::Error { .. }
    )
}

/// What the demo runs and how to read it, before the first line of the watch.
fn print_header(sim: &Simulator, host: &str, speed: f64, width: usize) -> anyhow::Result<()> {
    let s = sim.scenario();
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "maintwatch demo: scenario {} at speed {speed}x",
        s.name
    )?;
    let header = [
        format!("  {}", s.about),
        format!("  simulator: redis://{host}:{}", sim.port()),
        format!(
            "  proxies {}, DNS {}",
            sim.proxies()
                .iter()
                .map(|p| p.ip().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            sim.dns_addr()
        ),
        "  offsets: scenario seconds after the event; 'sim |' lines: what the server did"
            .to_string(),
    ];
    for line in header
        .iter()
        .flat_map(|l| human::wrap_with(l, width, "    "))
    {
        writeln!(out, "{line}")?;
    }
    out.flush()?;
    Ok(())
}

/// The watch's settings with no flags, pointed at the simulator's hostname and nameserver and
/// told the scenario's speed.
fn settings(
    sim: &Simulator,
    host: &str,
    args: &DemoSettings,
    style: Style,
) -> anyhow::Result<WatchSettings> {
    let config = ConnectConfig {
        dns_server: Some(sim.dns_addr()),
        ..ConnectConfig::default()
    };
    let url = RedisUrl {
        tls: false,
        host: host.to_string(),
        port: Some(sim.port()),
        user: None,
        password: None,
        db: None,
    };
    let mut settings = WatchSettings::new(config.options_for(&url)?);
    settings.clock = ScenarioClock::new(args.speed)?;
    settings.speed_given = true;
    // The simulator's host is no Azure Cache name: its Azure scenarios need the channel asked for.
    settings.engine.azure_events = sim.scenario().is_azure();
    settings.output.capture = args.capture.clone();
    settings.output.color = style.color;
    settings.output.time = style.time;
    settings.output.width = style.width;
    Ok(settings)
}

/// The simulator's narration, dimmed, as notes for the watch; the task ends with the scenario.
fn narrate(
    sim: &Simulator,
    style: Style,
) -> (
    tokio::task::JoinHandle<()>,
    tokio::sync::mpsc::UnboundedReceiver<String>,
) {
    let mut events = sim.events();
    let (notes, notes_rx) = tokio::sync::mpsc::unbounded_channel();
    let narrate = tokio::spawn(async move {
        loop {
            match events.recv().await {
                Ok(e) => {
                    if demo_shows(&e) {
                        // Wrapped before it is painted: the width counts what a reader sees.
                        let text =
                            human::wrap_with(&format!("    sim | {e}"), style.width, NARRATION);
                        let _ = notes.send(style.paint(Role::Dim, &text.join("\n")));
                    }
                    if matches!(e.what, What::Finished { .. }) {
                        return;
                    }
                }
                Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => return,
            }
        }
    });
    (narrate, notes_rx)
}
