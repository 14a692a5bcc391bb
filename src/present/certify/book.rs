//! `certify --report`: one page, a section per scenario played, drawn by `present::report`
//! from what each scenario kept for it.

use std::path::Path;

use crate::present::certify::played::Outcome;

/// `--report`: one page, a section per scenario played.
pub fn write_page(outcomes: &[Outcome], path: &Path) -> anyhow::Result<()> {
    let command = crate::present::report::command_line("certify");
    let reports: Vec<crate::present::report::Report<'_>> = outcomes
        .iter()
        .filter_map(|o| {
            let p = o.page.as_ref()?;
            Some(crate::present::report::Report {
                command: &command,
                source: format!("scenario {}", o.scenario),
                lines: &p.lines,
                observations: Some(&p.obs),
                grade: Some(&o.grade),
                notes: p.notes.clone(),
            })
        })
        .collect();
    crate::present::report::write_book(&command, &reports, path)
}
