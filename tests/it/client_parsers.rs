//! `decode --clients` checked against the real parsers: redis-py and node-redis parse the same
//! corpus (the seven captured Enterprise frames, the peer variants, malformed and older shapes:
//! `tests/fixtures/client-frames.txt`) through their own RESP readers and maintenance handlers
//! (`tests/clients/redis_py_parse.py`, `tests/clients/node_redis_parse.js`), and each verdict
//! (acts / ignores / fails, and a MOVING's target as read) must be what `decode --clients`
//! predicts, for a client that asked for `internal-ip` and for one that asked for `none`.
//!
//! Needs `MAINTWATCH_PYTHON` (a Python with redis-py 8.1) and `MAINTWATCH_NODE_REDIS` (a folder
//! whose node_modules has `redis` 6). Unset or empty: a SKIP line. Set but unusable: the test
//! fails.

use crate::common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

const ASKED: [&str; 2] = ["internal-ip", "none"];

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The corpus: (name, bytes), captures first.
fn corpus() -> Vec<(String, Vec<u8>)> {
    let dir = repo().join("tests/fixtures/captures");
    let mut captures: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "resp"))
        .collect();
    captures.sort();
    assert_eq!(captures.len(), 7, "the seven captured frames");
    let mut out: Vec<(String, Vec<u8>)> = captures
        .iter()
        .map(|p| {
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(p).unwrap())
        })
        .collect();
    let text = std::fs::read_to_string(repo().join("tests/fixtures/client-frames.txt")).unwrap();
    for line in text
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let (name, escaped) = line.split_once('\t').expect("name<TAB>frame");
        let bytes = maintwatch::shared::escape::unescape(escaped).expect("escaped frame");
        out.push((name.to_string(), bytes));
    }
    out
}

/// What `decode --clients --json` predicts: per frame, client name -> verdict.
fn predictions(corpus: &[(String, Vec<u8>)], asked: &str) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("corpus.resp");
    std::fs::write(
        &file,
        corpus
            .iter()
            .flat_map(|(_, b)| b.clone())
            .collect::<Vec<u8>>(),
    )
    .unwrap();
    let out = common::maintwatch([
        "decode",
        "--format",
        "raw",
        "--json",
        "--clients",
        "--endpoint-type",
        asked,
    ])
    .arg(&file)
    .output()
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        lines.len(),
        corpus.len(),
        "one decoded frame per corpus entry"
    );
    lines
}

fn predicted<'a>(line: &'a Value, client: &str) -> &'a Value {
    line["clients"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["client"] == client)
        .map(|c| &c["verdict"])
        .unwrap()
}

/// Runs a harness with the corpus on stdin (`name<TAB>hex`), one JSON verdict per line back.
fn harness(mut cmd: Command, corpus: &[(String, Vec<u8>)]) -> Vec<Value> {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the harness starts");
    let mut input = String::new();
    for (name, bytes) in corpus {
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        input.push_str(&format!("{name}\t{hex}\n"));
    }
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "harness failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), corpus.len(), "one verdict per frame");
    lines
}

/// Compares the real verdicts with the predictions; returns the mismatches.
fn compare(client: &str, real: &[Value], predicted_lines: &[Value], asked: &str) -> Vec<String> {
    let mut wrong = Vec::new();
    for (r, p) in real.iter().zip(predicted_lines) {
        let p = predicted(p, client);
        let name = r["name"].as_str().unwrap();
        if r["outcome"] != p["outcome"] {
            wrong.push(format!(
                "{client} asked {asked}, {name}: really {} ({}), predicted {p}",
                r["outcome"], r["detail"]
            ));
            continue;
        }
        if r["outcome"] == "acts" && !r["target"].is_null() && r["target"] != p["target"] {
            wrong.push(format!(
                "{client} asked {asked}, {name}: really moves to {}, predicted {p}",
                r["target"]
            ));
        }
    }
    wrong
}

fn configured(var: &str, test: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => Some(v),
        _ => {
            crate::common::skip(test, &format!("{var} is unset or empty (.ci/run sets it)"));
            None
        }
    }
}

/// Runs the library's harness (`PROGRAM tests/clients/SCRIPT [ASKED]`, in `dir`) on the corpus
/// and asserts it took every message as `decode --clients` predicts, for each endpoint type
/// asked: told the type (`per_asked`, one run each), or one run serving both.
fn assert_parses_as_predicted(
    library: &str,
    program: &str,
    dir: Option<&str>,
    script: &str,
    per_asked: bool,
) {
    let corpus = corpus();
    let script = repo().join("tests/clients").join(script);
    let run = |asked: Option<&str>| {
        let mut cmd = Command::new(program);
        cmd.arg(&script).args(asked);
        if let Some(dir) = dir {
            cmd.current_dir(dir);
        }
        harness(cmd, &corpus)
    };
    let once = (!per_asked).then(|| run(None));
    let mut wrong = Vec::new();
    for asked in ASKED {
        let real = match &once {
            Some(real) => real.clone(),
            None => run(Some(asked)),
        };
        let predicted = predictions(&corpus, asked);
        wrong.extend(compare(library, &real, &predicted, asked));
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn redis_py_parses_the_corpus_as_predicted() {
    let Some(python) = configured("MAINTWATCH_PYTHON", "redis-py parser conformance") else {
        return;
    };
    assert_parses_as_predicted("redis-py", &python, None, "redis_py_parse.py", true);
}

#[test]
fn node_redis_parses_the_corpus_as_predicted() {
    let Some(dir) = configured("MAINTWATCH_NODE_REDIS", "node-redis parser conformance") else {
        return;
    };
    // Set but without node-redis: a failure naming the folder.
    crate::common::tier::NODE_REDIS.version_of(&dir);
    assert_parses_as_predicted(
        "node-redis",
        "node",
        Some(&dir),
        "node_redis_parse.js",
        true,
    );
}

/// ioredis 6.1 (`MAINTWATCH_IOREDIS`, a folder whose node_modules has `ioredis`): its decoder and
/// notification parser take the corpus as `decode --clients` predicts. It asks for no `none`
/// special case, so one pass serves both endpoint types.
#[test]
fn ioredis_parses_the_corpus_as_predicted() {
    let Some(dir) = configured("MAINTWATCH_IOREDIS", "ioredis parser conformance") else {
        return;
    };
    assert_parses_as_predicted("ioredis", "node", Some(&dir), "ioredis_parse.js", false);
}
