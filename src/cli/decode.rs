//! Arguments of `decode`, and the settings they make, so `commands::decode` never sees a clap
//! type.

use super::connect;
use crate::network::conn::EndpointType;
use crate::shared::escape::InputFormat;
use clap::{Args, ValueEnum};

/// How `decode` should read its input.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputFormatArg {
    /// A hex dump if it looks like `xxd` or `hexdump -C` output, escaped text if it has `\r\n`
    /// escapes, hex if only hex digits, else raw bytes.
    Auto,
    /// The bytes as they are.
    Raw,
    /// Text with escapes as people paste it: `>4\r\n$6\r\nMOVING\r\n...`; each line's
    /// indentation is ignored, so the raw-bytes lines `watch` prints can be pasted as they are.
    Escaped,
    /// Hex digits (whitespace, `0x` and `:` between bytes are ignored), or `xxd` / `hexdump -C`
    /// output (offsets and the ASCII column are skipped).
    Hex,
}

/// The long description of `decode`. The `Command::Decode` variant repeats it
/// (`#[command(long_about = ...)]`): a variant's doc comment resets it.
pub const LONG_ABOUT: &str =
    "Reads RESP3 frames from files (or standard input when none, or `-`) and prints each \
one parsed, beside its exact bytes, escaped. The input may be raw bytes, escaped text (the \
indented raw-bytes lines `watch` prints included), hex, or `xxd` / `hexdump -C` output; --format \
auto tells them apart. Frames that are not maintenance notifications are named as what they are. \
A framing error stops that input with the byte offset where it went wrong, after every frame \
before it has been printed, and the exit code is 1; so does an input with no frames in it.";

#[derive(Args, Debug, Clone)]
#[command(
    long_about = LONG_ABOUT,
    after_help = "Examples:\n  maintwatch decode capture.resp\n  maintwatch decode --json capture.resp | jq .frame.parsed\n  printf '>4\\\\r\\\\n$6\\\\r\\\\nMOVING\\\\r\\\\n:0\\\\r\\\\n:15\\\\r\\\\n_\\\\r\\\\n' | maintwatch decode\n  maintwatch decode --format hex dump.hex\n  xxd capture.resp | maintwatch decode"
)]
pub struct DecodeArgs {
    /// Input files; `-` or none reads standard input.
    pub inputs: Vec<String>,
    /// How the input encodes the bytes.
    #[arg(long, value_enum, default_value_t = InputFormatArg::Auto)]
    pub format: InputFormatArg,
    /// One JSON object per frame (schema: docs/jsonl.md).
    #[arg(long)]
    pub json: bool,
    /// Also say what each known client's parser does with each frame: acts on it (with the
    /// values it reads), ignores it, or fails (docs/clients.md).
    #[arg(long)]
    pub clients: bool,
    /// With --clients: the moving-endpoint-type the clients asked for (it decides what
    /// node-redis does with a MOVING that names no endpoint); auto: each client's own auto.
    #[arg(long, value_enum, value_name = "TYPE", default_value_t = connect::EndpointTypeArg::Auto,
          requires = "clients")]
    pub endpoint_type: connect::EndpointTypeArg,
}

/// What `decode` runs: the inputs in order, how they encode their bytes, and what to print.
pub struct DecodeSettings {
    /// Files, `-` for standard input (the one input when none is named).
    pub inputs: Vec<String>,
    /// How the inputs encode bytes; `None`: tell them apart (`--format auto`).
    pub format: Option<InputFormat>,
    /// JSON lines, else text for people.
    pub json: bool,
    /// Each known client's verdict beside each frame (`--clients`).
    pub clients: bool,
    /// The endpoint type the clients asked for (`--endpoint-type`); `None`: each client's own.
    pub asked: Option<EndpointType>,
}

impl DecodeArgs {
    /// The settings of these flags.
    pub fn settings(&self) -> DecodeSettings {
        DecodeSettings {
            inputs: if self.inputs.is_empty() {
                vec!["-".into()]
            } else {
                self.inputs.clone()
            },
            format: match self.format {
                InputFormatArg::Auto => None,
                InputFormatArg::Raw => Some(InputFormat::Raw),
                InputFormatArg::Escaped => Some(InputFormat::Escaped),
                InputFormatArg::Hex => Some(InputFormat::Hex),
            },
            json: self.json,
            clients: self.clients,
            asked: self.endpoint_type.asked(),
        }
    }
}
