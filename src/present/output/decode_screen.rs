//! How `decode` shows what it read: each frame or Azure event as a line (`DecodeLine`, JSON or
//! text for people: where it starts, what it is, its bytes, its notes and with `--clients` what
//! each known client does with it), and a decoding error on stderr, in JSON also as a line. The
//! reading is `observe::decode`.

use crate::grading::clients;
use crate::network::conn::EndpointType;
use crate::observe::decode::Failure;
use crate::observe::record::write as json;
use crate::observe::record::{DecodeLine, FrameRecord, Raw, SCHEMA_VERSION};
use crate::present::output::human::{self, Style};
use crate::present::output::sink::{Record, Sink};
use crate::present::output::{terminal, text};
use crate::protocol::azure;
use crate::protocol::notification::Classified;
use crate::protocol::resp::Frame;
use std::io::Write;

/// The lines of one input: its name and what `--clients` and `--endpoint-type` asked.
pub struct DecodeScreen<'s> {
    pub source: &'s str,
    pub clients: bool,
    pub asked: Option<EndpointType>,
}

impl DecodeScreen<'_> {
    /// A frame's line: an `AzureRedisEvents` message's event, or the frame's parse.
    pub fn frame(
        &self,
        frame: &Frame<'_>,
        raw: &[u8],
        offset: u64,
        out: &mut dyn Sink,
    ) -> std::io::Result<()> {
        let record = FrameRecord::new(frame, raw, offset);
        let line = match azure::message_payload(frame) {
            Some(payload) => self.azure_line(offset, payload, Some(record)),
            None => DecodeLine::Frame {
                v: SCHEMA_VERSION,
                source: self.source.to_string(),
                frame: record,
                clients: self.clients.then(|| clients::verdicts(frame, self.asked)),
            },
        };
        out.record(&Decoded {
            line,
            frame: Some(frame),
            asked: self.asked,
        })
    }

    /// A bare `AzureRedisEvents` payload's line, from a line of text.
    pub fn azure(&self, offset: u64, payload: &[u8], out: &mut dyn Sink) -> std::io::Result<()> {
        out.record(&Decoded {
            line: self.azure_line(offset, payload, None),
            frame: None,
            asked: None,
        })
    }

    /// The line for one `AzureRedisEvents` payload, from a frame or a text line.
    fn azure_line(&self, offset: u64, payload: &[u8], frame: Option<FrameRecord>) -> DecodeLine {
        let event = azure::parse(payload);
        DecodeLine::AzureEvent {
            v: SCHEMA_VERSION,
            source: self.source.to_string(),
            offset,
            payload: Raw::Bytes(bytes::Bytes::copy_from_slice(payload)),
            frame,
            clients: self.clients.then(|| clients::azure_verdicts(&event)),
            event,
        }
    }

    /// A decoding error: on stderr, and in JSON also a line, so a reader of the JSON alone sees
    /// it. Returns `false`: the input did not decode.
    pub fn failed(
        &self,
        failure: &Failure,
        out: &mut dyn Sink,
        err: &mut dyn Write,
    ) -> anyhow::Result<bool> {
        let line = DecodeLine::Error {
            v: SCHEMA_VERSION,
            source: self.source.to_string(),
            offset: failure.offset,
            message: failure.message.clone(),
        };
        out.record(&Decoded {
            line,
            frame: None,
            asked: None,
        })?;
        out.flush()?;
        let about = format!("{}: {}", self.source, failure.message);
        writeln!(err, "{}", terminal::about("decode", &about))?;
        Ok(false)
    }
}

/// A line of `decode`, with the frame it came from for the `--clients` text.
struct Decoded<'f> {
    line: DecodeLine,
    frame: Option<&'f Frame<'f>>,
    asked: Option<EndpointType>,
}

impl Record for Decoded<'_> {
    fn write_json(&self, out: &mut Vec<u8>) -> std::io::Result<()> {
        json::write_value(out, &self.line)
    }

    /// A frame or an Azure event: where it starts, what it is, its bytes, its notes and with
    /// `--clients` what each client does with it. An error is told on stderr only.
    fn render(&self, _style: &Style) -> Vec<String> {
        match &self.line {
            DecodeLine::Frame {
                source,
                frame: record,
                clients,
                ..
            } => self.render_frame(source, record, clients.is_some()),
            DecodeLine::AzureEvent {
                source,
                offset,
                payload,
                frame,
                event,
                clients,
                ..
            } => {
                // The bytes shown are the frame's when there was one: what the server sent.
                let raw = frame
                    .as_ref()
                    .map_or_else(|| payload.escaped(), |f| f.raw.escaped());
                let mut out = text::azure_lines(source, *offset, &raw, event);
                if let Some(verdicts) = clients {
                    out.extend(client_lines(clients::verdict_lines(verdicts)));
                }
                out
            }
            DecodeLine::Error { .. } => Vec::new(),
        }
    }
}

impl Decoded<'_> {
    fn render_frame(&self, source: &str, record: &FrameRecord, clients: bool) -> Vec<String> {
        let mut out = vec![
            format!("{source} @{}: {}", record.offset, record.parsed.describe()),
            format!("    {}", record.raw.escaped()),
        ];
        if let Classified::Maintenance(n) = &record.parsed {
            out.extend(n.notes.iter().map(|note| format!("    note: {note}")));
        }
        if let (true, Some(frame)) = (clients, self.frame) {
            out.extend(client_lines(clients::lines(frame, self.asked)));
        }
        out
    }
}

/// What each client does, indented under the frame and, on a terminal, wrapped between words at
/// its width with the continuation under the text (a reaction with its releases runs long).
fn client_lines(lines: Vec<String>) -> Vec<String> {
    let width = terminal::stdout_columns();
    lines
        .into_iter()
        .flat_map(|line| {
            let line = format!("    {line}");
            match width {
                Some(w) => human::wrap_with(&line, w, "      "),
                None => vec![line],
            }
        })
        .collect()
}
