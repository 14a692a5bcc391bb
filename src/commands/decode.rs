//! `maintwatch decode`: frames from files or standard input, parsed, each beside its bytes.
//!
//! This is how a client author checks a frame pasted from a bug report or a packet capture. The
//! input may be raw bytes, escaped text as people paste it (including the indented raw-bytes lines
//! `watch` and `decode` print), hex, or a hex dump from `xxd` or `hexdump -C`; everything before a
//! framing error is printed before the error, and the error names the byte offset.
//!
//! Azure Cache for Redis announces maintenance as pub/sub messages on `AzureRedisEvents`, so a
//! message on that channel is shown as the event it carries (`azure`), and so is a bare payload
//! line (`NotificationType|...`) as it appears in a client's log.

use crate::cli::decode::DecodeSettings;
use crate::exit;
use crate::grading::clients;
use crate::observe::record::write as json;
use crate::observe::record::{DecodeLine, FrameRecord, Raw, SCHEMA_VERSION};
use crate::present::output::human::Style;
use crate::present::output::sink::{self, Record, Sink};
use crate::present::output::terminal;
use crate::present::output::text;
use crate::protocol::azure;
use crate::protocol::resp::{Frame, Scanner};
use crate::shared::escape::{self, InputFormat};
use anyhow::Context;
use std::io::{Read, Write};

pub fn run(args: &DecodeSettings, out: &mut dyn Write, err: &mut dyn Write) -> anyhow::Result<i32> {
    // Decode's text has no colour and no times: the default style.
    let mut lines = sink::lines(out, args.json, Style::default(), true);
    let mut code = exit::SUCCESS;
    for source in &args.inputs {
        let input = read_input(source)?;
        if !decode_one(args, source, &input, &mut *lines, err)? {
            code = exit::FAILURE;
        }
    }
    lines.flush()?;
    Ok(code)
}

fn read_input(source: &str) -> anyhow::Result<Vec<u8>> {
    let mut input = Vec::new();
    if source == "-" {
        std::io::stdin()
            .read_to_end(&mut input)
            .context("reading standard input")?;
    } else {
        input = std::fs::read(source).with_context(|| format!("reading {source}"))?;
    }
    Ok(input)
}

/// Decodes one input; returns whether it decoded without error.
fn decode_one(
    args: &DecodeSettings,
    source: &str,
    input: &[u8],
    out: &mut dyn Sink,
    err: &mut dyn Write,
) -> anyhow::Result<bool> {
    if args.format.is_none() && is_azure_text(input) {
        return decode_azure_text(args, source, input, out);
    }
    let format = args.format.unwrap_or_else(|| detect(input));
    let text = || {
        std::str::from_utf8(input)
            .map_err(|e| anyhow::anyhow!("{source}: byte {}: input is not text", e.valid_up_to()))
    };
    let bytes = match format {
        InputFormat::Raw => input.to_vec(),
        InputFormat::Escaped => match unescape_indented(text()?) {
            Ok(b) => b,
            Err(e) => return report(source, 0, &format!("escaped text, {e}"), out, err),
        },
        InputFormat::Hex => {
            let text = text()?;
            let read = match dump::kind(text) {
                Some(kind) => {
                    dump::read(text, kind).map_err(|e| format!("{} output, {e}", kind.name()))
                }
                None => escape::unhex(text).map_err(|e| format!("hex text, {e}")),
            };
            match read {
                Ok(b) => b,
                Err(e) => return report(source, 0, &e, out, err),
            }
        }
    };
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return report(source, 0, "no frames in the input", out, err);
    }
    let decoded = if format == InputFormat::Raw {
        ""
    } else {
        " of the decoded bytes"
    };
    let (frames, end, error) = Scanner::default().scan_all(&bytes);
    for (frame, span) in frames {
        let asked = args.asked;
        let line = frame_line(
            args,
            source,
            &frame,
            &bytes[span.clone()],
            span.start as u64,
        );
        out.record(&Decoded {
            line,
            frame: Some(&frame),
            asked,
        })?;
    }
    if let Some(e) = error {
        let message = format!("{e}{decoded}");
        return report(source, e.offset, &message, out, err);
    }
    if end < bytes.len() {
        let message = format!(
            "at byte {end}{decoded}: incomplete frame, the input ends after {} of its bytes",
            bytes.len() - end
        );
        return report(source, end as u64, &message, out, err);
    }
    Ok(true)
}

