//! `maintwatch demo`: the simulator in-process, watched by the real watch pipeline, on a fresh
//! machine with nothing else running. It is the README's first command, so it must need no setup,
//! no network beyond loopback, and end on its own when the scenario does.
//!
//! The watch is exactly what `maintwatch watch` runs, pointed at the simulator's hostname and
//! nameserver and told the scenario's speed; the simulator's own narration is interleaved, dimmed,
//! so a reader sees cause (what the server did) next to effect (what a client saw).

use crate::cli::simulate::DemoArgs;
use crate::commands::watch::{self, Sink, WatchSettings};
use crate::conn::url::RedisUrl;
use crate::conn::ConnectConfig;
use crate::output::human::{self, Role, Style};
use crate::sim::{scenarios, SimEvent, SimOptions, Simulator, What};
use anyhow::{anyhow, Context};
use std::io::Write;
use std::time::Duration;
use tokio::sync::broadcast::error::RecvError;

/// Where a wrapped narration line continues: under the text after `sim | +  0.000 s  `.
const NARRATION: &str = "                      ";

/// Runs `maintwatch demo`.
pub async fn run(args: &DemoArgs) -> anyhow::Result<i32> {
    let scenario = match &args.scenario_file {
        Some(path) => scenarios::load(path)?,
        None => scenarios::by_name(&args.scenario).ok_or_else(|| {
            anyhow!(
                "no scenario named {:?}; the scenarios are:\n{}",
                args.scenario,
                scenarios::listing().trim_end()
            )
        })?,
    };
    let opts = SimOptions {
        speed: args.speed,
        ..SimOptions::new(scenario)
    };
    let sim = Simulator::start(opts)
        .await
        .context("starting the simulator")?;
    let style = Style::choose(args.color, false);
    let host = sim.hostname().trim_end_matches('.').to_string();
    {
        let s = sim.scenario();
        let mut out = std::io::stdout().lock();
        writeln!(
            out,
            "maintwatch demo: scenario {} at speed {}x",
            s.name, args.speed
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
            .flat_map(|l| human::wrap_with(l, human::WIDTH, "    "))
        {
            writeln!(out, "{line}")?;
        }
        out.flush()?;
    }

    let config = ConnectConfig {
        dns_server: Some(sim.dns_addr()),
        ..ConnectConfig::default()
    };
    let url = RedisUrl {
        tls: false,
        host: host.clone(),
        port: Some(sim.port()),
        user: None,
        password: None,
        db: None,
    };
    let settings = WatchSettings {
        connect: config.options_for(&url)?,
        require: false,
        duration: None,
        count: None,
        json: false,
        capture: args.capture.clone(),
        // Created 0600 and never over an existing file, as `watch --capture` without flags.
        capture_mode: watch::CaptureMode::New,
        traffic: None,
        dns_interval: Duration::from_millis(500),
        dns: true,
        handoff: true,
        handoff_poll: Duration::from_secs(1),
        speed: args.speed,
        speed_given: true,
        color: style.color,
        time: style.time,
        verbose: false,
        countdown: true,
        connections: 1,
        subscribe: Vec::new(),
        tracking: false,
        cluster: watch::ClusterMode::Auto,
        masters_only: false,
    };

    let mut events = sim.events();
    let (notes, notes_rx) = tokio::sync::mpsc::unbounded_channel();
    let narrate = tokio::spawn(async move {
        loop {
            match events.recv().await {
                Ok(e) => {
                    if demo_shows(&e) {
                        // Wrapped before it is painted: the width counts what a reader sees.
                        let text =
                            human::wrap_with(&format!("    sim | {e}"), human::WIDTH, NARRATION);
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
    let mut sink = Sink::new(&settings, Box::new(std::io::stdout()))?;
    let reason = watch::watch(
        &settings,
        &mut sink,
        async {
            let _ = narrate.await;
        },
        Some(notes_rx),
    )
    .await?;
    sim.shutdown().await;
    Ok(reason.exit_code())
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
            | What::Say { .. }
            | What::Finished { .. }
            | What::Error { .. }
    )
}
