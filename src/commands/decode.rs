//! `maintwatch decode`: frames from files or standard input, parsed, each beside its bytes.
//!
//! This is how a client author checks a frame pasted from a bug report or a packet capture. The
//! input may be raw bytes, escaped text as people paste it, or hex; everything before a framing
//! error is printed before the error, and the error names the byte offset.

use crate::cli::{DecodeArgs, InputFormatArg};
use crate::escape::{self, InputFormat};
use crate::exit;
use crate::output::text;
use crate::record::{DecodeLine, FrameRecord, SCHEMA_VERSION};
use crate::resp::Scanner;
use anyhow::Context;
use std::io::{Read, Write};

pub fn run(args: &DecodeArgs, out: &mut dyn Write, err: &mut dyn Write) -> anyhow::Result<i32> {
    let sources: Vec<String> = if args.inputs.is_empty() {
        vec!["-".into()]
    } else {
        args.inputs.clone()
    };
    let mut code = exit::SUCCESS;
    for source in &sources {
        let input = read_input(source)?;
        if !decode_one(args, source, &input, out, err)? {
            code = exit::FAILURE;
        }
    }
    out.flush()?;
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
    args: &DecodeArgs,
    source: &str,
    input: &[u8],
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<bool> {
    let format = match args.format {
        InputFormatArg::Auto => escape::detect(input),
        InputFormatArg::Raw => InputFormat::Raw,
        InputFormatArg::Escaped => InputFormat::Escaped,
        InputFormatArg::Hex => InputFormat::Hex,
    };
    let text = || {
        std::str::from_utf8(input)
            .map_err(|e| anyhow::anyhow!("{source}: byte {}: input is not text", e.valid_up_to()))
    };
    let bytes = match format {
        InputFormat::Raw => input.to_vec(),
        InputFormat::Escaped => match escape::unescape(text()?) {
            Ok(b) => b,
            Err(e) => return report(args, source, 0, &format!("escaped text, {e}"), out, err),
        },
        InputFormat::Hex => match escape::unhex(text()?) {
            Ok(b) => b,
            Err(e) => return report(args, source, 0, &format!("hex text, {e}"), out, err),
        },
    };
    let decoded = if format == InputFormat::Raw {
        ""
    } else {
        " of the decoded bytes"
    };
    let (frames, end, error) = Scanner::default().scan_all(&bytes);
    for (frame, span) in frames {
        let record = FrameRecord::new(&frame, &bytes[span.clone()], span.start as u64);
        if args.json {
            let line = DecodeLine::Frame {
                v: SCHEMA_VERSION,
                source: source.to_string(),
                frame: record,
            };
            serde_json::to_writer(&mut *out, &line)?;
            writeln!(out)?;
        } else {
            writeln!(
                out,
                "{source} @{}: {}",
                record.offset,
                text::describe(&record.parsed)
            )?;
            writeln!(out, "    {}", record.raw)?;
            if let crate::notification::Classified::Maintenance(n) = &record.parsed {
                for note in &n.notes {
                    writeln!(out, "    note: {note}")?;
                }
            }
        }
    }
    if let Some(e) = error {
        let message = format!("{e}{decoded}");
        return report(args, source, e.offset, &message, out, err);
    }
    if end < bytes.len() {
        let message = format!(
            "at byte {end}{decoded}: incomplete frame, the input ends after {} of its bytes",
            bytes.len() - end
        );
        return report(args, source, end as u64, &message, out, err);
    }
    Ok(true)
}

fn report(
    args: &DecodeArgs,
    source: &str,
    offset: u64,
    message: &str,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<bool> {
    if args.json {
        let line = DecodeLine::Error {
            v: SCHEMA_VERSION,
            source: source.to_string(),
            offset,
            message: message.to_string(),
        };
        serde_json::to_writer(&mut *out, &line)?;
        writeln!(out)?;
    }
    out.flush()?;
    writeln!(err, "maintwatch decode: {source}: {message}")?;
    Ok(false)
}
