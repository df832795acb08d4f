//! The scheduled roll in the generated GitHub Actions workflow (`forkbook ci github --roll`).
//!
//! On a schedule the workflow's `roll` job forecasts the next pin bump (`roll --check`) and, when
//! the clean candidate is past the recorded pin, makes the bump on a branch (`roll`) and opens
//! or updates one pull request with the report as its body, through
//! `peter-evans/create-pull-request` (it reuses its branch, so there is never more than one).
//! The scheduled run also triggers the workflow's publish job, so the book's forecast chapter
//! is rebuilt and published with it. Scheduling and pull requests stay GitHub's: forkbook only
//! writes the records and the body.

use super::ci_actions::CREATE_PULL_REQUEST;
use super::ci_template::{fill, Fill};
use super::error::{Error, Result};

/// The schedule when `--schedule` is left out: every day at 05:17 UTC (off the hour, when
/// GitHub's scheduled runs queue least).
pub const DEFAULT_SCHEDULE: &str = "17 5 * * *";

/// The branch the roll's pull request comes from.
pub const ROLL_BRANCH: &str = "forkbook/roll";

/// Checks a cron expression as GitHub's `schedule` takes it: five fields of digits, `*`, `/`,
/// `,`, `-` or month and day names.
pub fn check_schedule(cron: &str) -> Result<String> {
    let fields: Vec<&str> = cron.split_whitespace().collect();
    let fine = fields.len() == 5
        && fields.iter().all(|f| {
            f.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '*' | '/' | ',' | '-'))
        });
    if !fine {
        return Err(Error::new(format!(
            "`{}` is not a schedule: it needs five cron fields (minute hour day month weekday)",
            cron.escape_debug()
        ))
        .with_note(format!(
            "for example `--schedule \"{DEFAULT_SCHEDULE}\"`, every day at 05:17 UTC"
        )));
    }
    Ok(fields.join(" "))
}

/// The `schedule` trigger, to go under `on:` before `workflow_dispatch:`.
pub fn schedule_trigger(cron: &str) -> String {
    let template = include_str!("../workflow/schedule.yml");
    fill(template, &[("cron", Fill::Value(cron))])
}

/// The `roll` job. `setup` is the steps every job of the workflow starts with (checkout, object
/// cache, forkbook, the recorded commits); `records` the records folder, the only files the pull
/// request carries.
pub fn roll_job(setup: &str, records: &str) -> String {
    use Fill::{Ours, Value};
    fill(
        include_str!("../workflow/roll_job.yml"),
        &[
            ("roll_branch", Ours(ROLL_BRANCH)),
            ("setup", Ours(setup)),
            ("create_pull_request", Ours(&CREATE_PULL_REQUEST.uses())),
            ("branch", Value(ROLL_BRANCH)),
            ("records_files", Value(&format!("{records}/**"))),
        ],
    )
}

/// What `ci github` says about the roll job it wrote.
pub fn describe(cron: &str) -> String {
    format!(
        "  on the schedule `{cron}` (UTC): `forkbook roll --check`, the book published with its \
         forecast, and when the clean candidate moved `forkbook roll` on the branch \
         `{ROLL_BRANCH}` with one pull request (secret FORKBOOK_ROLL_TOKEN: optional, so the \
         gate runs on it)\n"
    )
}
