//! The client matrix (docs/matrix.md) is what the client tier measured: one row per client version, one
//! column per scenario, each cell certify's short cell (`maintwatch::grading::matrix::short`), and under
//! the table the run's date and every cell that is not `ok` in full. The tier
//! (`tests/it/redis_py_app.rs`, `tests/it/node_redis.rs`, `tests/it/go_redis.rs`) runs
//! `maintwatch certify` for each client version, writes the cells certify printed to
//! `target/client-matrix/`, and then calls
//! [`check_rows`] for the rows it ran: the check sits in the test that measured, since the tests
//! of the one test binary run at once. To rewrite those rows of docs/matrix.md instead:
//!
//!     MAINTWATCH_REGENERATE=1 cargo test --test it -- certified_row older_certified_rows
//!
//! (`scripts/clients/matrix.sh` does that for every version.)

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::common;
use common::tier;
use maintwatch::grading::matrix;

const START: &str =
    "<!-- client-matrix start: written by tests/it/tier_matrix.rs from the client tier's results -->";
const END: &str = "<!-- client-matrix end -->";
const MATRIX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/matrix.md");
const DATES: &str = "Rows measured (UTC date, runs of each scenario, load average: versions):";
const FULL: &str = "Cells in full, where not `ok` or `n/a`:";
/// The page's section that says why each cell that is not `ok` is what it is.
const WHY: &str = "<!-- why: read by tests/it/tier_matrix.rs -->";
/// The page's tables, in order: the kinds of maintenance, then the rest of certify's default
/// scenarios and the cluster's second move.
const TABLES: [&[(&str, &str)]; 2] = [&matrix::COLUMNS, &matrix::MORE_COLUMNS];
use matrix::NOT_RUN;

/// Every scenario of the page's tables, in order.
fn all_columns() -> impl Iterator<Item = &'static (&'static str, &'static str)> {
    TABLES.iter().flat_map(|t| t.iter())
}

/// One recorded cell: short and full as certify printed them (over several runs, with their
/// counts), and when (UTC date), over how many runs and at what load (the 1-minute load
/// average as its run ended) it was measured.
#[derive(Debug, Clone, PartialEq)]
struct Cell {
    short: String,
    full: String,
    date: String,
    runs: u64,
    load: f64,
}

/// client -> scenario -> cell, from the tier's result files.
fn results() -> BTreeMap<String, BTreeMap<String, Cell>> {
    let mut out: BTreeMap<String, BTreeMap<String, Cell>> = BTreeMap::new();
    let Ok(dir) = std::fs::read_dir(tier::results_dir()) else {
        return out;
    };
    for entry in dir {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let v: serde_json::Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let field = |k: &str| {
            v[k].as_str()
                .unwrap_or_else(|| panic!("{}: no {k} (an older tier's file?)", path.display()))
                .to_string()
        };
        let cell = Cell {
            short: field("short"),
            full: field("cell"),
            date: field("date"),
            runs: v["runs"].as_u64().unwrap_or(1),
            load: field("load").parse().unwrap_or(f64::NAN),
        };
        out.entry(field("client"))
            .or_default()
            .insert(field("scenario"), cell);
    }
    out
}

/// How a row was measured, as its date line says it: the day its run started, the fewest runs
/// of any of its cells and the highest load (`2026-12-06, 20 runs, load up to 1.52`).
fn measured(cells: &BTreeMap<String, Cell>) -> String {
    let date = cells.values().map(|c| c.date.as_str()).min().unwrap();
    let runs = cells.values().map(|c| c.runs).min().unwrap();
    let load = cells.values().map(|c| c.load).fold(f64::NAN, f64::max);
    let s = if runs == 1 { "" } else { "s" };
    format!("{date}, {runs} run{s}, load up to {load:.2}")
}

/// The order of the rows: by library, then by version, numerically.
fn sort_key(client: &str) -> (String, Vec<u64>) {
    let (name, version) = client.rsplit_once(' ').unwrap_or((client, ""));
    let numbers = version
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect();
    (name.to_string(), numbers)
}

