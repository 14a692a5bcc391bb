//! What `demo` shows of the simulator beside the watch: a header saying what runs and how to
//! read it, and the simulator's narration of the steps (not of every connection), dimmed and
//! wrapped, as notes interleaved with the watch's lines, so a reader sees cause (what the server
//! did) next to effect (what a client saw).

use crate::present::output::human::{self, Role, Style};
use crate::simulator::sim::{SimEvent, Simulator, What};
use std::io::Write;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::task::JoinHandle;

/// Where a wrapped narration line continues: under the text after `sim | +  0.000 s  `.
const NARRATION: &str = "                      ";

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
pub fn print_header(sim: &Simulator, host: &str, speed: f64, width: usize) -> anyhow::Result<()> {
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

/// The simulator's narration, dimmed, as notes for the watch; the task ends with the scenario.
pub fn narrate(sim: &Simulator, style: Style) -> (JoinHandle<()>, UnboundedReceiver<String>) {
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
