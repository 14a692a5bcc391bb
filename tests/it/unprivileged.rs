//! Grading an unmodified client where a client library's CI runs: not as root (issue 34).
//!
//! CI runs as root, so each run drops to what a CI job has, without touching the machine's user
//! database: an ordinary identity (`setpriv --reuid 65534`), root without CAP_SYS_ADMIN (`capsh
//! --drop=cap_sys_admin`, as a container), and an ordinary identity that may not create user
//! namespaces (a user namespace whose `user.max_user_namespaces` is 0, as a seccomp profile
//! would refuse them). The binary, the application and a venv on the machine's own python3 sit
//! in a world-readable temporary folder. The application resolves the URL's host name with the
//! machine's resolver and has no resolver code.
//!
//! Needs root, `setpriv`, `capsh`, `unshare`, `MAINTWATCH_REDIS_SERVER` and `MAINTWATCH_VENV_ANY`
//! (a venv any user can run, with redis-py; `.ci/run` makes it): otherwise a SKIP line.

use std::path::{Path, PathBuf};
use std::process::Output;

use maintwatch::grading::judge::grade_lines::GradeLine;
use maintwatch::grading::judge::{Grade, Verdict};

use crate::common;

const APP: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/redis_py_app.py");

/// The folder the unprivileged identity runs from: readable by all, `out/` writable by all.
struct Kit {
    dir: tempfile::TempDir,
    redis: String,
}

impl Kit {
    fn new(test: &str) -> Option<Kit> {
        // SAFETY: a plain read of the process's effective uid.
        if unsafe { libc::geteuid() } != 0 {
            crate::common::skip(test, "not root: cannot drop to another identity");
            return None;
        }
        for tool in ["setpriv", "capsh", "unshare", "cp"] {
            if which(tool).is_none() {
                crate::common::skip(test, &format!("{tool} is not installed"));
                return None;
            }
        }
        let Some(venv) = std::env::var_os("MAINTWATCH_VENV_ANY").filter(|v| !v.is_empty()) else {
            crate::common::skip(test, "MAINTWATCH_VENV_ANY is unset (.ci/run makes it)");
            return None;
        };
        let redis = common::redis_server_binary(test)?;
        let dir = tempfile::Builder::new()
            .prefix("maintwatch-unpriv-")
            .tempdir_in("/tmp")
            .unwrap();
        let kit = Kit { dir, redis };
        kit.fill(Path::new(&venv));
        Some(kit)
    }

    fn fill(&self, venv: &Path) {
        use std::os::unix::fs::PermissionsExt;
        let root = self.dir.path();
        std::fs::copy(common::BIN, root.join("maintwatch")).unwrap();
        std::fs::copy(APP, root.join("app.py")).unwrap();
        let st = std::process::Command::new("cp")
            .arg("-a")
            .arg(venv)
            .arg(root.join("venv"))
            .status()
            .unwrap();
        assert!(st.success(), "cp -a {}: {st}", venv.display());
        std::fs::create_dir(root.join("out")).unwrap();
        let st = std::process::Command::new("chmod")
            .args(["-R", "a+rX"])
            .arg(root)
            .status()
            .unwrap();
        assert!(st.success());
        std::fs::set_permissions(root.join("out"), std::fs::Permissions::from_mode(0o1777))
            .unwrap();
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// `maintwatch ARGS -- venv/bin/python app.py`, run as `who`.
    fn command(&self, who: Who, args: &[&str]) -> tokio::process::Command {
        let bin = self.path("maintwatch");
        let mut argv: Vec<String> = match who {
            Who::Root => vec![],
            Who::Nobody => nobody(),
            Who::NoSysAdmin => [
                "capsh",
                "--drop=cap_sys_admin",
                "--",
                "-c",
                "exec \"$@\"",
                "sh",
            ]
            .map(String::from)
            .to_vec(),
            Who::NobodyWithoutNamespaces => {
                let mut v = nobody();
                v.extend(
                    [
                        "unshare",
                        "-r",
                        "sh",
                        "-c",
                        "echo 0 > /proc/sys/user/max_user_namespaces && exec \"$@\"",
                        "sh",
                    ]
                    .map(String::from),
                );
                v
            }
        };
        argv.push(bin.to_string_lossy().into_owned());
        argv.extend(args.iter().map(|a| a.to_string()));
        argv.push("--".into());
        argv.push(self.path("venv/bin/python").to_string_lossy().into_owned());
        argv.push(self.path("app.py").to_string_lossy().into_owned());
        let mut cmd = tokio::process::Command::new(&argv[0]);
        cmd.args(&argv[1..])
            .env("PATH", common::tier::path_with(&self.redis))
            .env("HOME", self.path("out"))
            .env("TMPDIR", self.path("out"))
            .kill_on_drop(true);
        cmd
    }
}

#[derive(Clone, Copy, Debug)]
enum Who {
    Root,
    Nobody,
    NoSysAdmin,
    NobodyWithoutNamespaces,
}

fn nobody() -> Vec<String> {
    [
        "setpriv",
        "--reuid",
        "65534",
        "--regid",
        "65534",
        "--clear-groups",
    ]
    .map(String::from)
    .to_vec()
}

fn which(tool: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(tool))
        .find(|p| p.is_file())
}

/// The `grade` lines of a `--grade-json` file.
fn grades(file: &Path) -> Vec<Grade> {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    text.lines()
        .filter_map(|l| match serde_json::from_str(l) {
            Ok(GradeLine::Grade { grade, .. }) => Some(grade),
            _ => None,
        })
        .collect()
}

