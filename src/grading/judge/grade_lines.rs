//! The judge's JSON lines (docs/jsonl.md): `grade_input`, the observations a grade was made
//! from, and `grade`, the grade. `simulate --grade-json`, `pcap --grade --json` and
//! `replay --grade --json` write both; `replay --grade` reads the `grade_input` lines back and
//! judges them again with the current rules, so a client author can keep a run as a fixture.

use serde::{Deserialize, Serialize};

use super::verdicts::Grade;
use crate::observe::evidence::Observations;

/// The schema of the judge's lines: 2 since rule results carry a `verdict` (pass, fail or
/// not_judged) and the grade its counts. Version 1 `grade_input` lines read as they are: what
/// was added to the observations (stalls, waits, speed) is optional.
pub const GRADE_VERSION: u32 = 2;
/// The oldest `grade_input` schema this maintwatch reads.
const OLDEST_INPUT: u32 = 1;

/// One line of the judge's JSON.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum GradeLine {
    GradeInput { v: u32, observations: Observations },
    Grade { v: u32, grade: Grade },
}

/// The two lines of a grade, each ending in a newline.
pub fn write(obs: &Observations, grade: &Grade) -> serde_json::Result<String> {
    let input = GradeLine::GradeInput {
        v: GRADE_VERSION,
        observations: obs.clone(),
    };
    let graded = GradeLine::Grade {
        v: GRADE_VERSION,
        grade: grade.clone(),
    };
    Ok(format!(
        "{}\n{}\n",
        serde_json::to_string(&input)?,
        serde_json::to_string(&graded)?
    ))
}

/// The `grade_input` lines of `text`; none at all is an error too, naming what writes them.
pub fn inputs_found(text: &str) -> Result<Vec<Observations>, String> {
    match inputs(text) {
        Ok(i) if i.is_empty() => Err(
            "no grade_input line (written by simulate --grade-json or pcap --grade --json)"
                .to_string(),
        ),
        other => other,
    }
}

/// The `grade_input` lines of a file of JSON lines; other lines (the watch's, pcap's, a
/// `grade` line) are passed over. A `grade_input` line that does not read is an error naming
/// its line number.
pub fn inputs(text: &str) -> Result<Vec<Observations>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let value: serde_json::Value =
            serde_json::from_str(line).map_err(|e| format!("line {}: not JSON: {e}", i + 1))?;
        if value.get("type").and_then(|t| t.as_str()) != Some("grade_input") {
            continue;
        }
        match serde_json::from_value::<GradeLine>(value) {
            Ok(GradeLine::GradeInput { v, observations })
                if (OLDEST_INPUT..=GRADE_VERSION).contains(&v) =>
            {
                out.push(observations)
            }
            Ok(GradeLine::GradeInput { v, .. }) => {
                return Err(format!(
                    "line {}: grade_input of schema {v}, this maintwatch reads {OLDEST_INPUT} to {GRADE_VERSION}",
                    i + 1
                ))
            }
            Ok(_) => {}
            Err(e) => return Err(format!("line {}: grade_input: {e}", i + 1)),
        }
    }
    Ok(out)
}

/// The `grade` line of a file of JSON lines (the first one).
pub fn grade_of(text: &str) -> Option<Grade> {
    text.lines().find_map(|l| match serde_json::from_str(l) {
        Ok(GradeLine::Grade { grade, .. }) => Some(grade),
        _ => None,
    })
}
