//! The user documentation kept honest against the code: `docs/jsonl.md` names every line type,
//! field and enumerated value the JSON-lines schema has, and `docs/protocol.md` is the protocol
//! reference every user-visible mention points to, with the sections they cite.
//!
//! The schema's names are read from the types themselves: every schema type denies unknown
//! fields, and serde's refusal of one lists the fields the type has ("unknown field `x`,
//! expected one of `a`, `b`"), as its refusal of an unknown variant lists the variants. A field
//! added to the code and not to the doc fails here.

use crate::common;

use maintwatch::observe::record::{
    ConnTotals, CopyOf, DecodeLine, EventRow, FrameRecord, Label, OptInOutcome, OptInTally, Rel,
    WatchLine,
};
use maintwatch::protocol::azure::{AzureEvent, AzureKind};
use maintwatch::protocol::notification::{
    Classified, HostPort, Migrations, Notification, OtherPush, ShardIds, SlotMove, Slots,
    SmigratedForm, Target,
};
use serde::de::DeserializeOwned;
use std::path::Path;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn doc(name: &str) -> String {
    std::fs::read_to_string(root().join("docs").join(name)).unwrap()
}

/// The backquoted names after "expected" in a serde error message.
fn expected_names(message: &str) -> Vec<String> {
    let Some((_, list)) = message.split_once("expected") else {
        panic!("not a list of names: {message}");
    };
    list.split('`')
        .skip(1)
        .step_by(2)
        .map(String::from)
        .collect()
}

/// The fields of a struct-like type, from its refusal of an unknown field.
fn fields_of<T: DeserializeOwned + std::fmt::Debug>(json: &str) -> Vec<String> {
    let message = serde_json::from_str::<T>(json)
        .expect_err("an unknown field is refused")
        .to_string();
    assert!(message.contains("unknown field"), "{message}");
    expected_names(&message)
}

/// The variants of an enum, from its refusal of an unknown one.
fn variants_of<T: DeserializeOwned + std::fmt::Debug>(json: &str) -> Vec<String> {
    let message = serde_json::from_str::<T>(json)
        .expect_err("an unknown variant is refused")
        .to_string();
    assert!(message.contains("unknown variant"), "{message}");
    expected_names(&message)
}

/// The table row of `docs/jsonl.md` for one line type, within the section titled `section`.
fn row<'a>(text: &'a str, section: &str, kind: &str) -> &'a str {
    let start = text
        .find(section)
        .unwrap_or_else(|| panic!("no {section:?}"));
    let body = &text[start + section.len()..];
    let body = &body[..body.find("\n## ").unwrap_or(body.len())];
    let head = format!("| `{kind}` |");
    body.lines()
        .find(|l| l.starts_with(&head))
        .unwrap_or_else(|| panic!("docs/jsonl.md, {section}: no row for `{kind}`"))
}

fn quoted(name: &str) -> String {
    format!("`{name}`")
}

