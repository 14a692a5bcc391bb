//! What `replay` says on stderr of each file: how it ended (a torn last line, bad lines past
//! those shown, where reading stopped) and, with `--check`, its verdict. The reading and the
//! checks are `observe::replay`.

use std::io::Write;

use crate::observe::replay::ReplayReport;
use crate::present::output::terminal;
use crate::shared::escape::sanitize;

/// Bad lines reported one by one; past them only their number.
pub const BAD_SHOWN: usize = 10;

/// Reports how a file ended, and with `check` its verdict; returns whether it passed.
pub fn verdict(
    check: bool,
    name: &str,
    report: &ReplayReport,
    err: &mut dyn Write,
) -> anyhow::Result<bool> {
    if let Some(n) = report.torn_tail {
        say(
            err,
            &format!("{name}:{n}: torn last line (the capture was cut mid-write), ignored"),
        )?;
    }
    let name = sanitize(name);
    let mut ok = report.bad_lines == 0;
    if report.bad_lines > BAD_SHOWN {
        say(
            err,
            &format!(
                "{name}: {} more bad lines not shown ({} in all)",
                report.bad_lines - BAD_SHOWN,
                report.bad_lines
            ),
        )?;
    }
    if let Some((n, why)) = &report.stopped {
        let why = sanitize(why);
        say(err, &format!("{name}:{n}: {why}; stopped reading"))?;
        ok = false;
    } else if report.valid == 0 {
        say(
            err,
            &format!(
                "{name}: no maintwatch JSON line in it ({} non-blank line(s) read)",
                report.lines
            ),
        )?;
        ok = false;
    }
    if check {
        ok &= report.differences == 0;
        say(
            err,
            &format!(
                "{name}: {}: {}, {} checked, {} differ",
                if ok { "ok" } else { "FAILED" },
                counted(report.lines, "line"),
                counted(report.frames, "frame"),
                report.differences
            ),
        )?;
    }
    Ok(ok)
}

/// One line on stderr about `replay`.
pub fn say(err: &mut dyn Write, text: &str) -> std::io::Result<()> {
    writeln!(err, "{}", terminal::about("replay", text))
}

/// `n` and the noun, plural unless `n` is 1 ("1 frame", "2 frames").
fn counted(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}
