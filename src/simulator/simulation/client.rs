//! `simulate --grade -- CMD`: the client under test, started and stopped by the simulator.
//!
//! Grading a client used to take a resolver patch: the client must resolve the simulator's host
//! name through the simulator's DNS, which the machine's resolver knows nothing about. Here CMD
//! runs, on Linux, in a private mount namespace whose `/etc/resolv.conf` is a bind mount of a
//! file naming the simulator's DNS on port 53 of a loopback address, so an unmodified client
//! resolves the name as it would in production. The machine's own file is never written: the
//! bind mount exists only inside that namespace and goes away with it. `/etc/hosts` is left as
//! it is. Where a namespace cannot be had (not Linux, no privilege, port 53 taken everywhere),
//! CMD still gets `MAINTWATCH_SIM_*` and docs/simulate.md's recipes show each language's resolver
//! hook.
//!
//! CMD's stdout and stderr go to a file, apart from the narration and the grade; how it ended
//! and the last lines of its stderr become a fact of the grade ([`ClientProcess`]).

use std::ffi::OsString;
use std::io::{self, Write as _};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::{Child, Command};
use tokio::task::JoinHandle;

use crate::observe::evidence::process::ClientProcess;
use crate::simulator::sim::dns_server::SimDns;
use crate::simulator::sim::Simulator;

/// How many of the last stderr lines the grade keeps, and how long each may be.
const TAIL_LINES: usize = 20;
const TAIL_LINE_CHARS: usize = 240;
/// What the output file may hold; past it the rest is read and dropped (a chatty client must
/// not fill the disk), and the file says so.
const OUTPUT_LIMIT: u64 = 64 << 20;
/// Between SIGTERM and SIGKILL.
const GRACE: Duration = Duration::from_secs(5);
/// Loopback addresses tried for the port-53 DNS (127.0.0.53 is systemd-resolved's): several
/// simulators at once each need their own.
const PORT53_HOSTS: std::ops::RangeInclusive<u8> = 1..=254;

/// Where the client connects, passed in its environment.
pub struct Target {
    pub url: String,
    pub host: String,
    pub port: u16,
    pub dns: SocketAddr,
    /// Passed on as `MAINTWATCH_SIM_PASSWORD` (never printed).
    pub password: Option<String>,
}

impl Target {
    /// The simulator's endpoint, as a client is given it.
    pub fn of(sim: &Simulator, password: Option<String>) -> Target {
        Target {
            url: sim.url(),
            host: sim.host().to_string(),
            port: sim.port(),
            dns: sim.dns_addr(),
            password,
        }
    }
}

/// The simulator's DNS on port 53 of a free loopback address (`127.0.53.N`), for a private
/// `/etc/resolv.conf`; the error says in a few words why there is none.
pub async fn dns_on_port_53(sim: &Simulator) -> Result<SimDns, String> {
    for n in PORT53_HOSTS {
        let addr = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(127, 0, 53, n)), 53);
        match sim.serve_dns_also(addr).await {
            Ok(dns) => return Ok(dns),
            Err(e) if e.kind() == io::ErrorKind::AddrInUse => continue,
            Err(e) => return Err(format!("cannot serve DNS on {addr}: {e}")),
        }
    }
    Err("port 53 is taken on every 127.0.53.N address".into())
}

/// The running client: its process, the tasks copying its output, the tail of its stderr.
pub struct Client {
    child: Child,
    program: String,
    output: PathBuf,
    tail: Arc<Mutex<Tail>>,
    copying: Vec<JoinHandle<()>>,
    /// The private resolv.conf, removed when the client is done.
    resolv: Option<PathBuf>,
    /// Why there is none, when there is none.
    no_resolver: Option<String>,
}

