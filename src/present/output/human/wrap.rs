//! Keeping entries within the width: breaking at spaces, a frame's bytes only after `\r\n`,
//! and measuring what a terminal shows rather than bytes.

/// An escaped frame's line broken after `\r\n`s to fit `width`, continued under
/// [`CONTINUATION`]. A piece still too long for a row (an `AzureRedisEvents` message is one bulk
/// string of `|`-separated fields) breaks after its `|`s too; anything longer stays whole.
pub(super) fn wrap_bytes(line: &str, width: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut used = 0;
    let room = width.saturating_sub(CONTINUATION.len());
    let pieces = line.split_inclusive("\\r\\n").flat_map(|piece| {
        let parts: Vec<&str> = match visible_width(piece) > room {
            true => piece.split_inclusive('|').collect(),
            false => vec![piece],
        };
        parts
    });
    for piece in pieces {
        let w = visible_width(piece);
        // A piece that starts with a space is not put under the indent: it would read as layout.
        if used + w > width && !current.trim_start().is_empty() && !piece.starts_with(' ') {
            out.push(std::mem::replace(&mut current, CONTINUATION.to_string()));
            used = CONTINUATION.len();
        }
        current.push_str(piece);
        used += w;
    }
    out.push(current);
    out
}

/// The width human lines are kept within when stdout is not a terminal (and the default of
/// [`Style`](super::Style)): an 80-column terminal.
pub const WIDTH: usize = 80;

/// Where a wrapped entry continues: deeper than the 6 spaces of the lines under an entry, so the
/// two are told apart.
pub const CONTINUATION: &str = "        ";

/// What a refused opt-in means for the rest of the watch.
pub const AFTER_REFUSAL: &str = "this server will send no notifications; still watching the \
connection: closes and DNS changes will show; --require exits instead";

/// What a refused opt-in means when the watch subscribes to `AzureRedisEvents`: Azure Cache
/// refuses the opt-in as Redis OSS does, and announces its maintenance on the channel instead.
pub const AZURE_REFUSAL: &str = "expected on Azure Cache: it announces maintenance on the \
AzureRedisEvents channel, which this watch subscribes to; its messages, closes and DNS changes \
will show";

/// Columns a string takes on a terminal, without our colour sequences (the only escapes left
/// after sanitising): a CJK character or an emoji takes two.
pub(super) fn visible_width(s: &str) -> usize {
    let mut width = 0;
    let mut in_escape = false;
    for c in s.chars() {
        match (in_escape, c) {
            (false, '\x1b') => in_escape = true,
            (true, 'm') => in_escape = false,
            (true, _) => {}
            (false, c) => width += unicode_width::UnicodeWidthChar::width(c).unwrap_or(0),
        }
    }
    width
}

/// Greedy word wrap at spaces; a word longer than the width stays whole on its own line, and a
/// number keeps its unit (`+6.3 s`).
pub(super) fn wrap(line: &str, width: usize) -> Vec<String> {
    wrap_with(line, width, CONTINUATION)
}

/// [`wrap`] with the indent of the continuation lines chosen by the caller (the demo's header and
/// narration lines hang under their own text, not under a timestamp).
pub fn wrap_with(line: &str, width: usize, continuation: &str) -> Vec<String> {
    if visible_width(line) <= width {
        return vec![line.to_string()];
    }
    let mut out = Vec::new();
    let mut current = String::new();
    let mut used = 0;
    // Nothing but the indent on the current line yet: never wrap again there.
    let mut fresh = true;
    for (i, word) in unbroken(line).into_iter().enumerate() {
        let w = visible_width(word);
        if i > 0 {
            if !fresh && used + 1 + w > width {
                out.push(std::mem::replace(&mut current, continuation.to_string()));
                used = continuation.len();
                fresh = true;
            } else {
                current.push(' ');
                used += 1;
            }
        }
        current.push_str(word);
        used += w;
        fresh &= word.is_empty();
    }
    out.push(current);
    out
}

/// [`hanging`] on a terminal of `columns`; on a pipe (`None`), `lead` and `text` on one line.
pub fn hanging_at(lead: &str, text: &str, columns: Option<usize>) -> Vec<String> {
    match columns {
        Some(c) => hanging(lead, text, c),
        None => vec![format!("{lead}{text}")],
    }
}

