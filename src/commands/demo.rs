//! `maintwatch demo`: the simulator in-process, watched by a client, on a fresh machine with
//! nothing else running. It is the README's first command, so it must need no setup, no network
//! beyond loopback, and end on its own when the scenario does.
//!
//! The client here is deliberately minimal (resolve through the simulator's DNS, HELLO 3, opt in,
//! print each push beside its bytes, time the close, reconnect) and sits behind one function,
//! [`minimal_watch`], so the real watch pipeline can take its place without touching the rest.

use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc;

use crate::cli::simulate::DemoArgs;
use crate::dns::{DnsOptions, DnsResolver};
use crate::escape::escape;
use crate::exit;
use crate::notification::{classify, Classified};
use crate::resp::{encode_command, Frame, StreamReader};
use crate::sim::{scenarios, SimEvent, SimOptions, Simulator, What};

/// Where the watched database is: what a user would give a client.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub hostname: String,
    pub port: u16,
    /// The nameserver to resolve with (the simulator's).
    pub nameserver: SocketAddr,
    /// The scenario speed: offsets are shown in scenario seconds (wall-clock seconds x speed).
    pub speed: f64,
}

/// Runs `maintwatch demo`.
pub async fn run(args: &DemoArgs) -> anyhow::Result<i32> {
    let scenario = scenarios::by_name(&args.scenario).ok_or_else(|| {
        anyhow!(
            "no scenario named {:?}; the scenarios are:\n{}",
            args.scenario,
            scenarios::listing().trim_end()
        )
    })?;
    let opts = SimOptions {
        speed: args.speed,
        ..SimOptions::new(scenario)
    };
    let sim = Simulator::start(opts)
        .await
        .context("starting the simulator")?;
    let mut events = sim.events();
    let stdout = std::io::stdout();
    {
        let s = sim.scenario();
        let mut out = stdout.lock();
        writeln!(
            out,
            "maintwatch demo: scenario {} at speed {}x",
            s.name, args.speed
        )?;
        writeln!(out, "  {}", s.about)?;
        writeln!(
            out,
            "  simulator: {} port {}, DNS {}; 'sim' lines are what it does, 'watch' lines what a client sees;",
            sim.hostname().trim_end_matches('.'),
            sim.port(),
            sim.dns_addr()
        )?;
        writeln!(
            out,
            "  times are scenario seconds (wall-clock seconds x {})",
            args.speed
        )?;
        out.flush()?;
    }

    let endpoint = Endpoint {
        hostname: sim.hostname().trim_end_matches('.').to_string(),
        port: sim.port(),
        nameserver: sim.dns_addr(),
        speed: args.speed,
    };
    let (lines_tx, mut lines) = mpsc::unbounded_channel();
    let client = tokio::spawn(minimal_watch(endpoint, lines_tx));
    let interrupted = tokio::signal::ctrl_c();
    tokio::pin!(interrupted);
    let code = loop {
        tokio::select! {
            // The simulator narrates a step before its frames leave, so read it first: the
            // output then reads cause, then effect.
            biased;
            event = events.recv() => match event {
                Ok(e) => {
                    if demo_shows(&e) {
                        let mut out = stdout.lock();
                        writeln!(out, "sim   {e}")?;
                        out.flush()?;
                    }
                    if matches!(e.what, What::Finished { .. }) {
                        break exit::SUCCESS;
                    }
                }
                Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => break exit::SUCCESS,
            },
            Some(line) = lines.recv() => {
                let mut out = stdout.lock();
                writeln!(out, "watch {line}")?;
                out.flush()?;
            }
            _ = &mut interrupted => break exit::INTERRUPTED,
        }
    };
    client.abort();
    // A client error (it could not even connect) is worth showing; it does not fail the demo
    // unless nothing was ever watched.
    let outcome = client.await;
    let mut out = stdout.lock();
    while let Ok(line) = lines.try_recv() {
        writeln!(out, "watch {line}")?;
    }
    if let Ok(Err(e)) = outcome {
        writeln!(out, "watch stopped: {e:#}")?;
    }
    out.flush()?;
    drop(out);
    sim.shutdown().await;
    Ok(code)
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

/// A minimal watch of one endpoint: resolve, connect, HELLO 3, opt in, then print every push
/// parsed beside its exact bytes, and the server's close with its offset after the first opening
/// notification; then resolve again and reconnect, until cancelled. Lines go to `out`.
pub async fn minimal_watch(
    endpoint: Endpoint,
    out: mpsc::UnboundedSender<String>,
) -> anyhow::Result<()> {
    // No cache, only the simulator's nameserver: the answer is what it says now.
    let resolver = DnsResolver::new(&DnsOptions {
        server: Some(endpoint.nameserver),
        timeout: Duration::from_secs(1),
    })?;
    let started = Instant::now();
    let say = |text: String| {
        // The receiver goes away only when the demo is over.
        let t = started.elapsed().as_secs_f64() * endpoint.speed;
        let _ = out.send(format!("+{t:7.3} s  {text}"));
    };
    let mut first_opening: Option<(Instant, String)> = None;
    let mut connections = 0;
    loop {
        let addrs: Vec<IpAddr> = match resolver.resolve_for_connect(&endpoint.hostname).await {
            Ok(addrs) => addrs,
            Err(e) => {
                say(format!("resolving {} failed: {e}", endpoint.hostname));
                Vec::new()
            }
        };
        let Some(&ip) = addrs.first() else {
            tokio::time::sleep(Duration::from_millis(250)).await;
            continue;
        };
        let addr = SocketAddr::new(ip, endpoint.port);
        let listed: Vec<String> = addrs.iter().map(|a| a.to_string()).collect();
        let mut stream = match TcpStream::connect(addr).await {
            Ok(s) => s,
            Err(e) => {
                say(format!(
                    "{} -> {}; connecting to {addr} failed: {e}; retrying",
                    endpoint.hostname,
                    listed.join(" ")
                ));
                tokio::time::sleep(Duration::from_millis(250)).await;
                continue;
            }
        };
        connections += 1;
        say(format!(
            "{} -> {}; connected to {addr}",
            endpoint.hostname,
            listed.join(" ")
        ));
        let mut reader = StreamReader::default();
        stream
            .write_all(&encode_command(&["HELLO", "3"]))
            .await
            .context("sending HELLO 3")?;
        stream
            .write_all(&encode_command(&["CLIENT", "MAINT_NOTIFICATIONS", "ON"]))
            .await
            .context("sending the opt-in")?;
        // Replies expected, in order: HELLO's, then the opt-in's. Pushes may arrive in between.
        let mut replies = 0;
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = stream.read(&mut buf).await.unwrap_or(0);
            if n == 0 {
                let after = match &first_opening {
                    Some((at, what)) => format!(
                        ", {:.1} s after the first opening notification ({what})",
                        at.elapsed().as_secs_f64() * endpoint.speed
                    ),
                    None => String::new(),
                };
                say(format!("connection to {addr} closed by the server{after}"));
                break;
            }
            reader.extend(&buf[..n]);
            let mut lines = Vec::new();
            let drained = reader.drain(|frame, raw, _| {
                if let Frame::Push(_) = frame {
                    match classify(frame) {
                        Classified::Maintenance(note) => {
                            if note.opens() && first_opening.is_none() {
                                let seq = note.seq.map_or("?".into(), |s| s.to_string());
                                first_opening =
                                    Some((Instant::now(), format!("{} seq {seq}", note.kind)));
                            }
                            lines.push(note.describe());
                            if !note.notes.is_empty() {
                                lines.push(format!("    tolerated: {}", note.notes.join("; ")));
                            }
                        }
                        Classified::OtherPush(other) => lines.push(format!(
                            "push that is not a maintenance notification: {}",
                            other.name.as_deref().unwrap_or("(no name)")
                        )),
                        Classified::NotPush => {}
                    }
                    lines.push(format!("    {}", escape(raw)));
                    return;
                }
                replies += 1;
                match (replies, frame) {
                    (1, Frame::Error(e)) => {
                        lines.push(format!("HELLO 3 refused: {}", String::from_utf8_lossy(e)))
                    }
                    (1, _) => lines.push("HELLO 3 answered (RESP3)".into()),
                    (2, Frame::Error(_)) => lines.push(format!("opt-in refused: {}", escape(raw))),
                    (2, _) => lines.push(format!("opt-in answered {}", escape(raw))),
                    _ => lines.push(format!("unexpected reply {}", escape(raw))),
                }
            });
            for line in lines {
                say(line);
            }
            if let Err(e) = drained {
                bail!("the server sent something that is not RESP3: {e}");
            }
        }
        if connections >= 100 {
            bail!("reconnected 100 times; giving up");
        }
    }
}
