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
use crate::sim::grade;
use crate::sim::scenario::{Mode, Start};
use crate::sim::upstream::{SpawnedRedis, Upstream};
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
    let scenario = scenarios::chosen(&args.scenario, args.scenario_file.as_deref())?;
    // Started before the simulator so that a redis-server that cannot start stops everything
    // before anything is printed; dropped (killed) on every path out of here.
    let (upstream, spawned) = match args.upstream.as_deref() {
        None => (None, None),
        Some("spawn") => {
            let s = SpawnedRedis::start().await.map_err(|e| anyhow!(e))?;
            (Some(s.upstream()), Some(s))
        }
        Some(url) => match Upstream::parse(url) {
            Ok(up) => (Some(up), None),
            Err(e) => {
                // The URL's parse error is already redacted (no password in it).
                eprintln!("maintwatch simulate: error: --upstream: {e}");
                return Ok(exit::USAGE);
            }
        },
    };
    let opts = SimOptions {
        upstream: upstream.clone(),
        traffic: args.grade || args.grade_json.is_some(),
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
    // Registered before the banner: `ctrl_c()` only installs its handler when first polled, so a
    // Ctrl-C right after the `try` lines appeared killed the process instead of ending it with
    // the simulator shut down and exit 130.
    let interrupted = tokio::signal::ctrl_c();
    tokio::pin!(interrupted);
    if poll_once(interrupted.as_mut()).await.is_some() {
        sim.shutdown().await;
        return Ok(exit::INTERRUPTED);
    }
    {
        let mut out = stdout.lock();
        banner(&mut out, &sim, args)?;
        if let Some(up) = &upstream {
            let how = if spawned.is_some() {
                " (redis-server started for this run)"
            } else {
                ""
            };
            writeln!(
                out,
                "  upstream  {}{how}: every other command is relayed there",
                up.addr
            )?;
        }
        out.flush()?;
    }

    let grading = args.grade || args.grade_json.is_some();
    let mut seen: Vec<SimEvent> = Vec::new();
    let mut lost = 0;
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
                    if grading {
                        seen.push(e);
                    }
                    if done {
                        break exit::SUCCESS;
                    }
                }
                Err(RecvError::Lagged(n)) => {
                    lost += n;
                    writeln!(stdout.lock(), "({n} events not shown: the terminal was too slow)")?;
                }
                Err(RecvError::Closed) => break exit::SUCCESS,
            },
            _ = &mut interrupted => break exit::INTERRUPTED,
        }
    };
    let scenario = sim.scenario().clone();
    sim.shutdown().await;
    if let Some(s) = spawned {
        s.stop().await;
    }
    if !grading || code != exit::SUCCESS {
        return Ok(code);
    }
    let obs = grade::observations(&scenario, &seen);
    let g = crate::judge::judge(&obs);
    {
        let mut out = stdout.lock();
        write!(out, "{}", g.table())?;
        if lost > 0 {
            writeln!(
                out,
                "grade: {lost} events were lost (the output was too slow); figures may be low"
            )?;
        }
        out.flush()?;
    }
    if let Some(path) = &args.grade_json {
        let json = crate::judge::lines::write(&obs, &g)?;
        std::fs::write(path, json)
            .with_context(|| format!("writing the grade to {}", path.display()))?;
    }
    Ok(if g.passed {
        exit::SUCCESS
    } else {
        exit::FAILURE
    })
}

/// Polls a future once (so that it registers what it waits for) without waiting for it.
async fn poll_once<F: std::future::Future + Unpin>(f: F) -> Option<F::Output> {
    tokio::select! {
        biased;
        out = f => Some(out),
        _ = std::future::ready(()) => None,
    }
}

/// Which events a `--quiet` run still prints: the scenario's own steps.
fn shown(e: &SimEvent, quiet: bool) -> bool {
    // Traffic is for the grade: one line per read would drown the narration.
    if matches!(e.what, What::Traffic { .. }) {
        return false;
    }
    !quiet
        || !matches!(
            e.what,
            What::Connected { .. }
                | What::Command { .. }
                | What::OptIn { .. }
                | What::Sent { .. }
                | What::Disconnected { .. }
                | What::ClientInfo { .. }
                | What::Resolved { .. }
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
    try_lines(out, sim, args)
}

/// The variable the password travels in: `simulate` reads it (as `--password`'s environment
/// variable), and the `try` lines pass it on, so the password is never printed.
const PASSWORD_VAR: &str = "MAINTWATCH_SIM_PASSWORD";

/// Commands that work against this simulator as printed: with a password they take it from
/// `$MAINTWATCH_SIM_PASSWORD` through `REDISCLI_AUTH`, which both maintwatch and redis-cli read.
fn try_lines(out: &mut impl Write, sim: &Simulator, args: &SimulateArgs) -> std::io::Result<()> {
    let first = sim.proxies()[0];
    let dns = sim.dns_addr();
    let host = sim.host();
    let speed = if args.speed == 1.0 {
        String::new()
    } else {
        format!(" --sim-speed {}", args.speed)
    };
    let (auth, user) = match (&args.password, &args.user) {
        (None, _) => (String::new(), String::new()),
        (Some(_), u) => (
            format!("REDISCLI_AUTH=\"${PASSWORD_VAR}\" "),
            u.as_ref()
                .map(|u| format!(" --user {u}"))
                .unwrap_or_default(),
        ),
    };
    writeln!(
        out,
        "  try       {auth}maintwatch watch redis://{host}:{}{user} --dns-server {dns}{speed}",
        first.port()
    )?;
    writeln!(
        out,
        "            {auth}redis-cli -3 -h {} -p {}{user}    then: CLIENT MAINT_NOTIFICATIONS ON",
        first.ip(),
        first.port()
    )?;
    writeln!(
        out,
        "            dig @{} -p {} {host}",
        dns.ip(),
        dns.port()
    )?;
    if args.password.is_some() {
        writeln!(
            out,
            "            (the password is not shown: in that shell, export {PASSWORD_VAR}=<the \
             password>; started with that variable instead of --password, it is already set)"
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        simulate: SimulateArgs,
    }

    async fn banner_of(list: &[&str]) -> String {
        let args = T::try_parse_from(std::iter::once("simulate").chain(list.iter().copied()))
            .unwrap()
            .simulate;
        let mut opts = SimOptions::new(scenarios::by_name(&args.scenario).unwrap());
        opts.password = args.password.clone();
        opts.user = args.user.clone();
        let sim = Simulator::start(opts).await.unwrap();
        let mut out = Vec::new();
        banner(&mut out, &sim, &args).unwrap();
        sim.shutdown().await;
        String::from_utf8(out).unwrap()
    }

    /// With `--password` the `try` lines had no way to authenticate.
    #[tokio::test]
    async fn try_lines_authenticate_without_showing_the_password() {
        let text = banner_of(&["--password", "s3cret-Pw", "--user", "app"]).await;
        assert!(!text.contains("s3cret-Pw"), "{text}");
        let tries: Vec<&str> = text
            .lines()
            .skip_while(|l| !l.contains("try "))
            .take(2)
            .collect();
        assert_eq!(tries.len(), 2, "{text}");
        for line in tries {
            assert!(
                line.contains("REDISCLI_AUTH=\"$MAINTWATCH_SIM_PASSWORD\" "),
                "{line}"
            );
            assert!(line.contains("--user app"), "{line}");
        }
        assert!(text.contains("export MAINTWATCH_SIM_PASSWORD="), "{text}");

        let open = banner_of(&[]).await;
        assert!(
            !open.contains("REDISCLI_AUTH") && !open.contains("--user"),
            "{open}"
        );
    }
}
