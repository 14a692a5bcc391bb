//! The end of a simulated scenario is a test ending, not an incident (issue 25, item 7): the
//! simulator marks it to maintwatch's own connections, and the watch shows "scenario ended",
//! counts no unannounced close and runs no hook for it, round after round of `--loop`.

use crate::common;

use common::scrape;

use maintwatch::observe::record::{line, ClosedBy, WatchLine};
use maintwatch::simulator::sim::{scenarios, SimOptions};

const SPEED: f64 = 20.0;

/// `watch --json --metrics` on a simulator playing `scenario` in a loop.
async fn watch_loop(scenario: &str, extra: &[&str]) -> scrape::Watch {
    let mut opts = SimOptions::new(scenarios::by_name(scenario).expect("a bundled scenario"));
    opts.speed = SPEED;
    opts.repeat = true;
    let mut args = vec!["--metrics", "127.0.0.1:0"];
    args.extend_from_slice(extra);
    scrape::start_with(opts, &args, &[]).await
}

fn scenario_ends(lines: &[WatchLine]) -> usize {
    lines
        .iter()
        .filter(|l| {
            matches!(
                l,
                WatchLine::Closed(line::Closed {
                    by: ClosedBy::ScenarioEnd,
                    ..
                })
            )
        })
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_looped_rounds_end_as_scenario_ends_not_unannounced_closes() {
    let mut w = watch_loop("shard-migration", &[]).await;
    w.until("two scenario ends", |l| scenario_ends(l) >= 2)
        .await;
    let labels = w.labels("");
    let reason = w.labels("reason=\"scenario_end\"");
    let text = w
        .scrape_until("two closes at a scenario's end", |s| {
            s.get(&format!("redis_client_connection_closed_total{reason}"))
                .is_some_and(|&n| n >= 2.0)
        })
        .await;
    let samples = scrape::samples(&text);
    let unannounced = samples
        .get(&format!("maintwatch_unannounced_closes_total{labels}"))
        .copied()
        .unwrap_or(0.0);
    assert_eq!(unannounced, 0.0, "{text}");
    // No close line of the loop is an unannounced one.
    assert!(
        !w.seen.iter().any(|l| matches!(l,
            WatchLine::Closed(c) if !c.announced && c.by == ClosedBy::Server)),
        "{:#?}",
        w.seen
    );
    // A person reads "scenario ended", on the marker and on the close.
    let human: String = w
        .seen
        .iter()
        .flat_map(|l| maintwatch::present::output::human::render(l, &Default::default()))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        human.contains("scenario ended: the simulator closed the connection"),
        "{human}"
    );
    assert!(!human.contains("unannounced"), "{human}");
    assert_eq!(w.interrupt().await, 130);
}