/// The line for one frame: an `AzureRedisEvents` message's event, or the frame's parse.
fn frame_line(
    args: &DecodeSettings,
    source: &str,
    frame: &Frame<'_>,
    raw: &[u8],
    offset: u64,
) -> DecodeLine {
    let record = FrameRecord::new(frame, raw, offset);
    if let Some(payload) = azure::message_payload(frame) {
        return azure_line(args, source, offset, payload, Some(record));
    }
    DecodeLine::Frame {
        v: SCHEMA_VERSION,
        source: source.to_string(),
        frame: record,
        clients: args.clients.then(|| clients::verdicts(frame, args.asked)),
    }
}

/// The line for one `AzureRedisEvents` payload, from a frame or a text line.
fn azure_line(
    args: &DecodeSettings,
    source: &str,
    offset: u64,
    payload: &[u8],
    frame: Option<FrameRecord>,
) -> DecodeLine {
    let event = azure::parse(payload);
    DecodeLine::AzureEvent {
        v: SCHEMA_VERSION,
        source: source.to_string(),
        offset,
        payload: Raw::Bytes(bytes::Bytes::copy_from_slice(payload)),
        frame,
        clients: args.clients.then(|| clients::azure_verdicts(&event)),
        event,
    }
}

/// Whether the input is bare `AzureRedisEvents` payloads rather than frames: it starts (past
/// blank space) with the key every payload starts with. No frame starts with a letter.
fn is_azure_text(input: &[u8]) -> bool {
    input.trim_ascii_start().starts_with(b"NotificationType|")
}

/// Bare payloads, one a line, as a client logs them: every line that is not blank is one
/// payload (whatever it starts with: a damaged one still gets its line), its bytes up to the
/// line break (a CR before the LF belongs to the break).
fn decode_azure_text(
    args: &DecodeSettings,
    source: &str,
    input: &[u8],
    out: &mut dyn Sink,
) -> anyhow::Result<bool> {
    let mut start = 0;
    for line in input.split(|&b| b == b'\n') {
        let offset = start as u64;
        start += line.len() + 1;
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        out.record(&Decoded {
            line: azure_line(args, source, offset, line, None),
            frame: None,
            asked: None,
        })?;
    }
    Ok(true)
}

/// Guesses the input's format: a hex dump is hex whatever its ASCII column holds; otherwise
/// [`escape::detect`] decides.
fn detect(input: &[u8]) -> InputFormat {
    match std::str::from_utf8(input) {
        Ok(text) if dump::kind(text).is_some() => InputFormat::Hex,
        _ => escape::detect(input),
    }
}

/// Escaped text, where each line's indentation is layout, not bytes: the raw-bytes lines `watch`
/// and `decode` print are indented, and a frame never starts with a space a person would paste.
/// Error columns still count from the start of the line as pasted.
fn unescape_indented(text: &str) -> Result<Vec<u8>, escape::TextError> {
    let mut out = Vec::with_capacity(text.len());
    for (index, line) in text.split('\n').enumerate() {
        let body = line.trim_start();
        let indent = line[..line.len() - body.len()].chars().count();
        let mut bytes = escape::unescape(body).map_err(|mut e| {
            e.line = index + 1;
            e.column += indent;
            e
        })?;
        out.append(&mut bytes);
    }
    Ok(out)
}

/// A decoding error: on stderr, and in JSON also a line, so a reader of the JSON alone sees it.
fn report(
    source: &str,
    offset: u64,
    message: &str,
    out: &mut dyn Sink,
    err: &mut dyn Write,
) -> anyhow::Result<bool> {
    let line = DecodeLine::Error {
        v: SCHEMA_VERSION,
        source: source.to_string(),
        offset,
        message: message.to_string(),
    };
    out.record(&Decoded {
        line,
        frame: None,
        asked: None,
    })?;
    out.flush()?;
    writeln!(
        err,
        "{}",
        terminal::about("decode", &format!("{source}: {message}"))
    )?;
    Ok(false)
}

/// A line of `decode`, with the frame it came from for the `--clients` text.
struct Decoded<'f> {
    line: DecodeLine,
    frame: Option<&'f Frame<'f>>,
    asked: Option<crate::network::conn::EndpointType>,
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
        if let crate::protocol::notification::Classified::Maintenance(n) = &record.parsed {
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
                Some(w) => crate::present::output::human::wrap_with(&line, w, "      "),
                None => vec![line],
            }
        })
        .collect()
}

