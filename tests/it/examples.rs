//! Every example command in README.md, in the command pages of docs/ ([`PAGES`]), in the
//! `--help` texts and in the man pages runs as written. The examples are extracted, not copied
//! here, so an example added or edited later is tested too: a code-block line of those pages or a
//! help/man line is an example when it is a command that runs `maintwatch SUBCOMMAND` (at the
//! start, after `VAR=value`, or after a `|`).
//!
//! Each runs under bash in a scratch directory holding the files the examples name
//! (`endpoints.txt`, `capture.resp`, `my.scn` ...), with `maintwatch` on the PATH, against
//! simulators started here on loopback. What the examples write for a reader is substituted
//! before running: their hostnames and ports become the simulator's, and `watch` gets a
//! `--duration` so that it ends. The expected exit code is the one the example implies: 0, and
//! for `simulate` (which serves until stopped) 130 after a Ctrl-C once it printed its `try`
//! lines. An example followed by `|| echo TEXT` must not print TEXT; `&& echo TEXT` must.
//!
//! TLS examples run against a TLS front (rustls, with a CA made here as `ca.pem`) relaying to the
//! simulator. Not run, with the reason, are only the TLS examples that trust the system roots
//! (they need a certificate from a public CA); they are parsed with the real CLI definition
//! instead, so a renamed flag still fails.

use crate::common;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use clap::{CommandFactory, Parser};
use maintwatch::cli::Cli;
use maintwatch::simulator::sim::{scenarios, Scenario, SimOptions, Simulator};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio_rustls::rustls::pki_types::{pem::PemObject, CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::TlsAcceptor;

/// A hang guard per example: the longest runs a demo at real speed (about 20 s).
const HANG_GUARD: Duration = Duration::from_secs(150);

const SUBCOMMANDS: [&str; 9] = [
    "watch", "probe", "doctor", "decide", "decode", "replay", "simulate", "demo", "pcap",
];

/// A database that accepts the opt-in and does nothing for a long time: every example that
/// connects gets the same answer whenever it runs.
const STEADY: &str = "name steady
about An enterprise database with no maintenance, for the examples test.
proxies 127.0.0.2 127.0.0.3
dns 127.0.0.2
start opt-in
at 3000 say still nothing
end 3600
";

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// One example: the command as written, and where it was found.
#[derive(Debug, Clone)]
struct Example {
    command: String,
    /// The `# comment` after it, if any.
    comment: String,
    sources: Vec<String>,
}

/// The command part of a line, if the line is a maintwatch example.
fn as_example(line: &str) -> Option<(String, String)> {
    let line = line.trim();
    let (command, comment) = split_comment(line);
    let words: Vec<&str> = command.split_whitespace().collect();
    let sub = words.get(maintwatch_at(&words)? + 1)?;
    SUBCOMMANDS
        .contains(sub)
        .then(|| (command.trim().to_string(), comment.trim().to_string()))
}

/// Where a command's words run `maintwatch`: at the start, after `VAR=value` assignments, or
/// after a `|`; `None` when they only mention it.
pub(crate) fn maintwatch_at(words: &[&str]) -> Option<usize> {
    let at = words.iter().position(|w| *w == "maintwatch")?;
    let before = &words[..at];
    let runs = before.is_empty()
        || before.last() == Some(&"|")
        || before
            .iter()
            .all(|w| w.contains('=') && !w.starts_with('-'));
    runs.then_some(at)
}

/// `cmd  # comment` into its two parts; a `#` inside quotes or inside a word stays.
pub(crate) fn split_comment(line: &str) -> (&str, &str) {
    let mut quote = None;
    let mut previous = ' ';
    for (at, c) in line.char_indices() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '#') if previous.is_whitespace() => return (&line[..at], line[at + 1..].trim()),
            _ => {}
        }
        previous = c;
    }
    (line, "")
}

