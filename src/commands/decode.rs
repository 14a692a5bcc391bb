//! `maintwatch decode`: frames from files or standard input, parsed, each beside its bytes.
//!
//! This is how a client author checks a frame pasted from a bug report or a packet capture:
//! [`crate::observe::decode`] reads the input (raw bytes, escaped text, hex or a hex dump, or
//! bare `AzureRedisEvents` payloads) and scans it, and
//! [`crate::present::output::decode_screen`] shows each frame and, after everything before it,
//! an error naming its byte offset.

use crate::cli::decode::DecodeSettings;
use crate::exit;
use crate::observe::decode::{self, Input};
use crate::present::output::decode_screen::DecodeScreen;
use crate::present::output::human::Style;
use crate::present::output::sink::{self, Sink};
use std::io::Write;

pub fn run(args: &DecodeSettings, out: &mut dyn Write, err: &mut dyn Write) -> anyhow::Result<i32> {
    // Decode's text has no colour and no times: the default style.
    let mut lines = sink::lines(out, args.json, Style::default(), true);
    let mut code = exit::SUCCESS;
    for source in &args.inputs {
        let input = decode::read_input(source)?;
        let screen = DecodeScreen {
            source,
            clients: args.clients,
            asked: args.asked,
        };
        if !decode_one(args, &screen, &input, &mut *lines, err)? {
            code = exit::FAILURE;
        }
    }
    lines.flush()?;
    Ok(code)
}

/// Decodes one input; returns whether it decoded without error.
fn decode_one(
    args: &DecodeSettings,
    screen: &DecodeScreen,
    input: &[u8],
    out: &mut dyn Sink,
    err: &mut dyn Write,
) -> anyhow::Result<bool> {
    let (bytes, decoded) = match decode::bytes_of(screen.source, input, args.format)? {
        Input::Azure(payloads) => {
            for (offset, payload) in payloads {
                screen.azure(offset, payload, out)?;
            }
            return Ok(true);
        }
        Input::Bytes { bytes, decoded } => (bytes, decoded),
        Input::Failed(failure) => return screen.failed(&failure, out, err),
    };
    let scanned = decode::scan(&bytes, decoded);
    for (frame, span) in &scanned.frames {
        screen.frame(frame, &bytes[span.clone()], span.start as u64, out)?;
    }
    match &scanned.failure {
        Some(failure) => screen.failed(failure, out, err),
        None => Ok(true),
    }
}
