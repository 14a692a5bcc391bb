//! Where `probe`'s reports go as they come, and its table at the end: JSON lines or the table
//! through the same `sink` switch as every command with `--json`, nothing with `--quiet`, and a
//! closed pipe taken quietly.

use std::io::{self, Write};

use crate::network::conn::probe::ProbeReport;
use crate::observe::record::write as json;
use crate::present::output::human::Style;
use crate::present::output::probe_table::{self, Layout, Row};
use crate::present::output::sink::{self, Sink};

/// Where the reports go: `output::sink::lines` picks JSON lines or text for people, as for every
/// command with `--json`. A report is written as it comes (a JSON sink writes it, one line per
/// endpoint; the text sink leaves it), the table at the end (the text sink shows it, a JSON sink
/// leaves it); `--quiet` has no sink. A closed pipe (`| head`) stops the output quietly; the
/// probe still finishes and exits with its code.
pub struct Output<'a> {
    sink: Option<Box<dyn Sink + 'a>>,
    error: Option<io::Error>,
}

impl<'a> Output<'a> {
    pub fn new(out: &'a mut (dyn Write + Send), json: bool, quiet: bool) -> Self {
        let sink = (!quiet).then(|| sink::lines(out, json, Style::default(), false));
        Output { sink, error: None }
    }

    /// Runs `write` on the sink, if it still takes output.
    fn write(&mut self, write: impl FnOnce(&mut dyn Sink) -> io::Result<()>) {
        let Some(sink) = &mut self.sink else {
            return;
        };
        if let Err(e) = write(sink.as_mut()).and_then(|()| sink.flush()) {
            self.sink = None;
            if e.kind() != io::ErrorKind::BrokenPipe {
                self.error = Some(e);
            }
        }
    }

    pub fn report(&mut self, r: &ProbeReport) {
        if self.sink.is_none() {
            return;
        }
        self.write(|s| s.record(&Report(r)));
    }

    pub fn finish(mut self, reports: &[ProbeReport], layout: Layout) -> io::Result<()> {
        if self.sink.is_some() {
            let rows: Vec<Row> = reports.iter().map(Row::of).collect();
            let table = probe_table::render(&rows, layout);
            let text = format!("{table}{}", probe_table::summary(reports));
            self.write(|s| s.note(&text));
        }
        match self.error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// A report as a line of probe's own schema: one JSON object for `--json`; nothing for
/// people, who get the table at the end.
struct Report<'r>(&'r ProbeReport);

impl sink::Record for Report<'_> {
    fn write_json(&self, out: &mut Vec<u8>) -> io::Result<()> {
        json::write_value(out, &self.0.json())
    }

    fn render(&self, _style: &Style) -> Vec<String> {
        Vec::new()
    }
}