/// The pages whose examples run here: the README and the command pages its depth moved to.
/// The other pages name programs and paths of a reader's own (`--report /var/lib/...`, a client's
/// test app); their commands are parsed with the CLI's definition instead (tests/it/links.rs).
const PAGES: [&str; 11] = [
    "README.md",
    "docs/demo.md",
    "docs/watch.md",
    "docs/probe.md",
    "docs/doctor.md",
    "docs/decide.md",
    "docs/decode.md",
    "docs/replay.md",
    "docs/simulate.md",
    "docs/pcap.md",
    "docs/service.md",
];

/// Lines of a page's code blocks (fenced or indented by four spaces).
fn page_lines(page: &str) -> Vec<String> {
    let text = std::fs::read_to_string(repo().join(page)).unwrap();
    let mut fenced = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced || line.starts_with("    ") {
            out.push(line.to_string());
        }
    }
    out
}

/// The after-help texts (where the examples are) of the program and each subcommand.
fn help_texts() -> Vec<(String, String)> {
    let cli = Cli::command();
    let mut out = vec![("maintwatch --help".to_string(), after_help(&cli))];
    for sub in cli.get_subcommands() {
        out.push((
            format!("maintwatch {} --help", sub.get_name()),
            after_help(sub),
        ));
    }
    out
}

fn after_help(cmd: &clap::Command) -> String {
    let text = cmd
        .get_after_long_help()
        .or_else(|| cmd.get_after_help())
        .map(|s| s.to_string())
        .unwrap_or_default();
    joined(&text)
}

/// A command continued with ` \` on the next line, as one line: the help and the man page may
/// break the same example at different widths.
fn joined(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        if out.ends_with(" \\") {
            out.truncate(out.len() - 1);
            out.push_str(line.trim_start());
        } else {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(line);
        }
    }
    out
}

/// The man pages' lines with roff's escapes undone.
fn man_texts() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(repo().join("man")).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let plain = text
            .replace("\\-", "-")
            .replace("\\*(Aq", "'")
            .replace("\\&", "")
            .replace("\\e", "\\");
        let plain = joined(&plain);
        out.push((
            format!("man/{}", path.file_name().unwrap().to_string_lossy()),
            plain,
        ));
    }
    out
}

/// Every example, each command once, with every place it appears.
fn examples() -> Vec<Example> {
    let mut found: BTreeMap<String, Example> = BTreeMap::new();
    let mut add = |source: &str, line: &str| {
        if let Some((command, comment)) = as_example(line) {
            let e = found.entry(command.clone()).or_insert(Example {
                command,
                comment,
                sources: Vec::new(),
            });
            if !e.sources.iter().any(|s| s == source) {
                e.sources.push(source.to_string());
            }
        }
    };
    for page in PAGES {
        for line in page_lines(page) {
            add(page, &line);
        }
    }
    for (source, text) in help_texts().into_iter().chain(man_texts()) {
        for line in text.lines() {
            add(&source, line);
        }
    }
    found.into_values().collect()
}

#[test]
fn the_extractor_finds_the_examples_of_every_source() {
    let all = examples();
    let from = |source: &str| {
        all.iter()
            .filter(|e| e.sources.iter().any(|s| s.starts_with(source)))
            .count()
    };
    assert!(from("README.md") >= 9, "{all:#?}");
    assert!(from("docs/") >= 15, "{all:#?}");
    assert!(from("maintwatch probe --help") >= 4, "{all:#?}");
    assert!(from("man/") >= 20, "{all:#?}");
    for sub in SUBCOMMANDS {
        assert!(
            from(&format!("maintwatch {sub} --help")) >= 1,
            "no example in the help of {sub}"
        );
    }
    // Transcript lines and prose are not commands.
    assert!(
        all.iter().all(|e| !e.command.contains("maintwatch demo:")),
        "{all:#?}"
    );
    assert!(
        all.iter().all(|e| !e.command.starts_with("try")),
        "{all:#?}"
    );
    // Every help example is in the man page too (they are generated from the same text).
    for e in all
        .iter()
        .filter(|e| e.sources.iter().any(|s| s.ends_with("--help")))
    {
        assert!(
            e.sources.iter().any(|s| s.starts_with("man/")),
            "not in a man page: {e:?}"
        );
    }
    assert_eq!(
        missing_tool("maintwatch decode x | no-such-tool-here ."),
        Some("no-such-tool-here".into())
    );
    assert_eq!(missing_tool("grep x f || echo \"no\""), None);
    assert_eq!(
        missing_tool("no-such-dumper f | maintwatch decode"),
        Some("no-such-dumper".into()),
        "the first stage of a pipeline is a tool too"
    );
    assert_eq!(
        missing_tool("REDISCLI_AUTH=\"$P\" maintwatch probe x && echo ok"),
        None
    );
    assert_eq!(
        split_comment("grep -v '^#' f | maintwatch probe --from - # all"),
        ("grep -v '^#' f | maintwatch probe --from - ", "all")
    );
}

