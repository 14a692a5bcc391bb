//! A password or token that never prints: the watcher's connection settings and the Redis URL
//! form (both below) carry one, so it lives beside the URL.

use std::fmt;

/// A password or token. `Debug` and `Display` print `***`; only [`Secret::expose`] gives the
/// text, and it is used in two places: when the `HELLO` command is encoded, and to redact
/// server text that echoes it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret {
    text: String,
    /// Read from a URL's user-info without a ':' (`redis://secret@host`), redis-cli's rule that
    /// surprises people who meant a user name.
    lone_userinfo: bool,
}

impl Secret {
    pub fn new(text: impl Into<String>) -> Secret {
        Secret {
            text: text.into(),
            lone_userinfo: false,
        }
    }

    /// A password that was a URL's whole user-info (`redis://secret@host`).
    pub fn from_lone_userinfo(text: impl Into<String>) -> Secret {
        Secret {
            text: text.into(),
            lone_userinfo: true,
        }
    }

    pub fn is_lone_userinfo(&self) -> bool {
        self.lone_userinfo
    }

    /// The secret text. Never format it.
    pub fn expose(&self) -> &str {
        &self.text
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl From<String> for Secret {
    fn from(text: String) -> Secret {
        Secret::new(text)
    }
}

impl From<&str> for Secret {
    fn from(text: &str) -> Secret {
        Secret::new(text)
    }
}
