//! Wall-clock time as every line's `at` field writes it.

///
/// This runs once per line of a push flood: the calendar date and time of day are computed once
/// per second and kept (per thread), and only the microseconds are written for each line.
pub fn wall(at: std::time::SystemTime) -> String {
    let mut text = String::with_capacity(27);
    wall_into(&mut text, at);
    text
}

/// [`wall`] written into `text` (emptied first): a caller that keeps the room of an earlier line's
/// text makes no allocation per line.
pub fn wall_into(text: &mut String, at: std::time::SystemTime) {
    use std::cell::RefCell;
    thread_local! {
        /// The whole second last formatted, and its text up to and with the `.`.
        static SECOND: RefCell<Option<(i64, [u8; 20])>> = const { RefCell::new(None) };
    }
    let (secs, micros) = match at.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => (
            i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
            d.subsec_micros(),
        ),
        // Before 1970: whole seconds towards the past, microseconds forward from there.
        Err(e) => {
            let d = e.duration();
            let back = i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
            match d.subsec_micros() {
                0 => (-back, 0),
                m => (-back - 1, 1_000_000 - m),
            }
        }
    };
    let prefix = SECOND.with(|cell| {
        let mut cached = cell.borrow_mut();
        match *cached {
            Some((s, text)) if s == secs => text,
            _ => {
                let text = second_text(secs);
                *cached = Some((secs, text));
                text
            }
        }
    });
    let mut digits = [0u8; 27];
    digits[..20].copy_from_slice(&prefix);
    let mut m = micros;
    for i in (20..26).rev() {
        digits[i] = b'0' + (m % 10) as u8;
        m /= 10;
    }
    digits[26] = b'Z';
    // ASCII digits and punctuation only: the check cannot fail.
    text.clear();
    text.push_str(std::str::from_utf8(&digits).unwrap_or_default());
}

/// `YYYY-MM-DDTHH:MM:SS.` of a second since the epoch, UTC.
fn second_text(secs: i64) -> [u8; 20] {
    use chrono::{Datelike, Timelike};
    let t = chrono::DateTime::<chrono::Utc>::from_timestamp(secs, 0).unwrap_or_default();
    let text = format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.",
        t.year(),
        t.month(),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    );
    let mut out = *b"0000-00-00T00:00:00.";
    // Years past 9999 do not fit the field; they do not happen on a clock a watch runs on.
    if text.len() == out.len() {
        out.copy_from_slice(text.as_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::wall;
    use std::time::{Duration, SystemTime};

    #[test]
    fn wall_clock_is_rfc3339_with_microseconds() {
        let at = SystemTime::UNIX_EPOCH + Duration::new(1_764_459_487, 123_456_789);
        assert_eq!(wall(at), "2025-11-29T23:38:07.123456Z");
        assert_eq!(wall(SystemTime::UNIX_EPOCH), "1970-01-01T00:00:00.000000Z");
        assert_eq!(
            wall(at),
            chrono::DateTime::<chrono::Utc>::from(at)
                .format("%Y-%m-%dT%H:%M:%S%.6fZ")
                .to_string()
        );
    }

    /// The second is cached: lines within one second, then across a second, a minute, a day
    /// and a year boundary, and back in time, each match chrono's own formatting.
    #[test]
    fn the_cached_second_never_leaks_into_another_second() {
        let chrono_text = |at: SystemTime| {
            chrono::DateTime::<chrono::Utc>::from(at)
                .format("%Y-%m-%dT%H:%M:%S%.6fZ")
                .to_string()
        };
        let year_end = 1_798_761_599; // 2026-12-31T23:59:59Z
        let mut instants = Vec::new();
        for (s, n) in [
            (year_end, 0),
            (year_end, 999_999_999),
            (year_end + 1, 1_000),
            (year_end + 1, 999),
            (year_end + 60, 5_000),
            (year_end - 86_400, 7),
            (year_end, 500_000_000),
            (0, 1),
            (951_782_400, 0), // 2000-02-29
        ] {
            instants.push(SystemTime::UNIX_EPOCH + Duration::new(s, n));
        }
        instants.push(SystemTime::UNIX_EPOCH - Duration::new(1, 250_000_000));
        instants.push(SystemTime::UNIX_EPOCH - Duration::new(86_400, 0));
        for at in instants {
            assert_eq!(wall(at), chrono_text(at), "{at:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn wall_matches_chrono_for_any_instant(secs in 0u64..8_000_000_000, nanos in 0u32..1_000_000_000) {
            let at = SystemTime::UNIX_EPOCH + Duration::new(secs, nanos);
            let expected = chrono::DateTime::<chrono::Utc>::from(at)
                .format("%Y-%m-%dT%H:%M:%S%.6fZ")
                .to_string();
            proptest::prop_assert_eq!(wall(at), expected);
        }
    }
}