/// The simulators, their TLS fronts, and the files the examples run with.
struct Stage {
    /// The template directory: `bin/maintwatch` and the files every example gets a copy of.
    dir: tempfile::TempDir,
    path: String,
    steady: Simulator,
    /// Requires user `app`, password `secret`.
    guarded: Simulator,
    cluster: Simulator,
    /// TLS (certificate from `ca.pem`, for db.example.net, db and 127.0.0.2) in front of the
    /// steady and the guarded simulator.
    tls_steady: SocketAddr,
    tls_guarded: SocketAddr,
}

impl Stage {
    async fn start() -> Stage {
        let steady = Scenario::parse("steady.scn", STEADY).unwrap();
        let mut guarded = SimOptions::new(steady.clone());
        guarded.user = Some("app".into());
        guarded.password = Some("secret".into());
        let mut cluster = SimOptions::new(scenarios::by_name("oss-cluster").unwrap());
        cluster.repeat = true;
        let steady = Simulator::start(SimOptions::new(steady)).await.unwrap();
        let guarded = Simulator::start(guarded).await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let acceptor = pki(dir.path());
        let stage = Stage {
            tls_steady: tls_front(steady.proxies()[0], acceptor.clone()).await,
            tls_guarded: tls_front(guarded.proxies()[0], acceptor).await,
            dir,
            path: String::new(),
            steady,
            guarded,
            cluster: Simulator::start(cluster).await.unwrap(),
        };
        stage.with_files()
    }

    /// `maintwatch` on the PATH, and the files the examples name.
    fn with_files(mut self) -> Stage {
        let dir = self.dir.path();
        let bin = dir.join("bin");
        std::fs::create_dir(&bin).unwrap();
        std::os::unix::fs::symlink(common::BIN, bin.join("maintwatch")).unwrap();
        self.path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let port = self.steady.port();
        let list = format!("# the fleet\nredis://127.0.0.2:{port}   # primary\n127.0.0.3:{port}\n");
        std::fs::write(dir.join("endpoints.txt"), &list).unwrap();
        std::fs::write(dir.join("fleet.txt"), &list).unwrap();
        let moving =
            std::fs::read(repo().join("tests/fixtures/captures/moving-null-target.resp")).unwrap();
        std::fs::write(dir.join("capture.resp"), &moving).unwrap();
        let hex: Vec<String> = moving.iter().map(|b| format!("{b:02x}")).collect();
        std::fs::write(dir.join("dump.hex"), hex.join(" ")).unwrap();
        std::fs::copy(repo().join("scenarios/failover.scn"), dir.join("my.scn")).unwrap();
        // The client of `simulate --grade -- python3 app.py` / `-- node app.js`: it waits, so the
        // example ends as every `simulate` does here, by a Ctrl-C (which stops the client too).
        std::fs::write(dir.join("app.py"), "import time\ntime.sleep(600)\n").unwrap();
        std::fs::write(dir.join("app.js"), "setTimeout(() => {}, 600000);\n").unwrap();
        // A capture of a maintenance on port 12000, for the `pcap maint.pcap` examples.
        std::fs::copy(
            repo().join("tests/fixtures/pcap/maintenance-v4.pcap"),
            dir.join("maint.pcap"),
        )
        .unwrap();
        self
    }