/// The matrix part of docs/matrix.md, parsed.
#[derive(Debug, Default, PartialEq)]
struct Matrix {
    /// Each table's heading.
    headers: Vec<String>,
    /// client -> its row in each table.
    rows: BTreeMap<String, Vec<String>>,
    /// client -> how its run was measured (date, runs, load).
    dates: BTreeMap<String, String>,
    /// client -> its lines under "Cells in full".
    full: BTreeMap<String, Vec<String>>,
}

/// The lines, under "Cells in full", of `client`'s cells that are neither `ok` nor `n/a`:
/// scenarios with the same full cell share a bullet.
fn full_lines(client: &str, cells: &BTreeMap<String, Cell>) -> Vec<String> {
    let mut groups: Vec<(Vec<&str>, &str)> = Vec::new();
    for (scenario, _) in all_columns() {
        let Some(c) = cells.get(*scenario) else {
            continue;
        };
        if c.short == "ok" || c.short == matrix::NOT_APPLICABLE {
            continue;
        }
        match groups.iter_mut().find(|(_, full)| *full == c.full) {
            Some(g) => g.0.push(scenario),
            None => groups.push((vec![scenario], &c.full)),
        }
    }
    // A cell over several runs gives each of its results a line, so that none runs past 80
    // columns: `  `A (7/10)`` then `  or `B (3/10)``.
    let mut lines = Vec::new();
    for (scenarios, full) in groups {
        lines.push(format!("- {client}, {}:", scenarios.join(", ")));
        for (i, (variant, n)) in matrix::variants_of(full).into_iter().enumerate() {
            let or = if i == 0 { "" } else { "or " };
            let count = match full.contains(" or ") {
                true => format!(" ({n}/{})", runs_of(full)),
                false => String::new(),
            };
            lines.push(format!("  {or}`{variant}{count}`"));
        }
    }
    lines
}

/// How many runs a full cell counts (1 for a cell of one run, or of runs that all agreed).
fn runs_of(full: &str) -> usize {
    matrix::variants_of(full).iter().map(|(_, n)| n).sum()
}

/// `client`'s row in each table.
fn row_of(client: &str, cells: &BTreeMap<String, Cell>) -> Vec<String> {
    TABLES
        .iter()
        .map(|columns| matrix::row(client, columns, |s| cells.get(s).map(|c| c.short.clone())))
        .collect()
}

/// The tables' headings.
fn headers() -> Vec<String> {
    TABLES.iter().map(|t| matrix::header(t)).collect()
}

fn client_of(line: &str) -> String {
    line.trim_start_matches('|')
        .split('|')
        .next()
        .unwrap()
        .trim()
        .to_string()
}

/// The lines of a section of `body`: from the line after `title` to the next blank line.
fn section<'a>(body: &'a str, title: &str) -> Vec<&'a str> {
    body.lines()
        .skip_while(|l| *l != title)
        .skip(1)
        .skip_while(|l| l.is_empty())
        .take_while(|l| !l.is_empty())
        .collect()
}

fn parse(text: &str) -> Matrix {
    let start = text
        .find(START)
        .expect("docs/matrix.md has no client matrix start marker");
    let end = text
        .find(END)
        .expect("docs/matrix.md has no client matrix end marker");
    let body = &text[start + START.len()..end];
    // The tables: runs of `|` lines, in order.
    let mut tables: Vec<Vec<&str>> = Vec::new();
    let mut in_table = false;
    for line in body.lines() {
        match (line.starts_with('|'), in_table) {
            (true, false) => tables.push(vec![line]),
            (true, true) => tables.last_mut().unwrap().push(line),
            _ => {}
        }
        in_table = line.starts_with('|');
    }
    let mut m = Matrix::default();
    for table in &tables {
        m.headers.push(table[..2.min(table.len())].join("\n"));
        for l in table.iter().skip(2) {
            m.rows.entry(client_of(l)).or_default().push(l.to_string());
        }
    }
    for line in section(body, DATES) {
        let (date, versions) = line
            .trim_start_matches("- ")
            .split_once(": ")
            .unwrap_or_else(|| panic!("docs/matrix.md: a date line {line:?}"));
        // `redis-py 7.0.1, 7.2.2`: a library's versions.
        let (library, list) = versions
            .split_once(' ')
            .unwrap_or_else(|| panic!("docs/matrix.md: a date line {line:?}"));
        for version in list.split(", ") {
            m.dates
                .insert(format!("{library} {version}"), date.to_string());
        }
    }
    let mut current = String::new();
    for line in section(body, FULL) {
        if let Some(rest) = line.strip_prefix("- ") {
            current = rest.split(", ").next().unwrap().to_string();
        }
        m.full
            .entry(current.clone())
            .or_default()
            .push(line.to_string());
    }
    m
}

