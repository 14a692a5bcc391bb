//! `maintwatch simulate`: run a scenario on loopback and narrate it, for a person pointing a
//! client at it.
//!
//! The first thing printed is everything needed to connect (proxy addresses, the DNS server, the
//! hostname, whether a password is needed), then one line per thing the simulator does, as it does
//! it. Without `--loop` the command ends with the scenario.

use std::io::Write;

use anyhow::{anyhow, Context};
use tokio::sync::broadcast::error::RecvError;

use crate::cli::simulate::SimulateArgs;
use crate::exit;
use crate::sim::scenario::{Mode, Start};
use crate::sim::{scenarios, SimEvent, SimOptions, Simulator, What};

/// Runs `maintwatch simulate`.
pub async fn run(args: &SimulateArgs) -> anyhow::Result<i32> {
    let stdout = std::io::stdout();
    if args.list {
        let mut out = stdout.lock();
        write!(out, "{}", scenarios::listing())?;
        out.flush()?;
        return Ok(exit::SUCCESS);
    }
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
        port: args.port,
        password: args.password.clone(),
        user: args.user.clone(),
        catch_up: !args.no_catch_up,
        repeat: args.repeat,
        ..SimOptions::new(scenario)
    };
    let sim = Simulator::start(opts)
        .await
        .context("starting the simulator")?;
    let mut events = sim.events();
    {
        let mut out = stdout.lock();
        banner(&mut out, &sim, args)?;
        out.flush()?;
    }

    let interrupted = tokio::signal::ctrl_c();
    tokio::pin!(interrupted);
    let code = loop {
        tokio::select! {
            event = events.recv() => match event {
                Ok(e) => {
                    let done = !args.repeat && matches!(e.what, What::Finished { .. });
                    if shown(&e, args.quiet) {
                        let mut out = stdout.lock();
                        writeln!(out, "{e}")?;
                        out.flush()?;
                    }
                    if done {
                        break exit::SUCCESS;
                    }
                }
                Err(RecvError::Lagged(n)) => {
                    writeln!(stdout.lock(), "({n} events not shown: the terminal was too slow)")?;
                }
                Err(RecvError::Closed) => break exit::SUCCESS,
            },
            _ = &mut interrupted => break exit::INTERRUPTED,
        }
    };
    sim.shutdown().await;
    Ok(code)
}

/// Which events a `--quiet` run still prints: the scenario's own steps.
fn shown(e: &SimEvent, quiet: bool) -> bool {
    !quiet
        || !matches!(
            e.what,
            What::Connected { .. }
                | What::Command { .. }
                | What::OptIn { .. }
                | What::Sent { .. }
                | What::Disconnected { .. }
        )
}

fn banner(out: &mut impl Write, sim: &Simulator, args: &SimulateArgs) -> std::io::Result<()> {
    let s = sim.scenario();
    writeln!(
        out,
        "maintwatch simulator: scenario {} ({}), speed {}x{}",
        s.name,
        s.source,
        args.speed,
        if args.repeat { ", looping" } else { "" }
    )?;
    writeln!(out, "  {}", s.about)?;
    let proxies: Vec<String> = sim
        .proxies()
        .iter()
        .zip(&s.proxies)
        .map(|(addr, ip)| {
            if s.initially_down.contains(ip) {
                format!("{addr} (not listening yet)")
            } else {
                addr.to_string()
            }
        })
        .collect();
    writeln!(out, "  proxies   {}", proxies.join("  "))?;
    let records: Vec<String> = s.dns.iter().map(|a| a.to_string()).collect();
    writeln!(
        out,
        "  DNS       {} (UDP and TCP): {} -> {} (TTL {} s)",
        sim.dns_addr(),
        sim.hostname(),
        records.join(" "),
        sim.ttl()
    )?;
    // Says whether a password is needed and for whom, never what it is.
    let auth = match (&args.password, &args.user) {
        (None, _) => "none".to_string(),
        (Some(_), Some(u)) => format!("password required for user {u}"),
        (Some(_), None) => "password required (user default)".to_string(),
    };
    writeln!(out, "  auth      {auth}")?;
    let mode = match s.mode {
        Mode::Enterprise => "enterprise: the opt-in is accepted",
        Mode::Refusing => "refusing: the opt-in gets Redis OSS's error",
    };
    writeln!(
        out,
        "  server    {mode}{}",
        if s.is_cluster() {
            ", OSS cluster API"
        } else {
            ""
        }
    )?;
    let start = match s.start {
        Start::Now => "started".to_string(),
        Start::Connect => "starts when a client connects".into(),
        Start::OptIn(1) => "starts when a client opts in (CLIENT MAINT_NOTIFICATIONS ON)".into(),
        Start::OptIn(n) => format!("starts when {n} connections are opted in at once"),
    };
    writeln!(out, "  clock     {start}; the scenario lasts {} s", s.end)?;
    let first = sim.proxies()[0];
    let dns = sim.dns_addr();
    let host = sim.hostname().trim_end_matches('.');
    let speed = if args.speed == 1.0 {
        String::new()
    } else {
        format!(" --sim-speed {}", args.speed)
    };
    writeln!(
        out,
        "  try       maintwatch watch redis://{host}:{} --dns-server {dns}{speed}",
        first.port()
    )?;
    writeln!(
        out,
        "            redis-cli -3 -h {} -p {}    then: CLIENT MAINT_NOTIFICATIONS ON",
        first.ip(),
        first.port()
    )?;
    writeln!(
        out,
        "            dig @{} -p {} {host}",
        dns.ip(),
        dns.port()
    )?;
    Ok(())
}
