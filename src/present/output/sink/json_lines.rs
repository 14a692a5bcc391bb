//! The JSON-lines sink: the documented schema, one line per timeline line.

use std::io;

use super::traits::{LineWriter, Record, Sink};
use crate::observe::record::write as json;
use crate::observe::record::WatchLine;

/// JSON lines of the documented schema, one per timeline line. Each line is made once
/// ([`json::write_line`]) and handed to `out` whole ([`LineWriter::put_line`]).
pub struct JsonLines<W: LineWriter> {
    out: W,
    text: Vec<u8>,
}

impl<W: LineWriter> JsonLines<W> {
    pub fn new(out: W) -> JsonLines<W> {
        JsonLines {
            out,
            text: Vec::with_capacity(512),
        }
    }
}

impl<W: LineWriter> Sink for JsonLines<W> {
    fn line(&mut self, line: &WatchLine) -> io::Result<()> {
        self.out
            .put_line(&mut self.text, |text| json::write_line(text, line))
    }

    fn line_of(&mut self, ep: &str, line: &WatchLine) -> io::Result<()> {
        self.out.put_line(&mut self.text, |text| {
            crate::observe::record::write::write_json(text, Some(ep), line)?;
            text.push(b'\n');
            Ok(())
        })
    }

    fn record(&mut self, line: &dyn Record) -> io::Result<()> {
        self.out.put_line(&mut self.text, |text| {
            line.write_json(text)?;
            text.push(b'\n');
            Ok(())
        })
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}