/// Hex dumps as people paste them: `hexdump -C` and `xxd`. Both put an offset first and an ASCII
/// column last; only the hex in between is data, and the offsets are checked so that a line lost
/// from a paste is an error rather than a silently shorter frame.
mod dump {
    /// Which tool wrote a dump.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Kind {
        /// `00000000  3e 34 0d 0a ...  |>4..|`, `*` for repeated lines, a last offset-only line.
        HexdumpC,
        /// `00000000: 3e34 0d0a ...  >4..`
        Xxd,
    }

    impl Kind {
        pub fn name(self) -> &'static str {
            match self {
                Kind::HexdumpC => "hexdump -C",
                Kind::Xxd => "xxd",
            }
        }
    }

    /// The offset that starts a dump line, and what follows it.
    fn offset(line: &str) -> Option<(u64, &str)> {
        let digits = line.bytes().take_while(u8::is_ascii_hexdigit).count();
        if digits < 7 {
            return None;
        }
        let value = u64::from_str_radix(&line[..digits], 16).ok()?;
        Some((value, &line[digits..]))
    }

    /// Which dump the text is, judged by its first non-blank line.
    pub fn kind(text: &str) -> Option<Kind> {
        let first = text.lines().map(str::trim_end).find(|l| !l.is_empty())?;
        let (_, rest) = offset(first)?;
        if rest.starts_with(": ") {
            Some(Kind::Xxd)
        } else if rest.starts_with("  ") && rest.contains('|') {
            Some(Kind::HexdumpC)
        } else {
            None
        }
    }

    /// The bytes of a dump; errors name the line.
    pub fn read(text: &str, kind: Kind) -> Result<Vec<u8>, String> {
        let mut out = Vec::new();
        let mut repeat: Option<Vec<u8>> = None;
        for (index, line) in text.lines().enumerate() {
            let n = index + 1;
            let line = line.trim_end();
            if line.is_empty() {
                continue;
            }
            if kind == Kind::HexdumpC && line == "*" {
                // hexdump -C collapses identical lines: the next offset says how many.
                repeat = Some(out[out.len().saturating_sub(16)..].to_vec());
                continue;
            }
            let Some((at, rest)) = offset(line) else {
                return Err(format!(
                    "line {n}: expected an offset at the start of the line"
                ));
            };
            if let Some(block) = repeat.take() {
                fill(&mut out, &block, at, n)?;
            }
            if at != out.len() as u64 {
                return Err(format!(
                    "line {n}: offset {at:#x} does not follow the {} bytes before it (a line \
                     missing from the paste?)",
                    out.len()
                ));
            }
            let hex = match kind {
                // The ASCII column sits between bars.
                Kind::HexdumpC => rest.split('|').next().unwrap_or(""),
                // The ASCII column follows the hex after two spaces; the hex has single spaces.
                Kind::Xxd => {
                    let hex = rest
                        .strip_prefix(':')
                        .unwrap_or(rest)
                        .trim_start_matches(' ');
                    hex.split("  ").next().unwrap_or("")
                }
            };
            hex_bytes(hex, n, &mut out)?;
        }
        Ok(out)
    }

    /// The most bytes one `*` line may stand for: a pasted frame is far smaller, and a forged
    /// offset must not make a few bytes of text expand without bound.
    const MAX_REPEAT: u64 = 64 << 20;

    /// Repeats `block` (a `*` line) up to the offset of the next line.
    fn fill(out: &mut Vec<u8>, block: &[u8], until: u64, n: usize) -> Result<(), String> {
        let gap = until.saturating_sub(out.len() as u64);
        if block.is_empty() || gap % block.len() as u64 != 0 {
            return Err(format!(
                "line {n}: offset {until:#x} does not end a run of repeated lines"
            ));
        }
        if gap > MAX_REPEAT {
            return Err(format!(
                "line {n}: offset {until:#x} repeats a line over more than {} MiB",
                MAX_REPEAT >> 20
            ));
        }
        for _ in 0..gap / block.len() as u64 {
            out.extend_from_slice(block);
        }
        Ok(())
    }

    /// Appends the bytes of whitespace-separated hex groups (`3e`, or xxd's `3e34`).
    fn hex_bytes(hex: &str, n: usize, out: &mut Vec<u8>) -> Result<(), String> {
        for group in hex.split_whitespace() {
            if group.len() % 2 != 0 || !group.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(format!("line {n}: {group:?} is not hex bytes"));
            }
            for pair in group.as_bytes().chunks(2) {
                let pair = std::str::from_utf8(pair).unwrap_or("");
                out.push(u8::from_str_radix(pair, 16).map_err(|e| format!("line {n}: {e}"))?);
            }
        }
        Ok(())
    }
}
