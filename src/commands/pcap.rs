//! `maintwatch pcap`: reads capture files through [`crate::observe::pcap`] and writes its lines, human
//! or JSON, as they come, then the summary.

use crate::cli::pcap::PcapSettings;
use crate::exit;
use crate::observe::pcap::capture_lines::{FileLine, Line, PcapLine};
use crate::observe::pcap::{packet, read, Analyzer, Stats};
use crate::observe::record::write as json;
use crate::observe::record::SCHEMA_VERSION;
use crate::present::output::human::Style;
use crate::present::output::sink::{self, Record, Sink};
use crate::present::output::terminal;
use crate::present::report::{Collected, Report};
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
    let graded_run = settings.analyzer.grade;
    let mut analyzer = Analyzer::new(settings.analyzer, format!("capture {}", names.join(", ")));
    let mut writer = Writer {
        json: settings.json,
        lines: sink::lines(&mut *out, settings.json, settings.style, true),
        report: settings.report.as_ref().map(|_| Collected::default()),
    };
    // Lines are written as each file is read, so a long capture shows progress; a file that
    // cannot be read stops the command after what was already written.
    let mut files = Vec::new();
    for (path, name) in settings.files.iter().zip(&names) {
        match read_one(path, name, &mut analyzer, &mut writer, err)? {
            Some(file) => files.push(file),
            None => return Ok(exit::FAILURE),
        }
    }
    let summary = analyzer.finish();
    for l in analyzer.take_lines() {
        writer.write(&l)?;
    }
    writer.write(&Line::Watch(summary))?;
    writer.write(&end_line(files, &analyzer.stats))?;
    writer.lines.flush()?;
    let collected = writer.report.take();
    drop(writer);
    let dropped = analyzer.dns_dropped();
    if dropped > 0 {
        writeln!(err, "{}", terminal::about("pcap", &format!("warning: {dropped} DNS answer(s) past the first 65536 were not used by the grade")))?;
    }
    let (code, graded) = grade(&mut analyzer, settings.json, out)?;
    out.flush()?;
    if let (Some(path), Some(lines)) = (&settings.report, &collected) {
        let command =
            crate::present::report::command_line(if graded_run { "pcap --grade" } else { "pcap" });
        let report = Report {
            command: &command,
            source: format!("capture {}", names.join(", ")),
            lines,
            observations: graded.as_ref().map(|(obs, _)| obs),
            grade: graded.as_ref().map(|(_, g)| g),
            notes: Vec::new(),
        };
        report.write(path)?;
    }
    Ok(code)
}

/// Writes lines through the sink `--json` picks: one JSON object a line, or rendered for a
/// person.
struct Writer<'a> {
    json: bool,
    lines: Box<dyn Sink + 'a>,
    /// With `--report`, what the page keeps of the lines, taken as they are written.
    report: Option<Collected>,
}

impl Writer<'_> {
    fn write(&mut self, line: &Line) -> anyhow::Result<()> {
        if let Some(r) = &mut self.report {
            r.pcap_line(line);
        }
        Ok(self.lines.record(line)?)
    }
}

/// A watch line goes through the watch's own JSON writer; a `pcap_*` line through serde. People
/// read the capture's rendering, which tells a connection by its client's address.
impl Record for Line {
    fn write_json(&self, out: &mut Vec<u8>) -> std::io::Result<()> {
        match self {
            Line::Watch(w) => json::write_object(out, w),
            Line::Pcap(p) => json::write_value(out, p),
        }
    }

    fn render(&self, style: &Style) -> Vec<String> {
        crate::present::output::pcap_screen::render(self, style)
    }
}

/// Reads one capture file through the analyzer, writing its lines and warnings as they come.
/// `None` when the file could not be read (the error is already on `err`).
fn read_one(
    path: &std::path::Path,
    name: &str,
    analyzer: &mut Analyzer,
    writer: &mut Writer,
    err: &mut dyn Write,
) -> anyhow::Result<Option<FileLine>> {
    let report = read::read_file(path, |p| {
        if !packet::supported(p.linktype) {
            anyhow::bail!(
                "{} is not supported (supported: Ethernet, Linux cooked capture v1 and v2, loopback/null, raw IP)",
                packet::linktype_name(p.linktype)
            );
        }
        analyzer.packet(&p);
        if analyzer.has_lines() {
            for l in analyzer.take_lines() {
                writer.write(&l)?;
            }
        }
        Ok(())
    });
    let report = match report {
        Ok(r) => r,
        Err(e) => {
            writer.lines.flush()?;
            writeln!(
                err,
                "{}",
                terminal::about("pcap", &format!("{name}: {e:#}"))
            )?;
            return Ok(None);
        }
    };
    // Warnings always go to stderr; in JSON they are also lines, so a reader of the JSON
    // alone sees them.
    for text in warnings(&report) {
        writeln!(
            err,
            "{}",
            terminal::about("pcap", &format!("warning: {name}: {text}"))
        )?;
        if writer.json {
            let warning = PcapLine::PcapWarning {
                v: SCHEMA_VERSION,
                file: name.to_string(),
                text,
            };
            writer.write(&Line::Pcap(warning))?;
        }
    }
    Ok(Some(FileLine {
        file: name.to_string(),
        format: match report.format {
            Some(read::Format::PcapNg) => "pcapng",
            _ => "pcap",
        }
        .into(),
        packets: report.packets,
        truncated_bytes: report.truncated,
    }))
}

/// The last line: the files read and the analyzer's counters.
fn end_line(files: Vec<FileLine>, s: &Stats) -> Line {
    Line::Pcap(PcapLine::PcapEnd {
        v: SCHEMA_VERSION,
        files,
        packets: s.packets,
        tcp_streams: s.tcp_streams,
        resp_conns: s.resp_conns,
        tls_streams: s.tls_streams,
        ignored_streams: s.ignored_streams,
        bad_packets: s.bad_packets,
        snapped_packets: s.snapped_packets,
        gaps: s.gaps,
        pruned_streams: s.pruned_streams,
    })
}

/// What the judge was given and what it answered.
type Graded = (
    crate::grading::judge::Observations,
    crate::grading::judge::Grade,
);

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
    let g = crate::grading::judge::judge(&obs);
    super::write_grade(out, &obs, &g, json)?;
    let code = g.verdict.exit_code();
    Ok((code, Some((obs, g))))
}

/// What a file's reading left out, one sentence each: skipped blocks, then a cut at the end.
fn warnings(report: &read::FileReport) -> Vec<String> {
    let mut out: Vec<String> = report
        .skipped
        .iter()
        .map(|b| {
            format!(
                "skipped a malformed pcapng {} block at byte {} ({} bytes: {}); read on from the next block",
                b.block, b.offset, b.bytes, b.what
            )
        })
        .collect();
    let unshown = report.skipped_blocks - report.skipped.len() as u64;
    if unshown > 0 {
        out.push(format!("skipped {unshown} more malformed pcapng block(s)"));
    }
    if report.packets_on_skipped_interfaces > 0 {
        out.push(format!(
            "{} packet(s) on an interface whose description block was skipped were not read (link type unknown)",
            report.packets_on_skipped_interfaces
        ));
    }
    if let Some(bytes) = report.truncated {
        out.push(format!(
            "the file ends inside a packet ({bytes} byte(s) after the last whole one): read up to the last whole packet"
        ));
    }
    out
}
