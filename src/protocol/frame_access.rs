//! Reading values out of a [`Frame`]: text, integers, map fields. One copy for every reader of
//! replies and pushes (notifications, HELLO, CLUSTER SHARDS/SLOTS), lenient in the same ways:
//! a number may come as a string, a map may come as a RESP2 flat array.
//!
//! An inherent `impl Frame` outside `resp`: the scanner stays about bytes, and these accessors
//! are about what the bytes mean to this tool.

use crate::protocol::resp::Frame;

impl<'a> Frame<'a> {
    /// The frame's text (simple, blob or verbatim string), invalid UTF-8 replaced.
    pub fn text_lossy(&self) -> Option<String> {
        self.as_text()
            .map(|t| String::from_utf8_lossy(t).into_owned())
    }

    /// An integer, or an integer carried in a string (then `true`).
    pub fn integer(&self) -> Option<(i64, bool)> {
        match self {
            Frame::Integer(n) => Some((*n, false)),
            other => other
                .as_text()
                .and_then(|t| std::str::from_utf8(t).ok())
                .and_then(|t| t.trim().parse().ok())
                .map(|n| (n, true)),
        }
    }

    /// An integer, whether it came as one or as a string.
    pub fn int(&self) -> Option<i64> {
        self.integer().map(|(n, _)| n)
    }

    /// Key/value pairs of a RESP3 map or a RESP2 flat array (an odd last element is ignored).
    pub fn pairs<'f>(&'f self) -> Vec<(&'f Frame<'a>, &'f Frame<'a>)> {
        match self.unattributed() {
            Frame::Map(p) => p.iter().map(|(k, v)| (k, v)).collect(),
            Frame::Array(items) => items.chunks_exact(2).map(|kv| (&kv[0], &kv[1])).collect(),
            _ => Vec::new(),
        }
    }

    /// The value of the pair whose key is `name` (ASCII case ignored).
    pub fn field<'f>(&'f self, name: &str) -> Option<&'f Frame<'a>> {
        self.pairs()
            .into_iter()
            .find(|(k, _)| {
                k.as_text()
                    .is_some_and(|k| k.eq_ignore_ascii_case(name.as_bytes()))
            })
            .map(|(_, v)| v)
    }
}

#[cfg(test)]
mod tests {
    use crate::protocol::resp::Frame;

    #[test]
    fn numbers_may_come_as_text_and_maps_as_flat_arrays() {
        assert_eq!(Frame::Integer(7).integer(), Some((7, false)));
        assert_eq!(Frame::Blob(b" 7000 ").integer(), Some((7000, true)));
        assert_eq!(Frame::Simple(b"x").int(), None);
        let flat = Frame::Array(vec![
            Frame::Blob(b"Port"),
            Frame::Integer(6379),
            Frame::Blob(b"odd"),
        ]);
        assert_eq!(flat.field("port").and_then(Frame::int), Some(6379));
        assert_eq!(flat.pairs().len(), 1);
        let map = Frame::Map(vec![(Frame::Simple(b"host"), Frame::Blob(b"a\xffb"))]);
        assert_eq!(
            map.field("HOST").and_then(Frame::text_lossy).as_deref(),
            Some("a\u{fffd}b")
        );
    }
}