fn verdict(g: &Grade, rule: &str) -> Option<Verdict> {
    g.all_rules()
        .filter(|r| r.rule == rule)
        .map(|r| r.verdict)
        .max()
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

async fn certify(kit: &Kit, who: Who, name: &str) -> (Output, Vec<Grade>) {
    let json = kit.path(&format!("out/{name}.jsonl"));
    let junit = kit.path(&format!("out/{name}.xml"));
    let out = kit
        .command(
            who,
            &[
                "certify",
                "--scenarios",
                "single-proxy",
                "--grade-json",
                &json.to_string_lossy(),
                "--junit",
                &junit.to_string_lossy(),
                "--client-output",
                &kit.path(&format!("out/{name}-client")).to_string_lossy(),
            ],
        )
        .output()
        .await
        .unwrap();
    let g = grades(&json);
    (out, g)
}

/// The run as an ordinary user sits in namespaces of its own and says so; as root without
/// CAP_SYS_ADMIN the client's mount namespace comes from a user namespace. Either way the
/// application resolves the name through the simulator, and every rule's verdict is root's.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn certify_without_root_gives_the_verdicts_of_root() {
    let test = "certify_without_root_gives_the_verdicts_of_root";
    let Some(kit) = Kit::new(test) else {
        return;
    };
    let ((root, by_root), (user, by_user), (container, by_container)) = tokio::join!(
        certify(&kit, Who::Root, "root"),
        certify(&kit, Who::Nobody, "nobody"),
        certify(&kit, Who::NoSysAdmin, "nosysadmin"),
    );
    let stderr = String::from_utf8_lossy(&user.stderr);
    assert!(
        stderr.contains("sits in a user, network and mount namespace of its own"),
        "{}",
        text(&user)
    );
    for (run, grades) in [
        (&root, &by_root),
        (&user, &by_user),
        (&container, &by_container),
    ] {
        assert_eq!(grades.len(), 1, "{}", text(run));
        let client = &grades[0].clients[0];
        assert!(
            client.client.starts_with("redis-py") && client.reached.contains("by name"),
            "the app did not resolve the name through the simulator: {}",
            text(run)
        );
        assert_ne!(
            verdict(&grades[0], "moved-before-close"),
            Some(Verdict::NotJudged),
            "{}",
            text(run)
        );
    }
    let cell = maintwatch::grading::matrix::cell(&by_root[0]);
    assert_eq!(
        maintwatch::grading::matrix::cell(&by_user[0]),
        cell,
        "{}",
        text(&user)
    );
    assert_eq!(
        maintwatch::grading::matrix::cell(&by_container[0]),
        cell,
        "{}",
        text(&container)
    );
    assert_eq!(user.status.code(), root.status.code());
}

/// `simulate --pcap` as an ordinary user: a capture taken inside the namespace, which the judge
/// reads back by name with its DNS; it never passes what the simulator failed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simulate_without_root_keeps_a_capture_taken_inside() {
    let test = "simulate_without_root_keeps_a_capture_taken_inside";
    let Some(kit) = Kit::new(test) else {
        return;
    };
    let pcap = kit.path("out/run.pcap");
    let json = kit.path("out/sim.jsonl");
    let out = kit
        .command(
            Who::Nobody,
            &[
                "simulate",
                "--scenario",
                "single-proxy",
                "--upstream",
                "spawn",
                "--quiet",
                "--grade-json",
                &json.to_string_lossy(),
                "--pcap",
                &pcap.to_string_lossy(),
            ],
        )
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("pcap      the run's packets go to"),
        "{}",
        text(&out)
    );
    let sim = grades(&json);
    assert_eq!(sim.len(), 1, "{}", text(&out));
    let read = std::process::Command::new(common::BIN)
        .args(["pcap", "--grade", "--json"])
        .arg(&pcap)
        .output()
        .unwrap();
    let read_json = kit.path("out/pcap.jsonl");
    std::fs::write(&read_json, &read.stdout).unwrap();
    let from_capture = grades(&read_json);
    assert_eq!(from_capture.len(), 1, "{}", text(&read));
    let client = &from_capture[0].clients[0];
    assert!(client.reached.contains("by name"), "{}", text(&read));
    let (in_sim, in_capture) = (
        verdict(&sim[0], "moved-before-close"),
        verdict(&from_capture[0], "moved-before-close"),
    );
    assert!(
        in_capture == in_sim || in_capture == Some(Verdict::NotJudged),
        "simulator {in_sim:?}, capture {in_capture:?}\n{}\n{}",
        text(&out),
        text(&read)
    );
}

/// Where user namespaces are refused too, one line says so and what to do, and nothing that
/// needs the client's DNS passes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_namespaces_one_line_says_what_to_do_and_nothing_passes_blind() {
    let test = "without_namespaces_one_line_says_what_to_do_and_nothing_passes_blind";
    let Some(kit) = Kit::new(test) else {
        return;
    };
    let (out, grades) = certify(&kit, Who::NobodyWithoutNamespaces, "refused").await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("user namespaces are refused"))
        .collect();
    assert_eq!(lines.len(), 1, "{}", text(&out));
    assert!(lines[0].contains("CAP_NET_BIND_SERVICE"), "{}", lines[0]);
    assert_eq!(grades.len(), 1, "{}", text(&out));
    assert_ne!(
        verdict(&grades[0], "moved-before-close"),
        Some(Verdict::Pass),
        "{}",
        text(&out)
    );
    assert_ne!(out.status.code(), Some(0), "{}", text(&out));
}