    /// A capture for `replay maint.jsonl`, written by the tool itself.
    async fn capture(&self) {
        let status = tokio::process::Command::new("maintwatch")
            .args([
                "demo",
                "--scenario",
                "failover",
                "--speed",
                "10",
                "--capture",
                "maint.jsonl",
            ])
            .current_dir(self.dir.path())
            .env("PATH", &self.path)
            .stdout(Stdio::null())
            .status()
            .await
            .unwrap();
        assert!(
            status.success(),
            "the capture for the replay examples: {status}"
        );
    }

    /// A directory of its own for one example (examples write files), with a copy of every
    /// file but the ones it writes, and `tests/` for the fixtures it names.
    fn workdir(&self, command: &str) -> tempfile::TempDir {
        let work = tempfile::tempdir().unwrap();
        for entry in std::fs::read_dir(self.dir.path()).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            let written = command.contains(&format!("> {name}"))
                || command.contains(&format!("--capture {name}"));
            if path.is_file() && !written {
                std::fs::copy(&path, work.path().join(&name)).unwrap();
            }
        }
        std::os::unix::fs::symlink(repo().join("tests"), work.path().join("tests")).unwrap();
        work
    }

    /// The example as it runs here: endpoints and ports made the simulators', `watch` bounded.
    fn substitute(&self, command: &str) -> String {
        let p = self.steady.port();
        let dns = self.steady.dns_addr();
        let guarded = command.contains("--user app");
        let target = if guarded { self.guarded.port() } else { p };
        let tls = if guarded {
            self.tls_guarded
        } else {
            self.tls_steady
        };
        let mut c = command.to_string();
        if c.contains("maintwatch decide") {
            c = c.replace(
                "db.example.net:12000",
                &format!("db.sim.maintwatch.test:{p}"),
            );
            if !c.contains("--dns-server") {
                c.push_str(&format!(" --dns-server {dns}"));
            }
        }
        for (from, to) in [
            ("-h 10.0.0.5 -p 12000", format!("-h 127.0.0.2 -p {target}")),
            ("node-1:7000", format!("127.0.0.2:{}", self.cluster.port())),
            ("10.0.0.7:12000", format!("127.0.0.3:{p}")),
            (
                "db.sim.maintwatch.test:6379",
                format!("db.sim.maintwatch.test:{p}"),
            ),
            (
                "db.sim.maintwatch.test:PORT",
                format!("db.sim.maintwatch.test:{p}"),
            ),
            ("127.0.0.1:5353", dns.to_string()),
            ("127.0.0.1:DNSPORT", dns.to_string()),
            // `--metrics`: a port the system picks, never one something else may hold.
            ("127.0.0.1:9464", "127.0.0.1:0".to_string()),
        ] {
            c = c.replace(from, &to);
        }
        // Endpoint URLs: the example's database becomes the simulator, through TLS for rediss.
        let words: Vec<String> = c
            .split(' ')
            .map(|word| {
                let port = match word {
                    w if w.starts_with("rediss://") => tls.port(),
                    w if w.starts_with("redis://") => target,
                    _ => return word.to_string(),
                };
                let mut w = word.to_string();
                for host in ["db.example.net", "db-1", "db-2", "db", "10.0.0.5"] {
                    for lead in ["//", "@"] {
                        w = w.replace(
                            &format!("{lead}{host}:12000"),
                            &format!("{lead}127.0.0.2:{port}"),
                        );
                    }
                }
                w
            })
            .collect();
        c = words.join(" ");
        c = c.replace("10.0.0.5", "127.0.0.2");
        if c.contains("maintwatch watch") && !c.contains("--duration") && !c.contains("--count") {
            c = c.replace("maintwatch watch", "maintwatch watch --duration 2s");
        }
        c
    }
}

