//! Where a label goes so that no part of it falls outside the drawing.
//!
//! The page has no script, so a label's width cannot be measured where it is drawn: it is
//! estimated here from its characters, per class of width, at the widths of DejaVu Sans Bold
//! (the widest of the common sans-serif faces, and the one Linux browsers fall back to), plus a
//! margin. The estimate is an upper bound for that face and wider than Arial or Helvetica draw
//! the same text, so a label placed by it fits in any of them. The tests measure the real boxes
//! in Chromium.

/// Ems per character, by class; anything else (a CJK character, an emoji) counts as the widest.
const CLASSES: &[(&str, f64)] = &[
    (" ijlIJ'.,:;|/\\f-", 0.42),
    ("!()[]t", 0.48),
    ("r*\"_`?szc", 0.62),
    ("0123456789abdeghknopquvxy{}$ELSTF", 0.72),
    ("ABCKPRVXYZ", 0.80),
    ("DGHNOQU#+<=>^~&", 0.88),
];
const WIDEST: f64 = 1.12;
/// The margin kept over the estimate, and from the drawing's edges.
const MARGIN: f64 = 1.04;
pub const EDGE: f64 = 2.0;

/// The estimated width of `text` at `px` pixels.
pub fn width(text: &str, px: f64) -> f64 {
    text.chars().map(|c| em(c) * px).sum::<f64>() * MARGIN
}

fn em(c: char) -> f64 {
    CLASSES
        .iter()
        .find(|(chars, _)| chars.contains(c))
        .map_or(WIDEST, |(_, w)| *w)
}

/// How a label is anchored at its `x`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    Start,
    Middle,
    End,
}

impl Anchor {
    pub fn attr(self) -> &'static str {
        match self {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        }
    }
}

/// A label placed: where, how anchored, and its text (cut with `…` when nothing else fitted; the
/// element's title keeps it whole).
#[derive(Debug, Clone, PartialEq)]
pub struct Placed {
    pub x: f64,
    pub anchor: Anchor,
    pub text: String,
}

/// A label beside a vertical line at `x`, `gap` away: to its right when it fits before
/// `right`, else to its left when it fits after 0, else on the wider side, cut to fit.
pub fn beside(x: f64, gap: f64, text: &str, px: f64, right: f64) -> Placed {
    let w = width(text, px);
    let (room_right, room_left) = (right - EDGE - (x + gap), x - gap - EDGE);
    let (anchor, lx, room) = if w <= room_right || room_right >= room_left {
        (Anchor::Start, x + gap, room_right)
    } else {
        (Anchor::End, x - gap, room_left)
    };
    Placed {
        x: lx,
        anchor,
        text: cut_to(text, px, room),
    }
}

/// A label centred on `x` as far as it can be: moved inwards when half of it would pass an edge
/// of `0..right`, and cut when it is wider than the drawing.
pub fn centred(x: f64, text: &str, px: f64, right: f64) -> Placed {
    let text = cut_to(text, px, right - 2.0 * EDGE);
    let half = width(&text, px) / 2.0;
    Placed {
        x: x.clamp(EDGE + half, (right - EDGE - half).max(EDGE + half)),
        anchor: Anchor::Middle,
        text,
    }
}

/// `text` whole when it fits in `room` pixels, else as much of it as fits before a `…`.
pub fn cut_to(text: &str, px: f64, room: f64) -> String {
    if width(text, px) <= room {
        return text.to_string();
    }
    let budget = room - width("…", px);
    let mut used = 0.0;
    let mut out = String::new();
    for c in text.chars() {
        used += em(c) * px * MARGIN;
        if used > budget {
            break;
        }
        out.push(c);
    }
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_label_near_the_right_edge_goes_left_of_its_line() {
        let p = beside(1169.5, 3.0, "FAILED_OVER seq 1", 11.0, 1200.0);
        assert_eq!((p.anchor, p.x), (Anchor::End, 1166.5));
        assert_eq!(p.text, "FAILED_OVER seq 1");
        let p = beside(300.0, 3.0, "FAILED_OVER seq 1", 11.0, 1200.0);
        assert_eq!((p.anchor, p.x), (Anchor::Start, 303.0));
    }

    #[test]
    fn a_label_wider_than_either_side_is_cut_to_the_wider() {
        let long = "x".repeat(400);
        let p = beside(1000.0, 3.0, &long, 11.0, 1200.0);
        assert_eq!(p.anchor, Anchor::End);
        assert!(p.text.ends_with('…'));
        assert!(width(&p.text, 11.0) <= 997.0 - EDGE, "{}", p.text.len());
    }

    #[test]
    fn a_centred_label_stays_inside() {
        let p = centred(1170.0, "1814400 s", 11.0, 1200.0);
        assert!(p.x + width(&p.text, 11.0) / 2.0 <= 1200.0 - EDGE);
        assert_eq!(centred(600.0, "5 s", 11.0, 1200.0).x, 600.0);
    }

    #[test]
    fn widths_cover_dejavu_bold() {
        // Measured in Chromium at 11 px: DejaVu Sans Bold draws these 118.6 and 12.1 px wide.
        assert!(width("FAILED_OVER seq 1", 11.0) >= 118.6);
        assert!(width("W", 11.0) >= 12.1);
    }
}
