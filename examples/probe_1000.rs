//! Benchmark: probe 1,000 simulated endpoints the way `maintwatch probe` does.
//!
//! Why an example and not a test: the figure is a wall time, which a test must never assert.
//! The endpoints are 1,000 listeners of a minimal RESP3 responder spread over 250 loopback
//! addresses (127.0.0.1 to 127.0.0.250, four ports each), served by their own runtime on their
//! own threads so the server does not borrow the prober's scheduler. Every endpoint accepts the
//! opt-in; every tenth also replays a catch-up `MIGRATED`, so the reports are not all alike.
//!
//! ```text
//! cargo run --release --example probe_1000                    # library: conn::probe::probe_all
//! cargo run --release --example probe_1000 -- --serve urls.txt  # serve only, for benches/probe_1000.sh
//! ```
//!
//! Options: `--endpoints N` (1000), `--concurrency N` (512, the CLI default), `--linger MS` (50,
//! the CLI default).

use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use maintwatch::network::conn::probe::{self, MaintenanceState, ProbeOutcome};
use maintwatch::network::conn::{ConnectConfig, RedisUrl};
use maintwatch::protocol::resp::StreamReader;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const HELLO_MAP: &[u8] = b"%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$5\r\n7.4.0\r\n\
$5\r\nproto\r\n:3\r\n$2\r\nid\r\n:1\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n\
$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n";
const OK_WITH_CATCH_UP: &[u8] = b"+OK\r\n>3\r\n$8\r\nMIGRATED\r\n:1\r\n$6\r\n[\"27\"]\r\n";

struct Settings {
    endpoints: usize,
    concurrency: usize,
    linger: Duration,
    serve: Option<String>,
}

fn settings() -> Settings {
    let mut s = Settings {
        endpoints: 1000,
        concurrency: 512,
        linger: Duration::from_millis(50),
        serve: None,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value = || it.next().expect("a value after the flag").clone();
        match flag.as_str() {
            "--endpoints" => s.endpoints = value().parse().expect("--endpoints N"),
            "--concurrency" => s.concurrency = value().parse().expect("--concurrency N"),
            "--linger" => s.linger = Duration::from_millis(value().parse().expect("--linger MS")),
            "--serve" => s.serve = Some(value()),
            other => panic!("unknown argument {other:?}"),
        }
    }
    s
}

/// Answers HELLO with a map, the opt-in with `+OK` (plus a catch-up replay when `replay`),
/// anything else with `+PONG`: one reply per command, as a server does.
async fn serve_one(listener: TcpListener, replay: bool) {
    while let Ok((mut s, _)) = listener.accept().await {
        tokio::spawn(async move {
            let mut reader = StreamReader::default();
            let mut buf = [0u8; 2048];
            let mut replies = 0;
            while let Ok(n @ 1..) = s.read(&mut buf).await {
                reader.extend(&buf[..n]);
                let mut commands = 0;
                if reader.drain(|_, _, _| commands += 1).is_err() {
                    return;
                }
                for _ in 0..commands {
                    let reply: &[u8] = match replies {
                        0 => HELLO_MAP,
                        1 if replay => OK_WITH_CATCH_UP,
                        1 => b"+OK\r\n",
                        _ => b"+PONG\r\n",
                    };
                    replies += 1;
                    if s.write_all(reply).await.is_err() {
                        return;
                    }
                }
            }
        });
    }
}

/// Starts the listeners on a runtime of their own and returns their addresses.
fn start_servers(count: usize) -> Vec<SocketAddr> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let mut addrs = Vec::with_capacity(count);
            for i in 0..count {
                let ip = Ipv4Addr::new(127, 0, 0, (i % 250) as u8 + 1);
                let listener = TcpListener::bind((ip, 0)).await.expect("bind a listener");
                addrs.push(listener.local_addr().unwrap());
                tokio::spawn(serve_one(listener, i % 10 == 0));
            }
            tx.send(addrs).unwrap();
            std::future::pending::<()>().await;
        });
    });
    rx.recv().expect("the server runtime starts")
}

fn main() {
    let s = settings();
    let addrs = start_servers(s.endpoints);
    let urls: Vec<String> = addrs.iter().map(|a| format!("redis://{a}")).collect();

    if let Some(path) = &s.serve {
        // Written aside and renamed, so a script waiting for the file never reads half of it.
        let partial = format!("{path}.partial");
        let mut file = std::fs::File::create(&partial).expect("create the URL list");
        for u in &urls {
            writeln!(file, "{u}").unwrap();
        }
        drop(file);
        std::fs::rename(&partial, path).expect("rename the URL list");
        eprintln!(
            "serving {} endpoints, listed in {path}; Ctrl-C to stop",
            urls.len()
        );
        loop {
            std::thread::park();
        }
    }

    let config = ConnectConfig::default();
    let options: Vec<_> = urls
        .iter()
        .map(|u| config.options_for(&RedisUrl::parse(u).unwrap()).unwrap())
        .collect();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let started = Instant::now();
    let reports = rt.block_on(probe::probe_all(
        options,
        None,
        s.concurrency,
        s.linger,
        |_| {},
    ));
    let wall = started.elapsed();

    let accepted = reports
        .iter()
        .filter(|r| r.outcome == ProbeOutcome::Accepted)
        .count();
    let completed = reports
        .iter()
        .filter(|r| matches!(r.maintenance(), Some((MaintenanceState::Completed, _))))
        .count();
    println!(
        "probed {} endpoints in {:.0} ms (concurrency {}, linger {} ms): {accepted} accepted, \
         {completed} with a catch-up replay, exit code {}",
        reports.len(),
        wall.as_secs_f64() * 1000.0,
        s.concurrency,
        s.linger.as_millis(),
        probe::exit_code(&reports),
    );
    if accepted != reports.len() {
        for r in reports
            .iter()
            .filter(|r| r.outcome != ProbeOutcome::Accepted)
            .take(5)
        {
            eprintln!("{}: {:?}", r.endpoint, r.outcome);
        }
        std::process::exit(1);
    }
}
