//! `watch --clients`: the human sink with a line under each maintenance notification saying
//! what each known client does with it.

use std::io;

use super::traits::{Record, Sink};
use crate::observe::record::WatchLine;

/// `watch --clients`: after each maintenance notification, one more line saying what each known
/// client's parser does with that frame (`crate::grading::clients`). It wraps the human sink and writes
/// through its `note`, so it adds nothing to JSON lines or captures.
pub struct ClientLines<'a> {
    inner: Box<dyn Sink + 'a>,
    /// The endpoint type the clients asked for; `None`: each client's own auto.
    asked: Option<crate::network::conn::EndpointType>,
}

impl<'a> ClientLines<'a> {
    pub fn new(
        inner: Box<dyn Sink + 'a>,
        asked: Option<crate::network::conn::EndpointType>,
    ) -> Self {
        ClientLines { inner, asked }
    }

    /// The line for a push line that carries a maintenance notification.
    fn about(&self, line: &WatchLine) -> Option<String> {
        let WatchLine::Push(push) = line else {
            return None;
        };
        if !matches!(
            push.frame.parsed,
            crate::protocol::notification::Classified::Maintenance(_)
        ) {
            return None;
        }
        let bytes = match &push.frame.raw {
            crate::observe::record::Raw::Bytes(b) => std::borrow::Cow::Borrowed(&b[..]),
            crate::observe::record::Raw::Escaped(t) => {
                std::borrow::Cow::Owned(crate::shared::escape::unescape(t).ok()?)
            }
        };
        match crate::protocol::resp::Scanner::default().scan(&bytes) {
            Ok(crate::protocol::resp::Scan::Frame(frame, _)) => {
                Some(crate::grading::clients::summary_line(&frame, self.asked))
            }
            _ => None,
        }
    }
}

impl Sink for ClientLines<'_> {
    fn line(&mut self, line: &WatchLine) -> io::Result<()> {
        self.inner.line(line)?;
        match self.about(line) {
            Some(text) => self.inner.note(&format!("      {text}")),
            None => Ok(()),
        }
    }

    fn line_of(&mut self, ep: &str, line: &WatchLine) -> io::Result<()> {
        self.inner.line_of(ep, line)?;
        match self.about(line) {
            Some(text) => self.inner.note(&format!("{ep}       {text}")),
            None => Ok(()),
        }
    }

    fn reopen(&mut self) -> io::Result<bool> {
        self.inner.reopen()
    }

    fn record(&mut self, line: &dyn Record) -> io::Result<()> {
        self.inner.record(line)
    }

    fn note(&mut self, text: &str) -> io::Result<()> {
        self.inner.note(text)
    }

    fn interrupted(&mut self, fresh_line: bool) -> io::Result<()> {
        self.inner.interrupted(fresh_line)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }

    fn failed(&self) -> bool {
        self.inner.failed()
    }
}
