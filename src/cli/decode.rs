//! The settings `decode`'s flags make, so `commands::decode` never sees a clap type.

use super::{DecodeArgs, InputFormatArg};
use crate::network::conn::EndpointType;
use crate::shared::escape::InputFormat;

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