/// A CA (`ca.pem`), a server certificate for the names the TLS examples use, and a client
/// certificate (`me.pem`, `me.key`) for the mutual-TLS one; the acceptor serves the server's.
fn pki(dir: &Path) -> TlsAcceptor {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(DnType::CommonName, "examples CA");
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
    std::fs::write(dir.join("ca.pem"), ca.pem()).unwrap();
    let issue = |names: &[&str], usage| {
        let mut params =
            CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>())
                .unwrap();
        params.extended_key_usages = vec![usage];
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &ca).unwrap();
        (cert.pem(), key.serialize_pem())
    };
    let (me, me_key) = issue(&["me"], ExtendedKeyUsagePurpose::ClientAuth);
    std::fs::write(dir.join("me.pem"), me).unwrap();
    std::fs::write(dir.join("me.key"), me_key).unwrap();
    let (cert, key) = issue(
        &["db.example.net", "db", "127.0.0.2"],
        ExtendedKeyUsagePurpose::ServerAuth,
    );
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert.as_bytes())
        .collect::<Result<_, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_slice(key.as_bytes()).unwrap();
    let config = ServerConfig::builder_with_provider(Arc::new(
        tokio_rustls::rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(chain, key)
    .unwrap();
    TlsAcceptor::from(Arc::new(config))
}

/// Terminates TLS on 127.0.0.2 and relays each connection to `to` in plain text.
async fn tls_front(to: SocketAddr, acceptor: TlsAcceptor) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.2:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let Ok(mut plain) = tokio::net::TcpStream::connect(to).await else {
                    return;
                };
                let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
            });
        }
    });
    addr
}

/// What happened to one example; `Err` says what was wrong.
async fn run(stage: &Stage, e: &Example) -> Result<String, String> {
    let command = stage.substitute(&e.command);
    let long_running = command.contains("maintwatch simulate") && !command.contains("--list");
    let work = stage.workdir(&command);
    let mut cmd = tokio::process::Command::new("bash");
    cmd.arg("-c")
        .arg(&command)
        .current_dir(work.path())
        .env("PATH", &stage.path)
        // Files a command leaves in the temporary directory (a client's output) go with `work`.
        .env("TMPDIR", work.path())
        .env("PASS", "secret")
        .env_remove("REDISCLI_AUTH")
        .env_remove("MAINTWATCH_SIM_PASSWORD")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    if e.comment.contains("REDISCLI_AUTH") {
        cmd.env("REDISCLI_AUTH", "secret");
    }
    let mut child = cmd
        .spawn()
        .map_err(|err| format!("cannot run bash: {err}"))?;
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut stderr = child.stderr.take().unwrap();
    let mut out = String::new();
    let finished = tokio::time::timeout(HANG_GUARD, async {
        if long_running {
            // Serves until stopped: stop it (Ctrl-C) once it said how to connect.
            let mut line = String::new();
            while stdout.read_line(&mut line).await.unwrap_or(0) > 0 {
                if line.contains("  try ") {
                    break;
                }
            }
            out.push_str(&line);
            let pgid = child.id().unwrap().to_string();
            std::process::Command::new("kill")
                .args(["-INT", "--", &format!("-{pgid}")])
                .status()
                .unwrap();
        }
        let mut rest = String::new();
        stdout.read_to_string(&mut rest).await.unwrap();
        out.push_str(&rest);
        child.wait().await.unwrap()
    })
    .await;
    let mut err = String::new();
    let Ok(status) = finished else {
        return Err(format!(
            "hang guard: still running after {HANG_GUARD:?}:\n{out}"
        ));
    };
    stderr.read_to_string(&mut err).await.unwrap();
    let want = if long_running { 130 } else { 0 };
    let got = status.code().unwrap_or(-1);
    let shown =
        format!("ran: {command}\nexit {got}, expected {want}\nstdout:\n{out}\nstderr:\n{err}");
    if got != want {
        return Err(shown);
    }
    if let Some(password) = command
        .split("--password ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
    {
        if out.contains(password) || err.contains(password) {
            return Err(format!("printed the password: {shown}"));
        }
    }
    if let Some(text) = echoed(&command, "|| echo") {
        if out.contains(&text) {
            return Err(format!("printed {text:?}: {shown}"));
        }
    }
    if let Some(text) = echoed(&command, "&& echo") {
        if !out.contains(&text) {
            return Err(format!("did not print {text:?}: {shown}"));
        }
    }
    Ok(shown)
}

/// The text of `|| echo "TEXT"` / `&& echo "TEXT"`.
fn echoed(command: &str, operator: &str) -> Option<String> {
    let after = command.split(operator).nth(1)?;
    Some(after.trim().trim_matches('"').to_string())
}

/// Why an example is not run, if it is not.
fn not_runnable(e: &Example) -> Option<&'static str> {
    let own_trust = e.command.contains("--cacert") || e.command.contains("--insecure");
    if e.command.contains("rediss://") && !own_trust {
        return Some("trusts the system roots: needs a certificate from a public CA");
    }
    None
}

