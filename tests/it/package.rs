//! The Debian package and its systemd unit: `scripts/release/build-deb` builds a .deb from the test
//! binary into a temporary folder, and `dpkg-deb` reads back what it holds (without dpkg-deb: a
//! SKIP line). The package is never installed here (tests do not change the machine:
//! `scripts/release/check-deb`, run by `.ci/run`, installs it), but the binary it holds is run.
//! The template unit `maintwatch@.service` is checked as text, and with `systemd-analyze security
//! --offline=true` where that runs. The README's Install commands must be the ones
//! `scripts/release/check-deb` runs.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common;

const UNIT: &str = include_str!("../../deploy/systemd/maintwatch@.service");

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Whether `program` is on PATH.
fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|d| d.join(program).is_file()))
}

/// Runs `cmd`, asserting success; its stdout.
fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The package built from the test binary into `dir`: its path.
fn build(dir: &Path) -> PathBuf {
    let out = run(Command::new(repo().join("scripts/release/build-deb"))
        .arg(common::BIN)
        .arg(dir)
        // gzip, not xz: the debug binary is large and what is checked is the content.
        .env("DEB_COMPRESS", "gzip"));
    PathBuf::from(out.trim())
}

#[test]
fn the_deb_holds_the_binary_man_pages_completions_and_unit_where_debian_looks() {
    const TEST: &str = "the_deb_holds_the_binary_man_pages_completions_and_unit";
    if !on_path("dpkg-deb") {
        return crate::common::skip(TEST, "dpkg-deb is not on PATH (not a Debian system)");
    }
    if !on_path("strip") {
        return crate::common::skip(
            TEST,
            "strip is not on PATH (package binutils): build-deb strips the binary",
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let deb = build(dir.path());
    let version = env!("CARGO_PKG_VERSION");
    assert!(
        deb.file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with(&format!("maintwatch_{version}_")),
        "{deb:?}"
    );

    // Path -> mode and owner, from `dpkg-deb -c`.
    let listing = run(Command::new("dpkg-deb").arg("-c").arg(&deb));
    let entries: std::collections::HashMap<String, String> = listing
        .lines()
        .filter_map(|l| {
            let fields: Vec<&str> = l.split_whitespace().collect();
            let path = fields.last()?.trim_start_matches('.').to_string();
            Some((path, format!("{} {}", fields[0], fields[1])))
        })
        .collect();
    let mut want = vec![
        ("/usr/bin/maintwatch".to_string(), "-rwxr-xr-x root/root"),
        (
            "/etc/maintwatch/example.env".to_string(),
            "-rw------- root/root",
        ),
        // The endpoints file example.env's --from names, readable by the dynamic user.
        (
            "/etc/maintwatch/example.txt".to_string(),
            "-rw-r--r-- root/root",
        ),
    ];
    for file in [
        "/lib/systemd/system/maintwatch@.service",
        "/usr/share/bash-completion/completions/maintwatch",
        "/usr/share/zsh/vendor-completions/_maintwatch",
        "/usr/share/fish/vendor_completions.d/maintwatch.fish",
        "/usr/share/doc/maintwatch/copyright",
        "/usr/share/doc/maintwatch/changelog.gz",
        "/usr/share/lintian/overrides/maintwatch",
        "/usr/share/maintwatch/maintwatch.rules.yml",
        "/usr/share/maintwatch/maintwatch.json",
    ] {
        want.push((file.to_string(), "-rw-r--r-- root/root"));
    }
    for page in std::fs::read_dir(repo().join("man")).unwrap() {
        let name = page.unwrap().file_name().into_string().unwrap();
        want.push((
            format!("/usr/share/man/man1/{name}.gz"),
            "-rw-r--r-- root/root",
        ));
    }
    for (path, mode) in &want {
        assert_eq!(
            entries.get(path).map(String::as_str),
            Some(*mode),
            "{path} in the package:\n{listing}"
        );
    }
    // The template replaced the single unit and its /etc/default file.
    for gone in [
        "/lib/systemd/system/maintwatch.service",
        "/etc/default/maintwatch",
    ] {
        assert!(!entries.contains_key(gone), "{gone} in the package");
    }

    let info = run(Command::new("dpkg-deb").arg("-I").arg(&deb));
    for field in [
        "Package: maintwatch".to_string(),
        format!("Version: {version}"),
        "Maintainer: ".to_string(),
        "Description: ".to_string(),
    ] {
        assert!(info.contains(&format!(" {field}")), "{field}:\n{info}");
    }
    let depends = info
        .lines()
        .find_map(|l| l.trim().strip_prefix("Depends: "))
        .unwrap_or_else(|| panic!("no Depends:\n{info}"));
    assert!(depends.contains("libc6"), "{depends}");
    // So that the completion installed above works after install.
    assert!(info.contains(" Recommends: bash-completion\n"), "{info}");
    let conffiles = run(Command::new("dpkg-deb")
        .arg("-I")
        .arg(&deb)
        .arg("conffiles"));
    assert_eq!(
        conffiles.trim(),
        "/etc/maintwatch/example.env\n/etc/maintwatch/example.txt"
    );
    // Every file the example's MAINTWATCH_ARGS names is in the package, and parses as a --from
    // list (a line the watch cannot read is refused with exit 2; one unreachable endpoint
    // exits 6).
    let example = std::fs::read_to_string(repo().join("deploy/debian/example.env")).unwrap();
    let from = example
        .lines()
        .find_map(|l| l.strip_prefix("MAINTWATCH_ARGS="))
        .and_then(|args| args.trim_matches('"').split_once("--from "))
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .expect("the example names a --from file");
    assert!(entries.contains_key(from), "{from} is not in the package");
    let shipped = repo()
        .join("deploy/debian")
        .join(Path::new(from).file_name().unwrap());
    let probe = Command::new(crate::common::BIN)
        .args(["probe", "--connect-timeout", "1s", "--from"])
        .arg(&shipped)
        .output()
        .unwrap();
    assert_ne!(probe.status.code(), Some(2), "{probe:?}");
    assert!(
        String::from_utf8_lossy(&probe.stdout).contains("redis://127.0.0.1:6379"),
        "{probe:?}"
    );

    // The packaged binary runs, and the packaged unit is the one in deploy/.
    let root = dir.path().join("root");
    run(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&root));
    let shown = run(Command::new(root.join("usr/bin/maintwatch")).arg("--version"));
    assert_eq!(shown.trim(), format!("maintwatch {version}"));
    let unit =
        std::fs::read_to_string(root.join("lib/systemd/system/maintwatch@.service")).unwrap();
    assert_eq!(unit, UNIT);
}

/// The unit's settings: `key` -> every value given to it, in order.
fn settings() -> std::collections::HashMap<&'static str, Vec<&'static str>> {
    let mut out: std::collections::HashMap<&str, Vec<&str>> = Default::default();
    for line in UNIT
        .lines()
        .filter(|l| !l.starts_with('#') && l.contains('='))
    {
        let (key, value) = line.split_once('=').unwrap();
        out.entry(key).or_default().push(value);
    }
    out
}

#[test]
fn the_template_is_hardened_reads_its_instances_file_and_holds_no_secret() {
    let s = settings();
    let one = |key: &str| match s.get(key).map(Vec::as_slice) {
        Some([value]) => *value,
        other => panic!("{key}: {other:?}"),
    };
    // Each instance its own root-only file and its own state directory, found by its name.
    assert_eq!(one("EnvironmentFile"), "/etc/maintwatch/%i.env");
    assert_eq!(one("StateDirectory"), "maintwatch/%i");
    assert_eq!(one("WorkingDirectory"), "%S/maintwatch/%i");
    assert_eq!(
        one("ExecStart"),
        "/usr/bin/maintwatch watch $MAINTWATCH_ARGS"
    );
    for (key, value) in [
        ("DynamicUser", "yes"),
        ("NoNewPrivileges", "yes"),
        ("ProtectSystem", "strict"),
        ("ProtectHome", "yes"),
        ("PrivateTmp", "yes"),
        ("CapabilityBoundingSet", ""),
        ("RestrictAddressFamilies", "AF_INET AF_INET6 AF_UNIX"),
        ("Restart", "on-failure"),
        ("ExecReload", "/bin/kill -HUP $MAINPID"),
    ] {
        assert_eq!(one(key), value, "{key}");
    }
    assert_eq!(s["SystemCallFilter"][0], "@system-service");
    // The codes a restart cannot fix: usage, authentication, SELECT.
    use maintwatch::exit::{AUTH_FAILED, SELECT_FAILED, USAGE};
    assert_eq!(
        one("RestartPreventExitStatus"),
        format!("{USAGE} {AUTH_FAILED} {SELECT_FAILED}")
    );
    // No secret and no endpoint in the unit: those are the environment file's.
    for key in ["Environment", "LoadCredential", "SetCredential"] {
        assert!(!s.contains_key(key), "{key} in the unit");
    }
    for word in [
        "REDISCLI_AUTH",
        "OTEL_EXPORTER_OTLP_HEADERS",
        "redis://",
        "rediss://",
    ] {
        let code: String = UNIT.lines().filter(|l| !l.starts_with('#')).collect();
        assert!(!code.contains(word), "{word} in the unit");
    }
    // The shipped example sets only the arguments; the secrets are commented out.
    let example = std::fs::read_to_string(repo().join("deploy/debian/example.env")).unwrap();
    let set: Vec<&str> = example
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .collect();
    assert_eq!(set.len(), 1, "{set:?}");
    let args = set[0]
        .strip_prefix("MAINTWATCH_ARGS=\"")
        .and_then(|a| a.strip_suffix('"'))
        .unwrap_or_else(|| panic!("{set:?}"));
    // A relative capture lands in the instance's state directory (the working directory), so the
    // example copied to another NAME needs no path changed.
    let words: Vec<&str> = args.split_whitespace().collect();
    let capture = words
        .windows(2)
        .find_map(|w| (w[0] == "--capture").then_some(w[1]))
        .unwrap_or_else(|| panic!("no --capture in {args}"));
    assert!(!capture.starts_with('/'), "{capture}");
}

#[test]
fn the_units_exposure_is_ok_or_better() {
    const TEST: &str = "the_units_exposure_is_ok_or_better";
    if !on_path("systemd-analyze") {
        return crate::common::skip(TEST, "systemd-analyze is not on PATH (package systemd)");
    }
    // A template is analysed as one of its instances: named beside it (no such file), systemd
    // loads the template with %i=example, as scripts/release/check-deb does with the installed one.
    let out = Command::new("systemd-analyze")
        .args(["security", "--offline=true", "--no-pager"])
        .arg(repo().join("deploy/systemd/maintwatch@example.service"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let Some(overall) = text.lines().find(|l| l.contains("Overall exposure level")) else {
        // Before systemd 250, `security` has no --offline: it needs a running systemd.
        return crate::common::skip(
            TEST,
            &format!(
                "systemd-analyze security --offline=true does not run here: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        );
    };
    let figure: f64 = overall
        .split(": ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{overall}"));
    // systemd's scale: below 2.0 is "OK", below 1.0 "SAFE".
    assert!(figure < 2.0, "{overall}");
}

/// The ```sh blocks under `## Install` in the README, each as its lines.
fn readme_install() -> Vec<Vec<String>> {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let section = readme
        .split("\n## Install\n")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("an Install section");
    section
        .split("```sh\n")
        .skip(1)
        .map(|b| {
            b.split("```")
                .next()
                .unwrap()
                .lines()
                .map(str::to_string)
                .collect()
        })
        .collect()
}

#[test]
fn the_readme_install_commands_are_the_ones_ci_runs() {
    let blocks = readme_install();
    let script = std::fs::read_to_string(repo().join("scripts/release/check-deb")).unwrap();
    let lines: Vec<&str> = script.lines().collect();
    // Building and installing the package: the script runs these lines in a row, as written.
    let [install, instance] = blocks.as_slice() else {
        panic!("two sh blocks in Install (the package, then an instance): {blocks:?}");
    };
    assert!(install.len() >= 3, "{install:?}");
    let found = lines
        .windows(install.len())
        .any(|w| w.iter().zip(install).all(|(a, b)| a == b));
    assert!(
        found,
        "scripts/release/check-deb must run, in a row: {install:?}"
    );
    // Setting up an instance: the same commands in the same order, but the editor (a person's
    // step), and `systemctl` only once the script knows systemd is process 1.
    let systemd = lines
        .iter()
        .position(|l| l.contains("/proc/1/comm") && l.contains("= systemd ]"))
        .expect("scripts/release/check-deb asks whether systemd is process 1");
    let mut from = 0;
    for command in instance.iter().filter(|c| !c.starts_with("editor ")) {
        let at = lines[from..]
            .iter()
            .position(|l| l.trim() == command)
            .map(|i| from + i)
            .unwrap_or_else(|| panic!("scripts/release/check-deb must run {command:?} (in order)"));
        if command.starts_with("systemctl ") {
            assert!(at > systemd, "{command:?} before the systemd check");
        }
        from = at + 1;
    }
    assert!(
        instance
            .iter()
            .any(|c| c == "systemctl enable --now maintwatch@prod"),
        "{instance:?}"
    );
    let ci = std::fs::read_to_string(repo().join(".ci/run")).unwrap();
    assert!(
        // Run as it is or as a timed phase (`phase "NAME" scripts/release/check-deb`).
        ci.lines().any(|l| l.trim() == "scripts/release/check-deb"
            || (l.trim().starts_with("phase ")
                && l.trim().ends_with(" scripts/release/check-deb"))),
        ".ci/run calls it"
    );
}
