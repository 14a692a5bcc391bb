//! The GitHub Actions job a client author pastes, `examples/ci/certify.yml`, run on this machine
//! as a runner runs it: its `run:` blocks are extracted from the file, in order, each written
//! to a script and run with the shell the file names (`bash --noprofile --norc -eo pipefail`,
//! GitHub's `shell: bash`), with the file's `env` block and the files a runner provides
//! (`GITHUB_PATH`, `GITHUB_OUTPUT`, `RUNNER_TEMP`); a line a step adds to `GITHUB_PATH` is on
//! the next step's `PATH`, as on a runner. So "works when pasted" is checked, and cannot drift.
//!
//! The `uses:` steps are actions, not shell; each one the file has is stood in for here, and a
//! new one fails the test until it is: the client's checkout is a directory holding the redis-py
//! sample application as `tests/maint_app.py`, maintwatch's checkout is this repository, Python
//! is the redis-py tier's (`MAINTWATCH_PYTHON`), and the two publishing steps are checked by the
//! files they publish being there. The job's variables are set as a user would edit them:
//! `MAINTWATCH_PROFILE=dev` (a build in a target directory of its own, once), a short
//! `MAINTWATCH_SCENARIOS`, and `CLIENT_INSTALL` checking that the client imports (the tier's
//! venv has it installed).
//!
//! The certify step must end 0 or 1 (a rule held or failed), never 9. Needs redis-server and
//! the redis-py tier; absent, a SKIP line.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

const JOB: &str = "examples/ci/certify.yml";

/// Short enough for CI (about 15 s of scenarios); both are in the default set.
const SCENARIOS: &str = "refusing,no-closing-notification";

/// One step of the job.
#[derive(Debug, Default)]
struct Step {
    name: String,
    uses: Option<String>,
    run: Option<String>,
    /// `if: always()`.
    always: bool,
}

/// The job file's top-level `env` block and its steps, read from the layout the file keeps
/// (two-space indents, `run: |` blocks), which is all this reader knows; the file's own
/// structure is checked on the way.
fn parse(text: &str) -> (Vec<(String, String)>, Vec<Step>) {
    let lines: Vec<&str> = text.lines().collect();
    let mut env = Vec::new();
    let mut steps: Vec<Step> = Vec::new();
    let mut i = 0;
    let indent = |l: &str| l.len() - l.trim_start().len();
    while i < lines.len() {
        let line = lines[i];
        if line == "env:" {
            i += 1;
            while i < lines.len() && (lines[i].starts_with("  ") || lines[i].trim().is_empty()) {
                let l = lines[i].trim();
                if let Some((k, v)) = l.split_once(": ").filter(|_| !l.starts_with('#')) {
                    env.push((k.to_string(), v.trim_matches('"').to_string()));
                }
                i += 1;
            }
            continue;
        }
        if line.trim_start().starts_with("- ") && indent(line) == 6 {
            steps.push(Step::default());
        }
        let key = line.trim_start().trim_start_matches("- ");
        if let Some(step) = steps.last_mut().filter(|_| indent(line) >= 6) {
            if let Some(v) = key.strip_prefix("name: ") {
                step.name = v.to_string();
            } else if let Some(v) = key.strip_prefix("uses: ") {
                step.uses = Some(v.to_string());
            } else if key == "if: always()" {
                step.always = true;
            } else if key == "run: |" {
                let mut block = String::new();
                while i + 1 < lines.len()
                    && (lines[i + 1].trim().is_empty() || indent(lines[i + 1]) > 8)
                {
                    i += 1;
                    block.push_str(lines[i].get(10..).unwrap_or(""));
                    block.push('\n');
                }
                step.run = Some(block);
            } else if let Some(v) = key.strip_prefix("run: ") {
                step.run = Some(format!("{v}\n"));
            }
        }
        i += 1;
    }
    (env, steps)
}

/// The machine as a runner would give it to the job, in a temporary directory.
struct Runner {
    dir: tempfile::TempDir,
    path: Vec<PathBuf>,
    env: Vec<(String, String)>,
}

impl Runner {
    fn workspace(&self) -> PathBuf {
        self.dir.path().join("workspace")
    }

    fn file(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// What a `uses:` step would have done.
    fn stand_in(&mut self, step: &Step, uses: &str, python: &str) {
        let ws = self.workspace();
        match uses.split('@').next().unwrap() {
            "actions/checkout" if step.name.contains("maintwatch") => {
                std::os::unix::fs::symlink(env!("CARGO_MANIFEST_DIR"), ws.join(".maintwatch"))
                    .unwrap();
            }
            "actions/checkout" => {
                std::fs::create_dir_all(ws.join("tests")).unwrap();
                let app =
                    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/redis_py_app.py");
                std::fs::copy(app, ws.join("tests/maint_app.py")).unwrap();
            }
            // As setup-python does: its Python's bin directory first on PATH (the venv's,
            // which has python3 and the client).
            "actions/setup-python" => self.path.insert(0, dir_of(python)),
            "mikepenz/action-junit-report" => {
                assert!(
                    step.always,
                    "the JUnit report is published whatever the outcome"
                );
                let xml = std::fs::read_to_string(ws.join("certify.xml")).unwrap();
                assert!(xml.contains("<testsuites"), "{xml}");
            }
            "actions/upload-artifact" => {
                assert!(step.always, "the reports are kept whatever the outcome");
                for kept in [
                    "certify.xml",
                    "certify.jsonl",
                    "certify.html",
                    "certify-output",
                ] {
                    assert!(ws.join(kept).exists(), "{kept} is not there to be kept");
                }
            }
            other => panic!(
                "{JOB}: step {:?} uses {other}, which this test does not stand in for",
                step.name
            ),
        }
    }

    /// Runs one `run:` block as the runner does; returns its exit code and output.
    fn run(&mut self, script: &str) -> (Option<i32>, String) {
        let file = self.file("step.sh");
        std::fs::write(&file, script).unwrap();
        let path = std::env::join_paths(&self.path).unwrap();
        let out = Command::new("bash")
            .args(["--noprofile", "--norc", "-eo", "pipefail"])
            .arg(&file)
            .current_dir(self.workspace())
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .env("PATH", path)
            .output()
            .unwrap();
        // A runner puts what the step added to GITHUB_PATH in front of the next step's PATH.
        let added = std::fs::read_to_string(self.file("github_path")).unwrap_or_default();
        for dir in added.lines().filter(|l| !l.is_empty()) {
            let dir = PathBuf::from(dir);
            if !self.path.contains(&dir) {
                self.path.insert(0, dir);
            }
        }
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.code(), text)
    }
}