#[test]
fn jsonl_doc_names_every_watch_line_and_its_fields() {
    let text = doc("jsonl.md");
    let kinds = variants_of::<WatchLine>(r#"{"type":"no_such_line"}"#);
    assert!(kinds.len() >= 14, "{kinds:?}");
    let mut missing = Vec::new();
    for kind in &kinds {
        let line = row(&text, "## `watch` lines", kind);
        let json = format!(r#"{{"type":"{kind}","no_such_field":1}}"#);
        for field in fields_of::<WatchLine>(&json) {
            // Carried by every line, documented once at the top.
            if ["v", "t", "at"].contains(&field.as_str()) {
                continue;
            }
            if !line.contains(&quoted(&field)) {
                missing.push(format!("{kind}.{field}"));
            }
        }
    }
    assert!(missing.is_empty(), "docs/jsonl.md lacks {missing:?}");
}

#[test]
fn jsonl_doc_names_every_decode_line_and_its_fields() {
    let text = doc("jsonl.md");
    let mut missing = Vec::new();
    for kind in variants_of::<DecodeLine>(r#"{"type":"no_such_line"}"#) {
        let line = row(&text, "## `decode --json` lines", &kind);
        let json = format!(r#"{{"type":"{kind}","no_such_field":1}}"#);
        for field in fields_of::<DecodeLine>(&json) {
            if field != "v" && !line.contains(&quoted(&field)) {
                missing.push(format!("{kind}.{field}"));
            }
        }
    }
    assert!(missing.is_empty(), "docs/jsonl.md lacks {missing:?}");
}

#[test]
fn jsonl_doc_names_every_nested_field_and_value() {
    let text = doc("jsonl.md");
    let unknown = r#"{"no_such_field":1}"#;
    let mut names: Vec<(&str, Vec<String>)> = vec![
        ("frame", fields_of::<FrameRecord>(unknown)),
        ("rel", fields_of::<Rel>(unknown)),
        ("copy_of", fields_of::<CopyOf>(unknown)),
        ("summary.events", fields_of::<EventRow>(unknown)),
        ("summary.conns", fields_of::<ConnTotals>(unknown)),
        ("summary.opt_in", fields_of::<OptInTally>(unknown)),
        ("parsed (maintenance)", fields_of::<Notification>(unknown)),
        ("parsed (other_push)", fields_of::<OtherPush>(unknown)),
        ("target", fields_of::<Target>(unknown)),
        ("address", fields_of::<HostPort>(unknown)),
        ("shards", fields_of::<ShardIds>(unknown)),
        ("slots", fields_of::<Slots>(unknown)),
        ("migrations", fields_of::<Migrations>(unknown)),
        ("migrations.moves", fields_of::<SlotMove>(unknown)),
        ("event (azure_event)", fields_of::<AzureEvent>(unknown)),
    ];
    let value = r#""no_such_value""#;
    names.push(("labels", variants_of::<Label>(value)));
    names.push(("opt_in", variants_of::<OptInOutcome>(value)));
    names.push(("migrations.form", variants_of::<SmigratedForm>(value)));
    names.push(("event.kind", variants_of::<AzureKind>(value)));
    names.push((
        "parsed.class",
        variants_of::<Classified>(r#"{"class":"no_such_class"}"#),
    ));
    let mut missing = Vec::new();
    for (what, list) in &names {
        assert!(!list.is_empty(), "{what}");
        for name in list {
            if !text.contains(&quoted(name)) {
                missing.push(format!("{what}: {name}"));
            }
        }
    }
    assert!(missing.is_empty(), "docs/jsonl.md lacks {missing:?}");
}

#[test]
fn the_name_reader_sees_a_field_the_doc_lacks() {
    // The check above can fail: a name the doc does not have is reported as missing.
    let fields = fields_of::<CopyOf>(r#"{"no_such_field":1}"#);
    assert_eq!(fields, ["conn", "after_ms"]);
    let text = "| `push` | `conn` |";
    assert!(!row(text, "", "push").contains(&quoted("after_ms")));
}

/// Files a user reads: the README, the docs, the scenarios, help and man pages, the sources.
fn user_files() -> Vec<std::path::PathBuf> {
    let mut out = vec![root().join("README.md")];
    let mut dirs = vec![
        root().join("docs"),
        root().join("scenarios"),
        root().join("man"),
        root().join("completions"),
        root().join("src"),
        root().join("tests/fixtures"),
    ];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out
}

/// The section numbers right after "section": `4`, `1 and 7`, `1-4`, `4-5`.
fn cited_sections(rest: &str) -> Vec<u32> {
    let mut out = Vec::new();
    let mut rest = rest.trim_start_matches('s').trim_start();
    loop {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let Ok(n) = rest[..digits].parse() else {
            return out;
        };
        out.push(n);
        rest = &rest[digits..];
        match ["-", " and ", ", "]
            .iter()
            .find(|sep| rest.starts_with(**sep))
        {
            Some(sep) => rest = &rest[sep.len()..],
            None => return out,
        }
    }
}

#[test]
fn section_citations_are_read_as_written() {
    assert_eq!(cited_sections(" 4 (Redis Enterprise 8.0.22 / 8.6.2)"), [4]);
    assert_eq!(cited_sections("s 1 and 7):"), [1, 7]);
    assert_eq!(cited_sections("s 1-4); where"), [1, 4]);
    assert_eq!(cited_sections(" 9"), [9]);
}

#[test]
fn protocol_references_point_to_docs_protocol_md_and_its_sections() {
    let protocol = doc("protocol.md");
    let sections: Vec<u32> = protocol
        .lines()
        .filter_map(|l| l.strip_prefix("## "))
        .filter_map(|h| h.split_once('.').and_then(|(n, _)| n.parse().ok()))
        .collect();
    assert_eq!(sections, (1..=9).collect::<Vec<u32>>());
    assert!(
        protocol.contains("\n## Sources\n"),
        "docs/protocol.md names its sources"
    );
    let mut stale = Vec::new();
    let mut bad_sections = Vec::new();
    for path in user_files() {
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue; // binary fixtures
        };
        let shown = path.strip_prefix(root()).unwrap().display().to_string();
        if text.contains("PROTOCOL.md") {
            stale.push(shown.clone());
        }
        // "docs/protocol.md section 4", "docs/protocol.md sections 1 and 7", "(docs/protocol.md, sections 1-4)"
        for (i, _) in text.match_indices("protocol.md") {
            let after: String = text[i..].chars().take(40).collect();
            let after = after.replace('\n', " ");
            let Some(rest) = after.split_once("section").map(|(_, r)| r) else {
                continue;
            };
            for n in cited_sections(rest) {
                if !sections.contains(&n) {
                    bad_sections.push(format!("{shown}: {after}"));
                }
            }
        }
    }
    let help = common::maintwatch(["--help"]).output().unwrap();
    if String::from_utf8_lossy(&help.stdout).contains("PROTOCOL.md") {
        stale.push("maintwatch --help".into());
    }
    assert!(stale.is_empty(), "still refer to PROTOCOL.md: {stale:?}");
    assert!(bad_sections.is_empty(), "{bad_sections:?}");
}

#[test]
fn jsonl_doc_names_the_fleet_label() {
    let text = doc("jsonl.md");
    let plain = r#"{"type":"verdict","v":1,"t":1.5,"at":"x","conn":1,"event":"MOVING seq 0","text":"x","margin_s":6.1}"#;
    let line: WatchLine = serde_json::from_str(plain).unwrap();
    let mut tagged = Vec::new();
    maintwatch::observe::record::write::write_json(&mut tagged, Some("db:6379"), &line).unwrap();
    let keys = |bytes: &[u8]| -> Vec<String> {
        let v: serde_json::Value = serde_json::from_slice(bytes).unwrap();
        v.as_object().unwrap().keys().cloned().collect()
    };
    let own = keys(plain.as_bytes());
    let added: Vec<String> = keys(&tagged)
        .into_iter()
        .filter(|k| !own.contains(k))
        .collect();
    assert_eq!(added, ["ep"]);
    for field in &added {
        assert!(
            text.contains(&format!("| {} |", quoted(field))),
            "docs/jsonl.md lacks `{field}`"
        );
    }
}

/// docs/certify.md's scenario tables are written from the scenario files: for each group
/// `certify --help` lists (default, cluster, azure), in its order, each scenario with the length
/// its file gives and what certify judges there (the file's `#@ tests` line), between the
/// group's markers, and the default set's total under its table. A new scenario is its file and its README row; `MAINTWATCH_REGENERATE=1`
/// writes the tables again. The doc once said 36 s where the file said 38.
#[test]
fn certify_doc_scenario_tables_are_the_scenario_files() {
    use maintwatch::cli::certify::{clock_seconds, default_scenarios, group, Needs};
    let mut text = doc("certify.md");
    for needs in [Needs::Nothing, Needs::Cluster, Needs::Azure] {
        let names = group(needs);
        let mut table = scenario_table(&names);
        if needs == Needs::Nothing {
            let total = clock_seconds(&names);
            table.push_str(&format!("\n{total} s of scenario clock together.\n"));
        }
        let (start, end) = (
            format!("<!-- scenarios {}:", needs.group()),
            format!("<!-- /scenarios {} -->", needs.group()),
        );
        let a = text.find(&start).expect("the group's start marker");
        let a = a + text[a..].find('\n').unwrap() + 1;
        let b = text.find(&end).expect("the group's end marker");
        if common::regenerating() {
            text.replace_range(a..b, &table);
        } else {
            assert_eq!(
                text[a..b],
                table,
                "docs/certify.md's `{}` table (MAINTWATCH_REGENERATE=1 writes it)",
                needs.group()
            );
        }
    }
    if common::regenerating() {
        std::fs::write(root().join("docs/certify.md"), &text).unwrap();
    }
    assert_eq!(group(Needs::Nothing), default_scenarios());
}

/// A table of `names`: each scenario's length and its file's `#@ tests` line.
fn scenario_table(names: &[&str]) -> String {
    let mut table = String::from("| scenario | lasts | what it tests |\n|---|---:|---|\n");
    for name in names {
        let s = maintwatch::simulator::sim::scenarios::by_name(name).unwrap();
        table.push_str(&format!(
            "| `{name}` | {} s | {} |\n",
            s.end,
            judged_in(name)
        ));
    }
    table
}

/// The `#@ tests` line of the scenario file named `name`.
fn judged_in(name: &str) -> String {
    let dir = root().join("scenarios");
    let named = format!("name {name} ");
    for entry in std::fs::read_dir(&dir).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap_or_default();
        if text
            .lines()
            .any(|l| l.starts_with(&named) || l == named.trim_end())
        {
            let line = text.lines().find_map(|l| l.strip_prefix("#@ tests "));
            return line
                .unwrap_or_else(|| panic!("scenarios/{name}: no `#@ tests` line"))
                .to_string();
        }
    }
    panic!("no scenario file is named {name}")
}

/// docs/demo.md's transcript is what `maintwatch demo --color never` prints now: it was
/// stale once (`+10.004 DNS ...` where the tool had come to print `+9.706 after MOVING seq 0:
/// DNS ...`). Compared record by record (a line and the lines it wrapped onto), whitespace and
/// table rules collapsed and every number made `N`, since times, ports, offsets and poll counts
/// change from run to run; each stream of records ([`demo_streams`]) is compared in its own
/// order, as the streams interleave as the scheduler runs them.
#[test]
fn the_demo_transcript_is_a_real_run() {
    let page = doc("demo.md");
    let shown = page
        .split_once("A real transcript of `maintwatch demo --color never`")
        .and_then(|(_, rest)| rest.split_once("```\n"))
        .and_then(|(_, rest)| rest.split_once("```\n"))
        .map(|(block, _)| block)
        .expect("docs/demo.md's transcript");
    let out = std::process::Command::new(common::BIN)
        .args(["demo", "--color", "never"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let run = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        demo_streams(shown),
        demo_streams(&run),
        "docs/demo.md's transcript differs from a run:\n{run}"
    );
}

/// The transcript's records by stream, each normalised ([`the_demo_transcript_is_a_real_run`]).
fn demo_streams(text: &str) -> [Vec<String>; 4] {
    let mut records: Vec<String> = Vec::new();
    for line in text.lines() {
        let starts = !line.starts_with(char::is_whitespace) || line.starts_with("    sim |");
        match records.last_mut() {
            Some(last) if !starts => {
                last.push(' ');
                last.push_str(line);
            }
            _ => records.push(line.to_string()),
        }
    }
    let normal = |record: &str| -> String {
        let mut out = String::new();
        let mut previous = ' ';
        for c in record.chars() {
            let c = match c {
                '0'..='9' => 'N',
                '.' if previous == 'N' => continue,
                c if c.is_whitespace() => ' ',
                c => c,
            };
            let repeats = matches!(c, 'N' | ' ' | '─' | '═');
            if !(repeats && c == previous) {
                out.push(c);
            }
            previous = c;
        }
        out.trim().to_string()
    };
    // The simulator's lines, the watch's own (`[-]`: DNS, the start), a connection's (`[1]`)
    // and the rest (the header, the summary): each stream is written in its order, and the
    // streams interleave as the scheduler runs their tasks.
    let mut streams: [Vec<String>; 4] = Default::default();
    for r in records.iter().map(|r| normal(r)) {
        let stream = if r.starts_with("sim |") {
            0
        } else if r.starts_with("N:N:N [-]") {
            1
        } else if r.starts_with("N:N:N [N]") {
            2
        } else {
            3
        };
        streams[stream].push(r);
    }
    streams
}

/// docs/protocol.md's table of rules has one row per rule the judge has, in the judge's order,
/// each beginning with the docs line the rule carries: a new rule is documented where it is
/// written, and a stale row fails here.
#[test]
fn each_rule_has_its_row_in_the_protocol_table_of_rules() {
    use maintwatch::grading::judge::rules::RULES;
    let protocol = doc("protocol.md");
    let rows: Vec<&str> = protocol
        .lines()
        .filter(|l| l.starts_with("| `") && l.contains("` | "))
        .collect();
    let mut named = Vec::new();
    for rule in RULES {
        let start = format!("| `{}` | {}", rule.name(), rule.doc());
        assert!(
            rows.iter().any(|r| r.starts_with(&start)),
            "docs/protocol.md has no row beginning {start:?}"
        );
        named.push(rule.name());
    }
    let in_table: Vec<&str> = protocol
        .split_once("### The rules\n")
        .map(|(_, t)| t)
        .unwrap_or("")
        .lines()
        .skip_while(|l| !l.starts_with("| `"))
        .take_while(|l| l.starts_with('|'))
        .filter_map(|l| l.strip_prefix("| `")?.split_once('`').map(|(n, _)| n))
        .collect();
    assert_eq!(in_table, named);
}
