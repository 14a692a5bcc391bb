//! The Debian package and its systemd unit: `scripts/build-deb` builds a .deb from the test
//! binary into a temporary folder, and `dpkg-deb` reads back what it holds (without dpkg-deb: a
//! SKIP line). The package is never installed here (tests do not change the machine:
//! `scripts/check-deb`, run by `.ci/run`, installs it), but the binary it holds is run.
//! The unit is checked as text, and with `systemd-analyze security --offline=true` where that
//! runs. The README's Install commands must be the ones `scripts/check-deb` runs.

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

const UNIT: &str = include_str!("../deploy/systemd/maintwatch.service");

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn skip(test: &str, why: &str) {
    let _ = std::io::Write::write_fmt(
        &mut std::io::stderr(),
        format_args!("SKIP: {test}: {why}\n"),
    );
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
    let out = run(Command::new(repo().join("scripts/build-deb"))
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
        return skip(TEST, "dpkg-deb is not on PATH (not a Debian system)");
    }
    if !on_path("strip") {
        return skip(
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
            "/etc/default/maintwatch".to_string(),
            "-rw------- root/root",
        ),
    ];
    for file in [
        "/lib/systemd/system/maintwatch.service",
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
    let conffiles = run(Command::new("dpkg-deb")
        .arg("-I")
        .arg(&deb)
        .arg("conffiles"));
    assert_eq!(conffiles.trim(), "/etc/default/maintwatch");

    // The packaged binary runs, and the packaged unit is the one in deploy/.
    let root = dir.path().join("root");
    run(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&root));
    let shown = run(Command::new(root.join("usr/bin/maintwatch")).arg("--version"));
    assert_eq!(shown.trim(), format!("maintwatch {version}"));
    let unit = std::fs::read_to_string(root.join("lib/systemd/system/maintwatch.service")).unwrap();
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
fn the_unit_is_hardened_reads_its_environment_file_and_holds_no_secret() {
    let s = settings();
    let one = |key: &str| match s.get(key).map(Vec::as_slice) {
        Some([value]) => *value,
        other => panic!("{key}: {other:?}"),
    };
    assert_eq!(one("EnvironmentFile"), "/etc/default/maintwatch");
    assert_eq!(
        one("ExecStart"),
        "/usr/bin/maintwatch watch $MAINTWATCH_ARGS"
    );
    for (key, value) in [
        ("DynamicUser", "yes"),
        ("StateDirectory", "maintwatch"),
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
    // The shipped environment file sets only the arguments; the secrets are commented out.
    let default = std::fs::read_to_string(repo().join("deploy/debian/default")).unwrap();
    let set: Vec<&str> = default
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .collect();
    assert_eq!(set.len(), 1, "{set:?}");
    assert!(set[0].starts_with("MAINTWATCH_ARGS=\""), "{set:?}");
}

#[test]
fn the_units_exposure_is_ok_or_better() {
    const TEST: &str = "the_units_exposure_is_ok_or_better";
    if !on_path("systemd-analyze") {
        return skip(TEST, "systemd-analyze is not on PATH (package systemd)");
    }
    let out = Command::new("systemd-analyze")
        .args(["security", "--offline=true", "--no-pager"])
        .arg(repo().join("deploy/systemd/maintwatch.service"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let Some(overall) = text.lines().find(|l| l.contains("Overall exposure level")) else {
        // Before systemd 250, `security` has no --offline: it needs a running systemd.
        return skip(
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

/// The lines of the first ```sh block under `## Install` in the README.
fn readme_install() -> Vec<String> {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let section = readme
        .split("\n## Install\n")
        .nth(1)
        .expect("an Install section");
    let block = section
        .split("```sh\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("a sh block in Install");
    block.lines().map(str::to_string).collect()
}

#[test]
fn the_readme_install_commands_are_the_ones_ci_runs() {
    let commands = readme_install();
    assert!(commands.len() >= 3, "{commands:?}");
    let script = std::fs::read_to_string(repo().join("scripts/check-deb")).unwrap();
    let lines: Vec<&str> = script.lines().collect();
    let found = lines
        .windows(commands.len())
        .any(|w| w.iter().zip(&commands).all(|(a, b)| a == b));
    assert!(found, "scripts/check-deb must run, in a row: {commands:?}");
    let ci = std::fs::read_to_string(repo().join(".ci/run")).unwrap();
    assert!(
        ci.lines().any(|l| l.trim() == "scripts/check-deb"),
        ".ci/run calls it"
    );
}
