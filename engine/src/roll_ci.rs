//! The scheduled roll in the generated GitHub Actions workflow (`forkbook ci github --roll`).
//!
//! On a schedule the workflow's `roll` job forecasts the next pin bump (`roll --check`) and, when
//! the clean candidate is past the recorded pin, makes the bump on a branch (`roll`) and opens
//! or updates one pull request with the report as its body, through
//! `peter-evans/create-pull-request` (it reuses its branch, so there is never more than one).
//! The scheduled run also triggers the workflow's publish job, so the book's forecast chapter
//! is rebuilt and published with it. Scheduling and pull requests stay GitHub's: forkbook only
//! writes the records and the body.

use super::error::{Error, Result};
// The workflow's one YAML quoting rule (every character outside printable ASCII escaped).
use super::text::yaml_quoted;

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
    format!(
        "  # The roll's forecast (and the book with it) is made again on this schedule (UTC).\n  schedule:\n    - cron: {}\n",
        yaml_quoted(cron)
    )
}

/// The `roll` job. `setup` is the steps every job of the workflow starts with (checkout, object
/// cache, forkbook, the recorded commits); `records` the records folder, the only files the pull
/// request carries.
pub fn roll_job(setup: &str, records: &str) -> String {
    let add_paths = yaml_quoted(&format!("{records}/**"));
    let branch = yaml_quoted(ROLL_BRANCH);
    format!(
        "
  # The scheduled roll: forecast the next pin bump and, when the clean candidate (the newest
  # upstream commit with no conflict and no drift) is past the recorded pin, make the bump on
  # the branch {ROLL_BRANCH} and open or update one pull request with the report as its body.
  # Tokens: the job's GITHUB_TOKEN needs `contents: write` and `pull-requests: write` (below),
  # and the repository must allow it to open pull requests (Settings > Actions > General >
  # Allow GitHub Actions to create and approve pull requests). A pull request opened with
  # GITHUB_TOKEN does not start other workflows, so the book's gate would not run on it: store a
  # fine-grained token with contents and pull-requests write access as the secret
  # FORKBOOK_ROLL_TOKEN and it is used instead.
  roll:
    if: github.event_name == 'schedule' || github.event_name == 'workflow_dispatch'
    runs-on: ubuntu-latest
    permissions:
      contents: write
      pull-requests: write
    steps:
{setup}      - name: Forecast the next pin bump
        id: forecast
        run: |
          forkbook roll --check
          forkbook roll --check --json > \"$RUNNER_TEMP/forecast.json\"
          {{
            echo \"moves=$(jq -r '.clean.moves' \"$RUNNER_TEMP/forecast.json\")\"
            echo \"candidate=$(jq -r '.clean.commit.sha' \"$RUNNER_TEMP/forecast.json\")\"
          }} >> \"$GITHUB_OUTPUT\"
      - name: Roll to the clean candidate
        if: steps.forecast.outputs.moves == 'true'
        env:
          CANDIDATE: ${{{{ steps.forecast.outputs.candidate }}}}
        # Exit status 1 (the report found something to review) still opens the pull request.
        run: forkbook roll --to \"$CANDIDATE\" --body \"$RUNNER_TEMP/roll-body.md\" || test $? -eq 1
      - name: Open or update the roll's pull request
        if: steps.forecast.outputs.moves == 'true'
        uses: {create_pull_request}
        with:
          token: ${{{{ secrets.FORKBOOK_ROLL_TOKEN || github.token }}}}
          branch: {branch}
          add-paths: {add_paths}
          commit-message: Roll the upstream pin to ${{{{ steps.forecast.outputs.candidate }}}}
          title: Roll the upstream pin to ${{{{ steps.forecast.outputs.candidate }}}}
          body-path: ${{{{ runner.temp }}}}/roll-body.md
          delete-branch: true
",
        create_pull_request = super::ci_actions::CREATE_PULL_REQUEST.uses(),
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