/// A row of a two-column table (a help text's scenario list): `lead` (its width is the first
/// column's), then `text` wrapped between words under the second column, values kept with their
/// units. Where the second column would be narrower than [`HANG_ROOM`], `text` goes on the rows
/// below the lead instead, four spaces in, so no word ends up alone on a row.
pub fn hanging(lead: &str, text: &str, width: usize) -> Vec<String> {
    let column = visible_width(lead);
    if width.saturating_sub(column) < HANG_ROOM {
        let indent = "    ";
        let mut rows = vec![lead.trim_end().to_string()];
        rows.extend(wrap_with(&format!("{indent}{text}"), width, indent));
        return rows;
    }
    wrap_with(&format!("{lead}{text}"), width, &" ".repeat(column))
}

/// The narrowest second column [`hanging`] wraps text into beside its lead.
const HANG_ROOM: usize = 30;

/// A grade table (`Grade::table()`) wrapped between words at `width`, or as it is when `None`
/// (not a terminal). A rule's reason continues under the reason column, so the verdicts stay a
/// column of their own; any other line continues two spaces deeper than its own indent.
pub fn wrap_grade(table: &str, width: Option<usize>) -> String {
    let Some(width) = width else {
        return table.to_string();
    };
    let mut out = String::with_capacity(table.len() + table.len() / 8);
    for line in table.lines() {
        let hang = " ".repeat(grade_hang(line).min(width / 2));
        for piece in wrap_with(line, width, &hang) {
            out.push_str(&piece);
            out.push('\n');
        }
    }
    out
}

/// Where a grade line continues: under the reason of a rule line (`    VERDICT    rule    why`),
/// else two spaces deeper than its indent.
fn grade_hang(line: &str) -> usize {
    const REASON_COLUMN: usize = 4 + 10 + 1 + 19 + 1;
    let verdict = line.get(4..14).map(str::trim_end);
    let is_rule = line.starts_with("    ")
        && matches!(verdict, Some("PASS" | "FAIL" | "NOT JUDGED"))
        && line.len() > REASON_COLUMN;
    if is_rule {
        return REASON_COLUMN;
    }
    line.len() - line.trim_start().len() + 2
}