/// Starts CMD with the target in its environment and its output going to `output`; with
/// `nameserver`, in a private `/etc/resolv.conf` naming it. Returns the one-line note of a
/// fallback to the environment variables, when the private resolv.conf could not be made.
pub fn start(
    argv: &[OsString],
    target: &Target,
    nameserver: Result<IpAddr, String>,
    output: &Path,
) -> anyhow::Result<(Client, Option<String>)> {
    let program = argv
        .first()
        .ok_or_else(|| anyhow::anyhow!("no command after --"))?;
    let file = std::fs::File::create(output).map_err(|e| {
        anyhow::anyhow!(
            "creating the client's output file {}: {e}",
            output.display()
        )
    })?;
    let (mut child, resolv, note) = match nameserver {
        Ok(ip) => match spawn_private(argv, target, ip) {
            Ok((child, path)) => (child, Some(path), None),
            Err(e) => (plain(argv, target)?, None, Some(e)),
        },
        Err(why) => (plain(argv, target)?, None, Some(why)),
    };
    let sink = Arc::new(Mutex::new(Output {
        file,
        written: 0,
        full: false,
    }));
    let tail = Arc::new(Mutex::new(Tail::default()));
    let mut copying = Vec::new();
    if let Some(out) = child.stdout.take() {
        copying.push(tokio::spawn(copy(out, sink.clone(), None)));
    }
    if let Some(err) = child.stderr.take() {
        copying.push(tokio::spawn(copy(err, sink, Some(tail.clone()))));
    }
    let client = Client {
        child,
        program: sanitized(&Path::new(program).to_string_lossy()),
        output: output.to_path_buf(),
        tail,
        copying,
        resolv,
        no_resolver: note.clone(),
    };
    let note = note.map(|why| {
        format!(
            "client: no private /etc/resolv.conf ({why}); it has MAINTWATCH_SIM_HOST, _PORT, _URL \
             and _DNS: resolve the host through _DNS yourself (docs/simulate.md: \"Host name resolution\")"
        )
    });
    Ok((client, note))
}

fn plain(argv: &[OsString], target: &Target) -> anyhow::Result<Child> {
    spawn(argv, target, |_| Ok(())).map_err(|e| {
        anyhow::Error::new(NotStarted(format!(
            "cannot start {}: {e}",
            sanitized(&argv[0].to_string_lossy())
        )))
    })
}

/// The client's command could not be started: an error of its own, so that a caller can give it
/// its exit code ([`crate::exit::CLIENT_NOT_STARTED`]).
#[derive(Debug)]
pub struct NotStarted(pub String);

impl std::fmt::Display for NotStarted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NotStarted {}

/// Whether an error (or what caused it) is [`NotStarted`].
pub fn not_started(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.is::<NotStarted>())
}

