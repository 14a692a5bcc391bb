//! Waiting on the simulator's narration (its broadcast of what it did), for the tests that play
//! a scenario in-process: by event, never by time.

use maintwatch::simulator::sim::{SimEvent, What};
use tokio::sync::broadcast;

/// Waits for the first event matching `pred`.
pub async fn wait_for(
    events: &mut broadcast::Receiver<SimEvent>,
    pred: impl Fn(&What) -> bool,
) -> SimEvent {
    loop {
        match events.recv().await {
            Ok(e) if pred(&e.what) => return e,
            Ok(_) => {}
            Err(broadcast::error::RecvError::Lagged(n)) => panic!("narration lagged by {n}"),
            Err(broadcast::error::RecvError::Closed) => panic!("narration ended"),
        }
    }
}

/// Every event until the scenario ends, its end included.
pub async fn until_finished(events: &mut broadcast::Receiver<SimEvent>) -> Vec<SimEvent> {
    let mut seen = Vec::new();
    loop {
        let e = events.recv().await.expect("narration");
        let done = matches!(e.what, What::Finished { .. });
        seen.push(e);
        if done {
            return seen;
        }
    }
}