fn render(m: &Matrix) -> String {
    let mut clients: Vec<&String> = m.rows.keys().collect();
    clients.sort_by_key(|c| sort_key(c));
    let mut out = String::new();
    for (t, header) in m.headers.iter().enumerate() {
        if t > 0 {
            out.push('\n');
        }
        out.push_str(header);
        out.push('\n');
        for c in &clients {
            if let Some(row) = m.rows[*c].get(t) {
                out.push_str(row);
                out.push('\n');
            }
        }
    }
    let mut by_date: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for c in &clients {
        if let Some(d) = m.dates.get(*c) {
            by_date.entry(d).or_default().push(c);
        }
    }
    out.push_str(&format!("\n{DATES}\n\n"));
    for (date, cs) in by_date {
        let mut groups: Vec<(&str, Vec<&str>)> = Vec::new();
        for c in cs {
            let (library, version) = c.rsplit_once(' ').unwrap_or((c, ""));
            match groups.iter_mut().find(|(l, _)| *l == library) {
                Some(g) => g.1.push(version),
                None => groups.push((library, vec![version])),
            }
        }
        // One line per library and date: a day that measured several libraries would run past
        // 80 columns on one line.
        for (l, vs) in groups {
            out.push_str(&format!("- {date}: {l} {}\n", vs.join(", ")));
        }
    }
    out.push_str(&format!("\n{FULL}\n\n"));
    for c in &clients {
        for line in m.full.get(*c).into_iter().flatten() {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// The documented full cell of each of `client`'s scenarios (absent: `ok`, `n/a` or not run).
fn documented_full(m: &Matrix, client: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let lines = m.full.get(client).cloned().unwrap_or_default();
    let mut bullets: Vec<(&str, Vec<&str>)> = Vec::new();
    for line in &lines {
        match line.strip_prefix("- ") {
            Some(head) => bullets.push((head.trim_end_matches(':'), Vec::new())),
            None => {
                let variant = line.trim().trim_start_matches("or ").trim_matches('`');
                if let Some(b) = bullets.last_mut() {
                    b.1.push(variant);
                }
            }
        }
    }
    for (scenarios, variants) in bullets {
        for s in scenarios.split(", ").skip(1) {
            out.insert(s.to_string(), variants.join(" or "));
        }
    }
    out
}

/// `cells` with each cell whose documented runs varied taken as documented when this run's cell
/// (each, over several runs) is one of those recorded; a cell the recorded runs never gave is taken as documented too,
/// with a line saying to measure the row again: one run cannot tell a new behaviour from a
/// rare one. A cell that never varied is left as measured, for [`check_rows`] to compare
/// strictly.
fn within_recorded(
    client: &str,
    cells: &BTreeMap<String, Cell>,
    m: &Matrix,
) -> (BTreeMap<String, Cell>, Vec<String>) {
    let mut out = cells.clone();
    let mut notes = Vec::new();
    for (scenario, doc) in steady_and_varied(m, client, cells) {
        let variants = matrix::variants_of(&doc);
        let Some(measured) = cells.get(&scenario) else {
            continue;
        };
        if variants.len() < 2 {
            let same = verdicts_of(&measured.full) == verdicts_of(&doc);
            if !same && judged_less(&measured.full, &doc) {
                notes.push(format!(
                    "{client}, {scenario}: `{}` judged less than the recorded runs ({doc}): a rule \
                     not judged says what was not seen, not something else; taken as recorded",
                    measured.full
                ));
                out.insert(scenario, recorded(&doc, measured));
            }
            continue;
        }
        let runs: usize = variants.iter().map(|(_, n)| n).sum();
        // This run's cell (or each of its cells, over several runs).
        let seen = matrix::variants_of(&measured.full);
        if !seen
            .iter()
            .all(|(f, _)| variants.iter().any(|(v, _)| v == f))
        {
            notes.push(format!(
                "{client}, {scenario}: `{}` not seen in the recorded {runs} runs ({doc}): \
                 re-measure this row (scripts/clients/matrix.sh)",
                measured.full
            ));
        }
        out.insert(scenario, recorded(&doc, measured));
    }
    (out, notes)
}

/// The cell as the page records it, measured when `measured` was.
fn recorded(doc: &str, measured: &Cell) -> Cell {
    Cell {
        short: matrix::short_of_cell(doc),
        full: doc.to_string(),
        ..measured.clone()
    }
}

/// Every documented cell of `client` in full, and each `ok` cell of its rows as the rules of
/// its measured cell all passing (an `ok` cell has no full line).
fn steady_and_varied(
    m: &Matrix,
    client: &str,
    cells: &BTreeMap<String, Cell>,
) -> BTreeMap<String, String> {
    let mut out = documented_full(m, client);
    let page = m
        .rows
        .get(client)
        .map(|r| cells_of_rows(r))
        .unwrap_or_default();
    for (scenario, heading) in all_columns() {
        let ok = page.iter().any(|(h, c)| h == heading && *c == "ok");
        if let (true, Some(measured)) = (ok && !out.contains_key(*scenario), cells.get(*scenario)) {
            let codes: Vec<&str> = verdicts_of(&measured.full).into_keys().collect();
            out.insert(scenario.to_string(), format!("PASS {}", codes.join(" ")));
        }
    }
    out
}

/// Each rule's verdict in one full cell (`FAIL rst; NJ rlx; PASS srv opt`), by its code.
fn verdicts_of(full: &str) -> BTreeMap<&str, &str> {
    full.split("; ")
        .flat_map(|part| {
            let mut words = part.split_whitespace();
            let verdict = words.next().unwrap_or("");
            words.map(move |code| (code, verdict))
        })
        .collect()
}

/// Whether `measured` says no more than `doc` (one run's cell against a steady recorded one):
/// every rule it judged, it judged as `doc` does, and the others it did not judge or did not
/// exercise. Less evidence cannot contradict a recorded verdict; a rule judged otherwise does.
fn judged_less(measured: &str, doc: &str) -> bool {
    let (seen, recorded) = (verdicts_of(measured), verdicts_of(doc));
    seen.iter().all(|(code, v)| {
        recorded.contains_key(code) && (*v == "NJ" || recorded.get(code) == Some(v))
    })
}

/// Regenerations of the one matrix page, one at a time (the tier's tests run at once).
static MATRIX_LOCK: Mutex<()> = Mutex::new(());

/// The matrix's rows of `clients` are the tier's latest results: their rows, their date line and
/// their full cells (`MAINTWATCH_REGENERATE=1`: rewritten from them instead). A client with no
/// results fails: the caller has just recorded them.
pub fn check_rows(clients: &[&str]) {
    let results = results();
    let _lock = MATRIX_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let text = std::fs::read_to_string(MATRIX).unwrap();
    let mut m = parse(&text);
    let regenerate = crate::common::regenerating();
    for client in clients {
        let cells = results
            .get(*client)
            .unwrap_or_else(|| panic!("no results for {client}"));
        let cells = match regenerate {
            false => {
                let (cells, notes) = within_recorded(client, cells, &m);
                for note in notes {
                    crate::common::visible(&note);
                }
                cells
            }
            true => cells.clone(),
        };
        let rows = row_of(client, &cells);
        let full = full_lines(client, &cells);
        let date = measured(&cells);
        if regenerate {
            m.rows.insert(client.to_string(), rows);
            m.full.insert(client.to_string(), full);
            m.dates.insert(client.to_string(), date);
            continue;
        }
        let hint = "(MAINTWATCH_REGENERATE=1, see tests/it/tier_matrix.rs, rewrites it)";
        assert_eq!(
            m.rows.get(*client),
            Some(&rows),
            "docs/matrix.md's rows for {client} differ from the tier's latest results {hint}"
        );
        assert_eq!(
            m.full.get(*client).cloned().unwrap_or_default(),
            full,
            "docs/matrix.md's full cells of {client} differ from the tier's latest results {hint}"
        );
        assert!(
            m.dates.contains_key(*client),
            "docs/matrix.md names no run of {client} {hint}"
        );
    }
    if regenerate {
        m.headers = headers();
        write_page(&text, &m);
        eprintln!(
            "docs/matrix.md: client matrix rows of {} rewritten",
            clients.join(", ")
        );
    }
}

/// The newest release of each library, which CI certifies: its rows have every column.
const NEWEST: [&str; 5] = [
    "redis-py 8.2.0",
    "node-redis 6.4.0",
    "go-redis 9.24.0",
    "ioredis 6.1.0",
    "Lettuce 7.7.0",
];

/// With `MAINTWATCH_REGENERATE=1`, every row rewritten from its full cells ([`rows_from_full`]):
/// after a change of how a short cell is spelled, the page follows without measuring again.
fn rows_rewritten_from_full_when_regenerating() {
    if !crate::common::regenerating() {
        return;
    }
    let _lock = MATRIX_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let text = std::fs::read_to_string(MATRIX).unwrap();
    let mut m = parse(&text);
    let clients: Vec<String> = m.rows.keys().cloned().collect();
    for client in clients {
        let rows = rows_from_full(&m, &client);
        m.rows.insert(client, rows);
    }
    write_page(&text, &m);
}

/// The page `text` with the matrix between its markers rendered from `m`, written back.
fn write_page(text: &str, m: &Matrix) {
    let start = text.find(START).unwrap() + START.len();
    let end = text.find(END).unwrap();
    let new = format!("{}\n{}{}", &text[..start], render(m), &text[end..]);
    std::fs::write(MATRIX, new).unwrap();
}

/// `client`'s rows as its full cells make them: each cell with a full line is that line's short
/// cell ([`matrix::short_of_cell`]), the others (`ok`, `n/a`, `-`) as the page has them. The
/// page's rows must be these, so that a row never says less than the lines under it.
fn rows_from_full(m: &Matrix, client: &str) -> Vec<String> {
    let full = documented_full(m, client);
    let page = cells_of_rows(&m.rows[client]);
    TABLES
        .iter()
        .map(|columns| {
            matrix::row(client, columns, |scenario| {
                if let Some(f) = full.get(scenario) {
                    return Some(matrix::short_of_cell(f));
                }
                let heading = columns.iter().find(|(s, _)| *s == scenario)?.1;
                let (_, cell) = page.iter().find(|(h, _)| *h == heading)?;
                Some(cell.to_string())
            })
        })
        .collect()
}

/// The cells of a row as the page shows them: (column heading, short cell).
fn cells_of_rows(rows: &[String]) -> Vec<(&'static str, &str)> {
    rows.iter()
        .zip(TABLES)
        .flat_map(|(row, columns)| {
            let cells = row
                .split('|')
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .skip(1);
            columns.iter().map(|(_, h)| *h).zip(cells)
        })
        .collect()
}

/// The why section's bullets: each `- LIBRARY VERSIONS, `col`...: why`, as (head, text).
fn why_bullets(text: &str) -> Vec<(String, String)> {
    let Some(at) = text.find(WHY) else {
        return Vec::new();
    };
    let mut bullets: Vec<String> = Vec::new();
    for line in text[at..]
        .lines()
        .skip(1)
        .skip_while(|l| !l.starts_with("- "))
    {
        match line.strip_prefix("- ") {
            Some(b) => bullets.push(b.to_string()),
            None if line.starts_with("  ") => {
                bullets.last_mut().unwrap().push_str(line);
            }
            None => break,
        }
    }
    bullets
        .into_iter()
        .map(|b| match b.split_once(": ") {
            Some((head, rest)) => (head.to_string(), rest.to_string()),
            None => (b, String::new()),
        })
        .collect()
}

/// Whether a why bullet's head names `client` (`go-redis 9.16.0, 9.18.0 and 9.23.0`, or
/// `every release`) and the column `heading`.
fn names_cell(head: &str, client: &str, heading: &str) -> bool {
    let (library, version) = client.rsplit_once(' ').unwrap();
    let release =
        head.starts_with("every release") || (head.starts_with(library) && head.contains(version));
    release && head.contains(&format!("`{heading}`"))
}

/// The matrix as it stands: both tables' headers as certify's columns give them, rows for
/// every library's releases, each dated, every line within 80 columns, every cell that is
/// neither `ok` nor `n/a` given in full and explained under the table, the newest releases
/// with every column measured; rendering it again changes nothing.
#[test]
fn client_matrix_has_every_version_dated_within_80_columns() {
    rows_rewritten_from_full_when_regenerating();
    let text = std::fs::read_to_string(MATRIX).unwrap();
    let m = parse(&text);
    assert_eq!(
        m.headers,
        headers(),
        "docs/matrix.md's client matrix headers"
    );
    let libraries = [
        "redis-py 7.0.",
        "redis-py 7.2.",
        "redis-py 8.1.0",
        "node-redis 5.9.",
        "node-redis 5.11.",
        "node-redis 6.3.1",
        "go-redis 9.16.",
        "go-redis 9.18.",
        "Lettuce 7.0.",
    ];
    for lib in libraries.iter().chain(&NEWEST) {
        assert!(
            m.rows.keys().any(|c| c.starts_with(lib)),
            "no row for {lib}*: {:?}",
            m.rows.keys()
        );
    }
    let why = why_bullets(&text);
    for (client, rows) in &m.rows {
        assert!(m.dates.contains_key(client), "{client}: no date");
        assert_eq!(rows.len(), TABLES.len(), "{client}: {rows:?}");
        let cells = cells_of_rows(rows);
        assert_eq!(cells.len(), all_columns().count(), "{rows:?}");
        let explained = |c: &&str| *c != "ok" && *c != matrix::NOT_APPLICABLE && *c != NOT_RUN;
        assert_eq!(
            m.full.contains_key(client),
            cells.iter().map(|(_, c)| c).any(explained),
            "{client}: full cells"
        );
        for (heading, cell) in cells.iter().filter(|(_, c)| explained(c)) {
            assert!(
                why.iter()
                    .any(|(head, _)| names_cell(head, client, heading)),
                "{client}, `{heading}` ({cell}): no bullet under the why section names it"
            );
        }
        assert_eq!(
            rows,
            &rows_from_full(&m, client),
            "{client}: a row's cells are not its full cells' short ones"
        );
        if NEWEST.contains(&client.as_str()) {
            assert!(
                cells.iter().all(|(_, c)| *c != NOT_RUN),
                "{client}: a newest release with a column not run: {rows:?}"
            );
        }
    }
    let start = text.find(START).unwrap();
    let end = text.find(END).unwrap();
    // A table's row is read rendered and keeps every cell whole; the lines around it are prose.
    for line in text[start + START.len()..end].lines() {
        assert!(
            line.starts_with('|') || line.chars().count() <= 80,
            "over 80 columns: {line:?}"
        );
    }
    assert_eq!(
        render(&parse(&text)),
        text[start + START.len() + 1..end],
        "docs/matrix.md's matrix is not as rendered"
    );
}

/// The matrix's cells for a made-up grade: each rule's worst verdict over every notification,
/// failures first, then what was not judged, then what passed, by code in the rule table's
/// order; the racy rule never appears (the matrix must be stable). The short cell keeps the
/// worst verdict and its codes.
#[test]
fn a_cell_gives_each_rules_worst_verdict_by_code() {
    let rule = |r: &str, v: &str| serde_json::json!({"rule": r, "verdict": v, "held": v == "pass"});
    let grade = serde_json::json!({
        "rules": [rule("survives", "fail")],
        "clients": [{"client": "x/1", "notifications": [
            {"rules": [rule("opt-in", "pass"), rule("moved-before-close", "pass"),
                       rule("relaxed-timeout", "not_judged")]},
            {"rules": [rule("opt-in", "pass"), rule("moved-before-close", "fail"),
                       rule("no-lost-commands", "fail"), rule("relaxed-timeout", "pass")]}
        ]}]
    });
    assert_eq!(tier::cell(&grade), "FAIL srv mov; NJ rlx; PASS opt");
    let empty = serde_json::json!({"rules": [], "clients": []});
    assert_eq!(tier::cell(&empty), "nothing judged");
}

/// A recorded cell of the tests below.
fn cell(short: &str, full: &str) -> Cell {
    Cell {
        short: short.into(),
        full: full.into(),
        date: "2026-12-03".into(),
        runs: 1,
        load: 0.5,
    }
}

/// A row's cells: `single` in `single-proxy`, `other` in every other column.
fn row_failing_single(other: Cell, single: Cell) -> BTreeMap<String, Cell> {
    let mut cells: BTreeMap<String, Cell> = all_columns()
        .map(|(s, _)| (s.to_string(), other.clone()))
        .collect();
    cells.insert("single-proxy".into(), single);
    cells
}

/// A page of one client's rows, measured as `cells`.
fn page_of(client: &str, cells: &BTreeMap<String, Cell>) -> Matrix {
    Matrix {
        headers: headers(),
        rows: [(client.into(), row_of(client, cells))].into(),
        full: [(client.into(), full_lines(client, cells))].into(),
        dates: [(client.into(), measured(cells))].into(),
    }
}

/// Rows render within 80 columns and parse back: the sort puts 5.9 before 5.11, the date line
/// says how the row was measured, and each full cell is under the tables.
#[test]
fn rows_sort_by_version_and_parse_back() {
    let mut m = Matrix {
        headers: headers(),
        ..Matrix::default()
    };
    for client in ["node-redis 5.11.0", "node-redis 5.9.0"] {
        let cells = row_failing_single(cell("ok", "PASS srv"), cell("F srv", "FAIL srv; PASS opt"));
        m.rows.insert(client.into(), row_of(client, &cells));
        m.full.insert(client.into(), full_lines(client, &cells));
        m.dates.insert(client.into(), measured(&cells));
    }
    let text = format!("{START}\n{}{END}\n", render(&m));
    assert_eq!(parse(&text), m);
    let first = text.find("| node-redis 5.9.0").unwrap();
    assert!(first < text.find("| node-redis 5.11.0").unwrap(), "{text}");
    assert!(
        text.contains("- 2026-12-03, 1 run, load up to 0.50: node-redis 5.9.0, 5.11.0\n"),
        "{text}"
    );
    assert!(
        text.contains("- node-redis 5.9.0, single-proxy:\n  `FAIL srv; PASS opt`\n"),
        "{text}"
    );
    assert_eq!(text.matches("| node-redis 5.9.0 |").count(), TABLES.len());
}

/// Every rule the judge knows has a code, and no two codes are the same.
#[test]
fn every_rule_has_a_matrix_code() {
    let names: Vec<&str> = maintwatch::grading::judge::rule_names().collect();
    let rules: Vec<&str> = tier::codes().map(|(r, _)| r).collect();
    assert_eq!(rules, names);
    let mut codes: Vec<&str> = tier::codes().map(|(_, c)| c).collect();
    assert!(
        codes.iter().all(|c| !c.is_empty() && !c.contains(' ')),
        "{codes:?}"
    );
    codes.sort_unstable();
    codes.dedup();
    assert_eq!(codes.len(), names.len());
}

/// CI's check of one run against a row measured over many: a cell that never varied is
/// compared strictly, so a change that moves it fails; a cell that varied takes any verdict
/// its runs gave, and one they never gave prints a line to re-measure the row, without failing.
#[test]
fn a_steady_cell_is_strict_and_a_varied_one_takes_what_its_runs_gave() {
    let client = "go-redis 9.23.0";
    let steady = "FAIL loop; PASS srv opt mov storm";
    let rare = "FAIL mov loop; PASS srv opt storm";
    let fulls: Vec<String> = [vec![steady; 19], vec![rare]]
        .concat()
        .iter()
        .map(|s| s.to_string())
        .collect();
    let varied = cell(&matrix::short_over(&fulls), &matrix::cell_over(&fulls));
    assert_eq!(varied.short, "F loop mov 1/20");
    let mut documented = row_failing_single(cell("ok", "PASS srv opt"), varied);
    documented.insert(
        "failover".into(),
        cell("F rst", "FAIL rst; PASS srv opt rlx"),
    );
    let m = page_of(client, &documented);
    let checked = |scenario: &str, c: Cell| {
        let mut cells = documented.clone();
        cells.insert(scenario.into(), c);
        let (cells, notes) = within_recorded(client, &cells, &m);
        (row_of(client, &cells) == m.rows[client], notes)
    };
    // Either verdict its runs gave: the row as documented, nothing said.
    for full in [steady, rare] {
        let (same, notes) = checked("single-proxy", cell("F loop", full));
        assert!(same && notes.is_empty(), "{full}: {notes:?}");
    }
    // A verdict its runs never gave: taken, with a line to re-measure.
    let unseen = "FAIL storm loop; PASS srv opt mov";
    let (same, notes) = checked("single-proxy", cell("F storm loop", unseen));
    assert!(same, "{notes:?}");
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].contains("not seen in the recorded 20 runs"),
        "{notes:?}"
    );
    assert!(notes[0].contains("re-measure this row"), "{notes:?}");
    // A cell that never varied moves: the row differs, and check_rows fails on it.
    let (same, notes) = checked("failover", cell("ok", "PASS srv opt rlx rst"));
    assert!(!same && notes.is_empty(), "{notes:?}");
    // A run that judged less (a rule not judged where the runs judged it): taken as recorded,
    // with a line; for an `ok` cell too, whose rules all passed.
    let (same, notes) = checked("failover", cell("F rst", "FAIL rst; NJ rlx; PASS srv opt"));
    assert!(same && notes.len() == 1, "{notes:?}");
    assert!(
        notes[0].contains("judged less than the recorded runs"),
        "{notes:?}"
    );
    let (same, notes) = checked("multi-proxy", cell("NJ opt", "NJ opt; PASS srv"));
    assert!(same && notes.len() == 1, "{notes:?}");
    let (same, _) = checked("multi-proxy", cell("F mov", "FAIL mov; PASS srv opt"));
    assert!(!same);
}

/// A why bullet names a cell by its library, its version (or `every release`) and its column.
#[test]
fn a_why_bullet_names_its_release_and_column() {
    let text = format!(
        "{WHY}\n\n- go-redis 9.16.0 and 9.23.0, `single` and `dns`: FAIL `loop`, it\n  acts again.\n- every release, `noend`: FAIL `rst`.\n\nafter"
    );
    let why = why_bullets(&text);
    assert_eq!(why.len(), 2, "{why:?}");
    assert!(why[0].1.ends_with("it  acts again."), "{why:?}");
    let named =
        |client: &str, heading: &str| why.iter().any(|(h, _)| names_cell(h, client, heading));
    assert!(named("go-redis 9.23.0", "dns"));
    assert!(named("redis-py 8.2.0", "noend"));
    assert!(!named("go-redis 9.18.0", "single"));
    assert!(!named("go-redis 9.23.0", "multi"));
}

/// scripts/clients/client-versions.sh's `newer_than` on canned registry answers (pip's, npm's
/// and Go's, as each prints them): the releases newer than the pinned one, oldest first, with
/// versions compared as numbers (6.10 after 6.4) and pre-releases left out.
#[test]
fn newer_releases_are_read_from_each_registrys_answer() {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scripts/clients/client-versions.sh"
    );
    let newer = |pinned: &str, answer: &str| {
        let out = std::process::Command::new("bash")
            .args(["-c", &format!(". '{script}' && newer_than {pinned}")])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                use std::io::Write;
                c.stdin.take().unwrap().write_all(answer.as_bytes())?;
                c.wait_with_output()
            })
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let pip = "8.3.0rc1, 8.2.1, 8.2.0, 8.1.0, 7.4.1";
    assert_eq!(newer("8.2.0", pip), "8.2.1\n");
    let npm = "[\n  \"6.3.1\",\n  \"6.4.0\",\n  \"6.10.0\",\n  \"7.0.0-next.1\"\n]\n";
    assert_eq!(newer("6.4.0", npm), "6.10.0\n");
    assert_eq!(newer("6.10.0", npm), "");
    let go = "github.com/redis/go-redis/v9 v9.22.0 v9.23.0 v9.24.0-beta.1 v9.24.0\n";
    assert_eq!(newer("9.23.0", go), "9.24.0\n");
}
