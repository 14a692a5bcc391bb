//! `maintwatch pcap`: reads capture files through [`crate::observe::pcap`] and writes its lines,
//! human or JSON, as they come ([`crate::present::pcap_writer`]), then the summary, and with
//! `--grade` the judge's verdict.

use crate::cli::pcap::PcapSettings;
use crate::exit;
use crate::grading::judge::{self, Grade, Observations};
use crate::observe::pcap::capture_files::{self, end_line};
use crate::observe::pcap::capture_lines::Line;
use crate::observe::pcap::Analyzer;
use crate::present::pcap_writer::{self, PcapWriter};
use crate::present::report::Report;
use std::io::Write;

pub fn run(
    settings: PcapSettings,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<i32> {
    let names: Vec<String> = settings
        .files
        .iter()
        .map(|f| f.display().to_string())
        .collect();
    let source = format!("capture {}", names.join(", "));
    let graded_run = settings.analyzer.grade;
    let mut analyzer = Analyzer::new(settings.analyzer, source.clone());
    let page = settings.report.is_some();
    let mut writer = PcapWriter::new(&mut *out, settings.json, settings.style, page);
    // Lines are written as each file is read, so a long capture shows progress; a file that
    // cannot be read stops the command after what was already written.
    let mut files = Vec::new();
    for (path, name) in settings.files.iter().zip(&names) {
        let report = match capture_files::read_into(path, &mut analyzer, |l| writer.write(l)) {
            Ok(report) => report,
            Err(e) => {
                writer.unreadable(name, &e, err)?;
                return Ok(exit::FAILURE);
            }
        };
        writer.warnings(name, capture_files::warnings(&report), err)?;
        files.push(capture_files::file_line(name, &report));
    }
    let summary = analyzer.finish();
    for l in analyzer.take_lines() {
        writer.write(&l)?;
    }
    writer.write(&Line::Watch(summary))?;
    writer.write(&end_line(files, &analyzer.stats))?;
    let collected = writer.finish()?;
    pcap_writer::dns_dropped(analyzer.dns_dropped(), err)?;
    let (code, graded) = grade(&mut analyzer, settings.json, out)?;
    out.flush()?;
    if let (Some(path), Some(lines)) = (&settings.report, &collected) {
        let command =
            crate::present::report::command_line(if graded_run { "pcap --grade" } else { "pcap" });
        let report = Report {
            command: &command,
            source,
            lines,
            observations: graded.as_ref().map(|(obs, _)| obs),
            grade: graded.as_ref().map(|(_, g)| g),
            notes: Vec::new(),
        };
        report.write(path)?;
    }
    Ok(code)
}

/// What the judge was given and what it answered.
type Graded = (Observations, Grade);

/// With `--grade`, the judge's verdict on the capture: its table or its JSON lines, the exit
/// code (failure when a rule failed), and the grade for a report.
fn grade(
    analyzer: &mut Analyzer,
    json: bool,
    out: &mut dyn Write,
) -> anyhow::Result<(i32, Option<Graded>)> {
    let Some(obs) = analyzer.observations() else {
        return Ok((exit::SUCCESS, None));
    };
    let g = judge::judge(&obs);
    super::write_grade(out, &obs, &g, json)?;
    let code = g.verdict.exit_code();
    Ok((code, Some((obs, g))))
}