fn dir_of(program: &str) -> PathBuf {
    Path::new(program).parent().unwrap().to_path_buf()
}

#[test]
fn the_pasted_ci_job_certifies_a_redis_py_app_and_never_ends_9() {
    let test = "the_pasted_ci_job_certifies_a_redis_py_app_and_never_ends_9";
    let Some((python, _)) = common::tier::REDIS_PY.newest(test) else {
        return;
    };
    let Some(redis) = common::redis_server_binary(test) else {
        return;
    };
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(JOB)).unwrap();
    let (job_env, steps) = parse(&text);
    assert!(
        text.contains("\ndefaults:\n  run:\n    shell: bash\n"),
        "{JOB}: the shell"
    );
    assert!(
        text.contains("tests/clients/redis_py_app.py"),
        "{JOB}: the sample app"
    );
    let names: Vec<&str> = job_env.iter().map(|(k, _)| k.as_str()).collect();
    for (var, _) in overrides("") {
        assert!(names.contains(&var), "{JOB} does not document {var}");
    }

    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("workspace")).unwrap();
    // The build's own target directory, kept between runs (beside the test build's, whose
    // binaries it must not replace while other tests run them).
    let target = Path::new(common::BIN)
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("ci-job");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut env: Vec<(String, String)> = job_env;
    let runner_temp = dir.path().join("runner-temp");
    std::fs::create_dir_all(&runner_temp).unwrap();
    for (k, v) in overrides(&python)
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .chain([
            ("HOME".into(), std::env::var("HOME").unwrap_or_default()),
            ("CARGO_TARGET_DIR".into(), target.display().to_string()),
            ("CARGO_NET_OFFLINE".into(), "true".into()),
            ("RUNNER_TEMP".into(), runner_temp.display().to_string()),
            (
                "GITHUB_PATH".into(),
                dir.path().join("github_path").display().to_string(),
            ),
            (
                "GITHUB_OUTPUT".into(),
                dir.path().join("github_output").display().to_string(),
            ),
            (
                "GITHUB_WORKSPACE".into(),
                dir.path().join("workspace").display().to_string(),
            ),
            ("GITHUB_ACTIONS".into(), "true".into()),
            ("CI".into(), "true".into()),
        ])
    {
        env.retain(|(key, _)| key != &k);
        env.push((k, v));
    }
    let mut runner = Runner {
        dir,
        // redis-server and cargo where a runner has them; nothing else of this machine's PATH.
        path: vec![
            dir_of(&redis),
            dir_of(&cargo),
            "/usr/local/bin".into(),
            "/usr/bin".into(),
            "/bin".into(),
        ],
        env,
    };
    let mut failed = false;
    let mut log = String::new();
    for step in &steps {
        if failed && !step.always {
            continue;
        }
        match (&step.uses, &step.run) {
            (Some(uses), None) => runner.stand_in(step, uses, &python),
            (None, Some(script)) => {
                assert!(
                    !script.contains("${{"),
                    "{}: a run block is plain shell",
                    step.name
                );
                let (code, out) = runner.run(script);
                log.push_str(&format!("== {} (exit {code:?})\n{out}", step.name));
                failed = code != Some(0);
            }
            _ => panic!(
                "{JOB}: step {:?} has neither or both of uses and run",
                step.name
            ),
        }
    }
    // What each step printed, for `--nocapture` (the harness keeps it from a passing run).
    eprintln!("{log}");
    let output = std::fs::read_to_string(runner.file("github_output")).unwrap_or_default();
    let code = output
        .lines()
        .find_map(|l| l.strip_prefix("code="))
        .unwrap_or_else(|| panic!("the certify step never ran:\n{log}"));
    assert!(code == "0" || code == "1", "certify ended {code}:\n{log}");
    assert_eq!(
        failed,
        code == "1",
        "the job's outcome follows the exit code:\n{log}"
    );
    for scenario in SCENARIOS.split(',') {
        assert!(
            log.contains(&format!("certify: {scenario}: ")),
            "{scenario}:\n{log}"
        );
    }
}

/// The job's variables as this test sets them (`python` for the client check).
fn overrides(python: &str) -> Vec<(&'static str, String)> {
    vec![
        ("MAINTWATCH_PROFILE", "dev".into()),
        ("MAINTWATCH_SCENARIOS", SCENARIOS.into()),
        (
            "CLIENT_INSTALL",
            format!("python3 -c 'import redis' # the tier's venv ({python}) has it"),
        ),
    ]
}
