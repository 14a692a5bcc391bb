//! How `pcap` writes as it reads, so a long capture shows progress: each line through the sink
//! `--json` picks (one JSON object a line, or rendered for a person) and, with `--report`, into
//! what the page keeps; a file's warnings on stderr and, in JSON, also as lines. It stands
//! beside `output` and `report` because it feeds both.

use crate::observe::pcap::capture_lines::{Line, PcapLine};
use crate::observe::record::SCHEMA_VERSION;
use crate::present::output::human::Style;
use crate::present::output::sink::{self, Sink};
use crate::present::output::terminal;
use crate::present::report::Collected;
use std::io::Write;

/// `pcap`'s lines on their way out.
pub struct PcapWriter<'a> {
    json: bool,
    lines: Box<dyn Sink + 'a>,
    /// With `--report`, what the page keeps of the lines, taken as they are written.
    report: Option<Collected>,
}

impl<'a> PcapWriter<'a> {
    /// Lines to `out`, as JSON or for people in `style`; `page` keeps them for `--report`.
    pub fn new(out: &'a mut dyn Write, json: bool, style: Style, page: bool) -> PcapWriter<'a> {
        PcapWriter {
            json,
            lines: sink::lines(out, json, style, true),
            report: page.then(Collected::default),
        }
    }

    pub fn write(&mut self, line: &Line) -> anyhow::Result<()> {
        if let Some(r) = &mut self.report {
            r.pcap_line(line);
        }
        Ok(self.lines.record(line)?)
    }

    /// A file that could not be read: its error on stderr, after the lines already written.
    pub fn unreadable(
        &mut self,
        name: &str,
        e: &anyhow::Error,
        err: &mut dyn Write,
    ) -> anyhow::Result<()> {
        self.lines.flush()?;
        writeln!(
            err,
            "{}",
            terminal::about("pcap", &format!("{name}: {e:#}"))
        )?;
        Ok(())
    }

    /// What a file's reading left out: always on stderr; in JSON also lines, so a reader of the
    /// JSON alone sees them.
    pub fn warnings(
        &mut self,
        name: &str,
        texts: Vec<String>,
        err: &mut dyn Write,
    ) -> anyhow::Result<()> {
        for text in texts {
            writeln!(
                err,
                "{}",
                terminal::about("pcap", &format!("warning: {name}: {text}"))
            )?;
            if self.json {
                let warning = PcapLine::PcapWarning {
                    v: SCHEMA_VERSION,
                    file: name.to_string(),
                    text,
                };
                self.write(&Line::Pcap(warning))?;
            }
        }
        Ok(())
    }

    /// The last line written: flushes, and hands over what the page kept.
    pub fn finish(mut self) -> anyhow::Result<Option<Collected>> {
        self.lines.flush()?;
        Ok(self.report.take())
    }
}

/// DNS answers the grade could not keep, said on stderr.
pub fn dns_dropped(dropped: u64, err: &mut dyn Write) -> std::io::Result<()> {
    if dropped > 0 {
        let text = format!(
            "warning: {dropped} DNS answer(s) past the first 65536 were not used by the grade"
        );
        writeln!(err, "{}", terminal::about("pcap", &text))?;
    }
    Ok(())
}
