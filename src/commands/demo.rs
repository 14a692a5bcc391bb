//! `maintwatch demo`: the simulator in-process, watched by the real watch pipeline, on a fresh
//! machine with nothing else running. It is the README's first command, so it must need no setup,
//! no network beyond loopback, and end on its own when the scenario does.
//!
//! The watch is exactly what `maintwatch watch` runs, pointed at the simulator's hostname and
//! nameserver and told the scenario's speed; the simulator's own narration is interleaved
//! ([`crate::simulator::simulation::demo_view`]).

use crate::cli::simulate::DemoSettings;
use crate::network::conn::url::RedisUrl;
use crate::network::conn::ConnectConfig;
use crate::observe::timeline::ScenarioClock;
use crate::present::output::human::{self, Style};
use crate::present::report::capture_page::{self, TempCapture};
use crate::simulator::sim::{scenarios, SimOptions, Simulator};
use crate::simulator::simulation::demo_view::{narrate, print_header};
use crate::watch::{self, WatchSettings};
use anyhow::Context;
use std::io::Write;

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
        (Some(_), None) => Some(TempCapture::new("demo")),
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
        let source = format!("scenario {scenario} (the built-in simulator, watched)");
        capture_page::write_page(page, capture, "demo", source)?;
    }
    drop(temp);
    Ok(reason.exit_code())
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
