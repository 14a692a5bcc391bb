//! What a client's parser is given and what it says: the frame's elements as a client sees
//! them ([`View`]), and the three verdicts a parser gives (acts, fails, ignores). Every
//! library's parser and the predictions over all of them read this.

use crate::observe::record::Verdict;
use crate::protocol::resp::Frame;

pub(super) fn acts(reads: impl Into<String>) -> Verdict {
    Verdict::Acts {
        reads: reads.into(),
        target: None,
    }
}

pub(super) fn fails(how: impl Into<String>) -> Verdict {
    Verdict::Fails { how: how.into() }
}

pub(super) fn ignores(why: impl Into<String>) -> Verdict {
    Verdict::Ignores { why: why.into() }
}

/// The frame's elements as a client sees them. The type is a string's bytes as sent (no case
/// folding: which client folds is the question).
pub struct View<'f, 'a> {
    pub(super) kind: Option<&'a [u8]>,
    pub(super) rest: &'f [Frame<'a>],
}

impl<'f, 'a> View<'f, 'a> {
    pub(super) fn of(frame: &'f Frame<'a>) -> Option<View<'f, 'a>> {
        let Frame::Push(items) = frame.unattributed() else {
            return None;
        };
        let kind = match items.first().map(Frame::unattributed) {
            Some(Frame::Blob(b)) | Some(Frame::Simple(b)) => Some(*b),
            _ => None,
        };
        Some(View {
            kind,
            rest: items.get(1..).unwrap_or(&[]),
        })
    }

    /// Element `i` counting the type as 0.
    pub(super) fn at(&self, i: usize) -> Option<&'f Frame<'a>> {
        self.rest.get(i - 1).map(Frame::unattributed)
    }

    pub(super) fn len(&self) -> usize {
        self.rest.len() + 1
    }
}

pub(super) fn text(f: &Frame<'_>) -> Option<String> {
    match f {
        Frame::Blob(b) | Frame::Simple(b) => Some(String::from_utf8_lossy(b).into_owned()),
        _ => None,
    }
}

pub(super) fn is_int(f: Option<&Frame<'_>>) -> bool {
    matches!(f, Some(Frame::Integer(_)))
}