/// CMD as configured for every way it is started: its own process group (a terminal's Ctrl-C is
/// the simulator's to handle, which then stops the client), the target in its environment.
fn spawn(
    argv: &[OsString],
    target: &Target,
    prepare: impl FnOnce(&mut Command) -> io::Result<()>,
) -> io::Result<Child> {
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .env("MAINTWATCH_SIM_URL", &target.url)
        .env("MAINTWATCH_SIM_HOST", &target.host)
        .env("MAINTWATCH_SIM_PORT", target.port.to_string())
        .env("MAINTWATCH_SIM_DNS", target.dns.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    if let Some(p) = &target.password {
        cmd.env("MAINTWATCH_SIM_PASSWORD", p);
    }
    prepare(&mut cmd)?;
    cmd.spawn()
}

/// CMD in a private mount namespace whose /etc/resolv.conf names `ip`; the error in a few words.
#[cfg(target_os = "linux")]
fn spawn_private(
    argv: &[OsString],
    target: &Target,
    ip: IpAddr,
) -> Result<(Child, PathBuf), String> {
    // A bind mount needs something to cover (a dangling symlink is nothing).
    if !Path::new("/etc/resolv.conf").exists() {
        return Err("this machine has no /etc/resolv.conf to cover".into());
    }
    let path = resolv_conf(ip).map_err(|e| format!("cannot write a resolv.conf: {e}"))?;
    match spawn(argv, target, |cmd| namespace::prepare(cmd, &path)) {
        Ok(child) => Ok((child, path)),
        Err(e) => {
            let _ = std::fs::remove_file(&path);
            match e.kind() {
                // The program itself is missing: no fallback would help.
                io::ErrorKind::NotFound => Err(format!("{}: {e}", argv[0].to_string_lossy())),
                _ => Err(format!("private mount namespace: {e}")),
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn spawn_private(_: &[OsString], _: &Target, _: IpAddr) -> Result<(Child, PathBuf), String> {
    Err("private mount namespaces are Linux-only".into())
}

/// A resolv.conf naming only the simulator's DNS, in the temporary directory, readable by all
/// (a client may run as another user inside its namespace).
#[cfg(target_os = "linux")]
fn resolv_conf(ip: IpAddr) -> io::Result<PathBuf> {
    use std::os::unix::fs::OpenOptionsExt;
    // A name is taken when a killed process with this same id (ids are reused) left its file:
    // the next one is tried, never the stale file (O_EXCL: a file in /tmp is not trusted).
    for _ in 0..RESOLV_NAMES {
        let path = resolv_path(RESOLV_NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        let opened = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .open(&path);
        let mut f = match opened {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            other => other?,
        };
        // Short timeouts: a client's DNS failure should show in the grade quickly.
        writeln!(
            f,
            "# maintwatch simulate: the simulator's DNS\nnameserver {ip}\noptions timeout:2 attempts:2"
        )?;
        return Ok(path);
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!("{RESOLV_NAMES} names in a row were taken in the temporary directory"),
    ))
}

/// How many taken names [`resolv_conf`] passes over before it gives up.
#[cfg(target_os = "linux")]
const RESOLV_NAMES: u32 = 64;

#[cfg(target_os = "linux")]
static RESOLV_NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// The `n`th resolv.conf name of this process.
#[cfg(target_os = "linux")]
fn resolv_path(n: u32) -> PathBuf {
    std::env::temp_dir().join(format!("maintwatch-resolv-{}-{n}.conf", std::process::id()))
}

#[cfg(target_os = "linux")]
mod namespace {
    //! Between fork and exec: a private mount namespace with our resolv.conf bound over the
    //! machine's. Only async-signal-safe calls happen in the child (everything is allocated
    //! before the fork).

    use std::ffi::CString;
    use std::io;
    use std::os::unix::ffi::OsStrExt;
    use std::path::Path;

    use crate::simulator::sim::os::check;

    pub fn prepare(cmd: &mut tokio::process::Command, conf: &Path) -> io::Result<()> {
        let src = CString::new(conf.as_os_str().as_bytes())?;
        // SAFETY: plain reads of the process's ids.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        let uid_map = format!("{uid} {uid} 1");
        let gid_map = format!("{gid} {gid} 1");
        // SAFETY: the closure only makes system calls (unshare, open, write, close, mount) on
        // data allocated before the fork.
        unsafe {
            cmd.pre_exec(move || enter(&src, uid_map.as_bytes(), gid_map.as_bytes()));
        }
        Ok(())
    }

    fn enter(src: &CString, uid_map: &[u8], gid_map: &[u8]) -> io::Result<()> {
        // With CAP_SYS_ADMIN a mount namespace is enough. Without it (an ordinary user, or root
        // in a container that dropped it) a user namespace, where the kernel allows one, gives
        // the right to mount inside it; the ids map to themselves.
        // SAFETY: system calls on valid, NUL-terminated strings.
        unsafe {
            if libc::unshare(libc::CLONE_NEWNS) < 0 {
                check(libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS))?;
                write(c"/proc/self/setgroups", b"deny")?;
                write(c"/proc/self/uid_map", uid_map)?;
                write(c"/proc/self/gid_map", gid_map)?;
            }
            // Private first, so the bind mount cannot propagate back to the machine.
            check(libc::mount(
                std::ptr::null(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_PRIVATE | libc::MS_REC,
                std::ptr::null(),
            ))?;
            check(libc::mount(
                src.as_ptr(),
                c"/etc/resolv.conf".as_ptr(),
                std::ptr::null(),
                libc::MS_BIND,
                std::ptr::null(),
            ))?;
        }
        Ok(())
    }

    unsafe fn write(path: &std::ffi::CStr, data: &[u8]) -> io::Result<()> {
        let fd = check(libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC))?;
        let n = libc::write(fd, data.as_ptr().cast(), data.len());
        libc::close(fd);
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

impl Client {
    /// How long each thread of the client's process group has waited for a CPU so far; `None`
    /// where the kernel does not say.
    pub fn cpu_waits(&self) -> Option<crate::simulator::sim::cpu_wait::Waits> {
        // It leads its own process group (process_group(0)).
        crate::simulator::sim::cpu_wait::Waits::of_group(self.child.id()?)
    }

    /// Waits for the client to exit by itself.
    pub async fn exited(&mut self) -> io::Result<std::process::ExitStatus> {
        self.child.wait().await
    }

    /// Stops the client if it still runs (SIGTERM to its process group, SIGKILL after a grace),
    /// then states how it ended; `clock` is the scenario clock, read when it ended.
    pub async fn finish(mut self, clock: impl Fn() -> Option<f64>) -> ClientProcess {
        let mut stopped = false;
        let status = match self.child.try_wait() {
            Ok(Some(s)) => Ok(s),
            _ => {
                stopped = true;
                self.stop().await
            }
        };
        let at = (clock().unwrap_or(0.0) * 1000.0).round() / 1000.0;
        // The pipes close when the process and its children are gone; a grandchild that keeps
        // them open must not hold the grade back.
        for task in std::mem::take(&mut self.copying) {
            let _ = tokio::time::timeout(GRACE, task).await;
        }
        if let Some(p) = self.resolv.take() {
            let _ = std::fs::remove_file(p);
        }
        use std::os::unix::process::ExitStatusExt;
        let (exit_code, signal) = match &status {
            Ok(s) => (s.code(), s.signal()),
            Err(_) => (None, None),
        };
        let stderr_tail = self.tail.lock().unwrap_or_else(|e| e.into_inner()).lines();
        ClientProcess {
            program: self.program.clone(),
            exit_code,
            signal,
            at,
            stopped,
            stderr_tail,
            output_file: Some(sanitized(&self.output.to_string_lossy())),
            no_resolver: self.no_resolver.take(),
        }
    }

    async fn stop(&mut self) -> io::Result<std::process::ExitStatus> {
        if let Some(pid) = self.child.id() {
            // SAFETY: a signal to the client's own process group (it leads it: process_group(0)).
            unsafe {
                libc::kill(-(pid as libc::pid_t), libc::SIGTERM);
            }
        }
        match tokio::time::timeout(GRACE, self.child.wait()).await {
            Ok(status) => status,
            Err(_) => {
                if let Some(pid) = self.child.id() {
                    // SAFETY: as above.
                    unsafe {
                        libc::kill(-(pid as libc::pid_t), libc::SIGKILL);
                    }
                }
                self.child.wait().await
            }
        }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        if let Some(p) = self.resolv.take() {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// The output file, bounded.
struct Output {
    file: std::fs::File,
    written: u64,
    full: bool,
}

impl Output {
    fn write(&mut self, bytes: &[u8]) {
        if self.full {
            return;
        }
        let room = OUTPUT_LIMIT.saturating_sub(self.written) as usize;
        let part = &bytes[..bytes.len().min(room)];
        // A full disk loses the client's output, not the grade.
        let _ = self.file.write_all(part);
        self.written += part.len() as u64;
        if part.len() < bytes.len() {
            self.full = true;
            let _ = writeln!(
                self.file,
                "\n[maintwatch: output past {OUTPUT_LIMIT} bytes was read and dropped]"
            );
        }
    }
}

/// Copies one of the client's pipes into the output file, keeping the tail of stderr.
async fn copy(
    mut from: impl AsyncRead + Unpin,
    sink: Arc<Mutex<Output>>,
    tail: Option<Arc<Mutex<Tail>>>,
) {
    let mut buf = vec![0u8; 8192];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        sink.lock()
            .unwrap_or_else(|e| e.into_inner())
            .write(&buf[..n]);
        if let Some(t) = &tail {
            t.lock().unwrap_or_else(|e| e.into_inner()).feed(&buf[..n]);
        }
    }
}

/// The last lines of a stream, bounded in count and length.
#[derive(Default)]
struct Tail {
    lines: std::collections::VecDeque<Vec<u8>>,
    current: Vec<u8>,
    cut: bool,
}

impl Tail {
    fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if b == b'\n' {
                self.end_line();
            } else if self.current.len() < TAIL_LINE_CHARS * 4 {
                self.current.push(b);
            } else {
                self.cut = true;
            }
        }
    }

    fn end_line(&mut self) {
        let mut line = std::mem::take(&mut self.current);
        if self.cut {
            line.extend_from_slice(" [...]".as_bytes());
            self.cut = false;
        }
        if self.lines.len() == TAIL_LINES {
            self.lines.pop_front();
        }
        self.lines.push_back(line);
    }

    /// The kept lines, sanitised for a terminal, shortened, with trailing blank lines dropped.
    fn lines(&mut self) -> Vec<String> {
        if !self.current.is_empty() {
            self.end_line();
        }
        let mut out: Vec<String> = self
            .lines
            .iter()
            .map(|l| {
                let text = sanitized(String::from_utf8_lossy(l).trim_end());
                match text.char_indices().nth(TAIL_LINE_CHARS) {
                    Some((i, _)) => format!("{} [...]", &text[..i]),
                    None => text,
                }
            })
            .collect();
        while out.last().is_some_and(|l| l.trim().is_empty()) {
            out.pop();
        }
        out
    }
}

fn sanitized(text: &str) -> String {
    crate::shared::escape::sanitize(text).into_owned()
}

pub use crate::observe::evidence::process::headline;

#[cfg(test)]
mod tests {
    use super::*;

    /// Files a killed process with this same id left under the next names do not keep the
    /// client from its private resolver: the names are passed over, and the files left alone.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_stale_resolv_conf_of_a_reused_process_id_is_passed_over() {
        use std::sync::atomic::Ordering;
        let next = RESOLV_NEXT.load(Ordering::Relaxed);
        let stale: Vec<PathBuf> = (next..next + 3).map(resolv_path).collect();
        for p in &stale {
            std::fs::write(p, "stale").unwrap();
        }
        let made = resolv_conf(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1)));
        let kept: Vec<String> = stale
            .iter()
            .map(|p| std::fs::read_to_string(p).unwrap())
            .collect();
        for p in &stale {
            let _ = std::fs::remove_file(p);
        }
        let made = made.expect("a name past the stale ones");
        let text = std::fs::read_to_string(&made).unwrap();
        let _ = std::fs::remove_file(&made);
        assert!(!stale.contains(&made), "{made:?}");
        assert!(text.contains("nameserver 127.0.0.1"), "{text}");
        assert_eq!(kept, ["stale", "stale", "stale"]);
    }

    #[test]
    fn tail_keeps_the_last_lines_bounded_and_sanitised() {
        let mut t = Tail::default();
        for i in 0..50 {
            t.feed(format!("line {i}\n").as_bytes());
        }
        t.feed(b"\x1b[31mred\x1b[0m ");
        t.feed(&vec![b'x'; 10_000]);
        t.feed(b"\n\n");
        let lines = t.lines();
        assert_eq!(lines.len(), TAIL_LINES - 1, "{lines:?}");
        assert_eq!(lines[0], "line 32");
        let last = lines.last().unwrap();
        assert!(last.starts_with("\\x1b[31mred\\x1b[0m xxx"), "{last}");
        assert!(
            last.ends_with(" [...]") && last.chars().count() < 260,
            "{last}"
        );
    }

    #[test]
    fn headline_prefers_the_error_line() {
        let tail: Vec<String> = [
            "    at foo (x.js:1)",
            "AssertionError [ERR_ASSERTION]: The expression evaluated to a falsy value:",
            "  code: 'ERR_ASSERTION'",
            "}",
            "Node.js v20.20.2",
        ]
        .map(String::from)
        .to_vec();
        assert!(headline(&tail).unwrap().starts_with("AssertionError"));
        let plain = vec!["done".to_string(), String::new()];
        assert_eq!(headline(&plain), Some("done"));
        assert_eq!(headline(&[]), None);
    }

    #[test]
    fn output_is_bounded() {
        let dir = std::env::temp_dir().join(format!("mw-out-{}", std::process::id()));
        let mut o = Output {
            file: std::fs::File::create(&dir).unwrap(),
            written: OUTPUT_LIMIT - 3,
            full: false,
        };
        o.write(b"abcdef");
        o.write(b"more");
        assert!(o.full);
        assert_eq!(o.written, OUTPUT_LIMIT);
        drop(o);
        let text = std::fs::read_to_string(&dir).unwrap();
        let _ = std::fs::remove_file(&dir);
        assert!(text.starts_with("abc\n[maintwatch: output past"), "{text}");
    }
}