/// The maintwatch part of a command line, split as the shell would (quotes only).
pub(crate) fn maintwatch_args(command: &str) -> Vec<String> {
    let tail = &command[command.find("maintwatch ").unwrap()..];
    let end = tail.find(['|', '>', '<', '&']).unwrap_or(tail.len());
    let mut args = Vec::new();
    let (mut word, mut quote, mut any) = (String::new(), None, false);
    for c in tail[..end].chars() {
        match (quote, c) {
            (None, '\'' | '"') => (quote, any) = (Some(c), true),
            (Some(q), c) if c == q => quote = None,
            (None, c) if c.is_whitespace() => {
                if any || !word.is_empty() {
                    args.push(std::mem::take(&mut word));
                }
                any = false;
            }
            (_, c) => word.push(c),
        }
    }
    if any || !word.is_empty() {
        args.push(word);
    }
    args
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_example_runs_as_written() {
    let stage = std::sync::Arc::new(Stage::start().await);
    stage.capture().await;
    let mut failures = Vec::new();
    let mut tasks = tokio::task::JoinSet::new();
    // A few at a time: each is a process, and demos run a scenario at real speed.
    let permits = std::sync::Arc::new(tokio::sync::Semaphore::new(6));
    let all = examples();
    let mut ran = 0;
    for e in all {
        if let Some(why) = not_runnable(&e) {
            eprintln!(
                "NOT RUN: {} ({why}; from {})",
                e.command,
                e.sources.join(", ")
            );
            if let Err(err) = Cli::try_parse_from(maintwatch_args(&e.command)) {
                failures.push(format!("{}: does not parse: {err}", e.command));
            }
            continue;
        }
        if let Some(tool) = missing_tool(&e.command) {
            crate::common::skip(&e.command, &format!("{tool} is not installed"));
            continue;
        }
        if let Some(dir) = unmatched_glob(&e.command) {
            crate::common::skip(
                &e.command,
                &format!("no .jsonl capture fixture in {dir} yet"),
            );
            continue;
        }
        ran += 1;
        let (stage, permits) = (stage.clone(), permits.clone());
        tasks.spawn(async move {
            let _permit = permits.acquire_owned().await.unwrap();
            let result = run(&stage, &e).await;
            (e, result)
        });
    }
    while let Some(done) = tasks.join_next().await {
        let (e, result) = done.unwrap();
        match result {
            Ok(_) => eprintln!("ok: {}", e.command),
            Err(why) => failures.push(format!(
                "{} (from {}):\n{why}",
                e.command,
                e.sources.join(", ")
            )),
        }
    }
    assert!(ran >= 20, "only {ran} examples ran");
    assert!(
        failures.is_empty(),
        "{} examples failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// A program other than maintwatch that the example runs (`xxd ... |`, `| jq ...`, or the
/// `redis-server` that `--upstream spawn` starts) and that is not on the PATH: the example is
/// fine, this machine lacks the tool.
fn missing_tool(command: &str) -> Option<String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let spawned = command
        .contains("--upstream spawn")
        .then_some("redis-server");
    // `simulate ... -- CMD` runs CMD's program too.
    let client = command
        .split(" -- ")
        .nth(1)
        .and_then(|c| c.split_whitespace().next());
    // A `|` or `;` inside quotes (a jq filter) separates no stages.
    let unquoted = without_quoted(command);
    unquoted
        .replace("||", ";")
        .replace("&&", ";")
        .split(['|', ';'])
        // The program of each stage, past any `NAME=value` assignments before it.
        .filter_map(|part| part.split_whitespace().find(|w| !w.contains('=')))
        .chain(spawned)
        .chain(client)
        .filter(|tool| !["maintwatch", "echo"].contains(tool))
        .find(|tool| !std::env::split_paths(&path).any(|dir| dir.join(tool).is_file()))
        .map(str::to_string)
}

/// `command` with the text inside single or double quotes left out, quotes kept.
fn without_quoted(command: &str) -> String {
    let mut open: Option<char> = None;
    command
        .chars()
        .filter(|&c| match open {
            Some(q) if c == q => {
                open = None;
                true
            }
            Some(_) => false,
            None => {
                if c == '\'' || c == '"' {
                    open = Some(c);
                }
                true
            }
        })
        .collect()
}

/// The directory of a `DIR/*.jsonl` argument that matches no file (the capture fixtures the
/// replay examples name are shipped with the replay work of the same issue).
fn unmatched_glob(command: &str) -> Option<String> {
    let word = command
        .split_whitespace()
        .find(|w| w.ends_with("/*.jsonl"))?;
    let dir = word.trim_end_matches("/*.jsonl");
    let found = std::fs::read_dir(repo().join(dir)).is_ok_and(|d| {
        d.filter_map(Result::ok)
            .any(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
    });
    (!found).then(|| dir.to_string())
}

/// `probe rediss://default@db...` failed with WRONGPASS even with REDISCLI_AUTH set: the lone
/// user-info was read as the password. With a password from the environment it is the user.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_url_user_with_the_password_in_rediscli_auth_authenticates() {
    let steady = Scenario::parse("steady.scn", STEADY).unwrap();
    let mut opts = SimOptions::new(steady);
    opts.password = Some("env-S3cret".into());
    let sim = Simulator::start(opts).await.unwrap();
    let url = format!("redis://default@127.0.0.2:{}", sim.port());
    let out = common::maintwatch_async(["probe", "--json", "--linger", "0", &url])
        .env("REDISCLI_AUTH", "env-S3cret")
        .output()
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(maintwatch::exit::SUCCESS), "{text}");
    assert!(text.contains("\"accepted\""), "{text}");
    assert!(!text.contains("env-S3cret"), "{text}");
    sim.shutdown().await;
}

#[test]
fn cli_parse_accepts_a_known_tls_example() {
    let args = maintwatch_args(
        "maintwatch watch rediss://db:12000 --cacert ca.pem --cert me.pem --key me.key",
    );
    assert_eq!(args[0], "maintwatch");
    assert!(Cli::try_parse_from(&args).is_ok());
    assert!(Cli::try_parse_from(maintwatch_args("maintwatch watch --no-such-flag")).is_err());
    assert_eq!(
        maintwatch_args("maintwatch decode -a \"$PASS x\" '' | jq"),
        ["maintwatch", "decode", "-a", "$PASS x", ""]
    );
}

/// `rediss://user@db...` in the watch help put a *password* there (redis-cli reads a lone
/// user-info as the password). A lone user-info is only right when the example also says where
/// the password comes from (then it is the user name).
#[test]
fn no_example_puts_a_password_where_a_user_name_is_meant() {
    let mut wrong = Vec::new();
    for e in examples() {
        for word in e.command.split_whitespace() {
            let Some(rest) = word.split_once("://").map(|(_, r)| r) else {
                continue;
            };
            let Some((info, _)) = rest.rsplit_once('@') else {
                continue;
            };
            let password_elsewhere = [&e.command, &e.comment].iter().any(|t| {
                t.contains("REDISCLI_AUTH") || t.contains(" -a ") || t.contains("--pass ")
            });
            if !info.contains(':') && !password_elsewhere {
                wrong.push(format!("{} (from {})", e.command, e.sources.join(", ")));
            }
        }
    }
    assert!(wrong.is_empty(), "user name or password? {wrong:#?}");
}