/// `text` with the space between a number and its unit made a no-break space (U+00A0), for
/// text someone else wraps (clap's help): a terminal shows it as a space, and no wrapper that
/// breaks at ASCII spaces parts `+9.7` from `s`.
pub fn glue_units(text: &str) -> String {
    text.split('\n')
        .map(|line| {
            unbroken(line)
                .iter()
                .map(|piece| piece.replace(' ', "\u{a0}"))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The pieces of `line` between the spaces a line may break at: at every space but the one
/// between a number and its unit.
fn unbroken(line: &str) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    let mut start = 0;
    for (i, _) in line.match_indices(' ') {
        let before = &line[start..i];
        let after = line[i + 1..].split(' ').next().unwrap_or("");
        let number = before.ends_with(|c: char| c.is_ascii_digit());
        if !(number && is_unit(after)) {
            out.push(before);
            start = i + 1;
        }
    }
    out.push(&line[start..]);
    out
}

/// A unit written after a number, with the punctuation that may follow it (`s`, `ms;`, `s)`).
fn is_unit(word: &str) -> bool {
    let unit = word.trim_end_matches(|c: char| c.is_ascii_punctuation() || c == '\x1b');
    // Colour may close right after the unit: `s\x1b[0m`.
    let unit = unit.split('\x1b').next().unwrap_or(unit);
    matches!(
        unit,
        "s" | "ms" | "us" | "µs" | "B" | "KiB" | "MiB" | "GiB" | "bytes" | "seconds"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_entries_wrap_at_spaces_within_80_columns() {
        let line = format!("21:09:13.027 [-] +9.994 {}", "word ".repeat(30).trim_end());
        let lines = wrap(&line, WIDTH);
        assert!(lines.len() > 1);
        assert!(
            lines.iter().all(|l| visible_width(l) <= WIDTH),
            "{lines:#?}"
        );
        assert!(lines[1..].iter().all(|l| l.starts_with(CONTINUATION)));
        let rejoined: Vec<&str> = lines.iter().flat_map(|l| l.split_whitespace()).collect();
        assert_eq!(
            rejoined,
            line.split_whitespace().collect::<Vec<_>>(),
            "no word lost"
        );
        // Colour sequences take no columns; a word too long for a line stays whole.
        let painted = format!("\x1b[2m{}\x1b[0m", "x".repeat(75));
        assert_eq!(wrap(&painted, WIDTH), vec![painted.clone()]);
        let long = format!("a {}", "y".repeat(100));
        assert_eq!(wrap(&long, WIDTH).len(), 2);
    }

    /// A frame's bytes break only after a `\r\n`, and read back as the same bytes.
    #[test]
    fn escaped_bytes_break_after_a_line_end_only() {
        let raw = ">3\\r\\n$9\\r\\nSMIGRATED\\r\\n:19\\r\\n*1\\r\\n*3\\r\\n$15\\r\\n127.0.0.3:34235\\r\\n$15\\r\\n127.0.0.5:34235\\r\\n$11\\r\\nhello world\\r\\n";
        let line = format!("      {raw}");
        for width in [20, 40, 60, 80, 200] {
            let rows = wrap_bytes(&line, width);
            for row in &rows[..rows.len() - 1] {
                assert!(row.ends_with("\\r\\n"), "{width}: {rows:?}");
            }
            let pasted: String = rows.iter().map(|r| r.trim_start()).collect();
            assert_eq!(pasted, raw, "{width}");
            assert_eq!(rows.len() == 1, line.len() <= width, "{width}: {rows:?}");
        }
    }

    /// An AzureRedisEvents message, one bulk string longer than a row, breaks after its `|`
    /// separators (and after `\r\n` as any frame): the rows pasted together are its bytes.
    #[test]
    fn a_long_bulk_string_breaks_after_its_separators() {
        let raw = ">3\\r\\n$7\\r\\nmessage\\r\\n$16\\r\\nAzureRedisEvents\\r\\n$142\\r\\nNotificationType|NodeMaintenanceScheduled|StartTimeInUTC|2026-12-04T17:43:53|IsReplica|False|IPAddress|127.0.0.2|SSLPort|6380|NonSSLPort|44987\\r\\n";
        let line = format!("      {raw}");
        let rows = wrap_bytes(&line, WIDTH);
        assert!(rows.len() > 1, "{rows:?}");
        for row in &rows {
            assert!(visible_width(row) <= WIDTH, "{rows:?}");
        }
        for row in &rows[..rows.len() - 1] {
            assert!(row.ends_with('|') || row.ends_with("\\r\\n"), "{rows:?}");
        }
        let pasted: String = rows.iter().map(|r| r.trim_start()).collect();
        assert_eq!(pasted, raw);
        // A frame that fits its rows at `\r\n` is broken there only, as before.
        let short = "      >2\\r\\n$3\\r\\na|b\\r\\n";
        let rows = wrap_bytes(short, 20);
        assert!(rows.len() > 1, "{rows:?}");
        assert!(rows.iter().all(|r| !r.ends_with('|')), "{rows:?}");
    }

    /// A number and its unit are never split, wherever the width falls.
    #[test]
    fn a_number_keeps_its_unit() {
        let line = "replacement listens +6.3 s; DNS follows +9.7 s, (TTL 1 s) window 15 ms.";
        for width in 10..line.len() {
            let lines = wrap_with(line, width, "  ");
            for pair in lines.windows(2) {
                let next = pair[1].trim_start();
                assert!(
                    !(pair[0].ends_with(|c: char| c.is_ascii_digit())
                        && is_unit(next.split(' ').next().unwrap())),
                    "{width}: {lines:?}"
                );
            }
            let words: Vec<&str> = lines.iter().flat_map(|l| l.split_whitespace()).collect();
            assert_eq!(words, line.split_whitespace().collect::<Vec<_>>());
        }
        // Not a unit: a word that only starts like one.
        assert_eq!(unbroken("took 3 seconds"), ["took", "3 seconds"]);
        assert_eq!(unbroken("seq 3 shards 27"), ["seq", "3", "shards", "27"]);
    }
}
