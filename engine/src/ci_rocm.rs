//! The optional job of `forkbook ci github --rocm`: on a pull request that moves the pin, the
//! differential drift build with a ROCm toolchain from the runner's distribution (Ubuntu's
//! `hipcc`), the pull request's overlay built at the base branch's pin and at its own, ccache
//! kept between runs. Its own function, beside the workflow's other jobs.

/// The job's YAML (indented as a member of `jobs:`). `records` is the records folder; `setup`
/// the steps every job starts with (checkout, object cache, forkbook, the commits).
pub fn rocm_drift_job(records: &str, setup: &str) -> String {
    // The path of UPSTREAM as a shell word (single-quoted, `'\''` for a quote).
    let upstream = format!("'{}'", format!("{records}/UPSTREAM").replace('\'', "'\\''"));
    use super::ci_template::Fill::Ours;
    super::ci_template::fill(
        include_str!("../workflow/rocm_drift_job.yml"),
        &[
            ("setup", Ours(setup)),
            ("upstream_word", Ours(&upstream)),
            ("cache", Ours(&super::ci_actions::CACHE.uses())),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_job_runs_only_where_the_pin_moved_and_keeps_ccache() {
        let job = rocm_drift_job("patches-rocm", "      - uses: actions/checkout@v4\n");
        assert!(job.contains("  rocm-drift:\n"), "{job}");
        assert_eq!(
            job.matches("if: steps.pin.outputs.moved == 'true'").count(),
            3
        );
        assert!(job.contains("path: ${{ runner.temp }}/forkbook-drift-build/ccache"));
        assert!(job.contains("'patches-rocm/UPSTREAM'"), "{job}");
        assert!(job.contains("drift build --baseline \"$OLD_PIN\" --to \"$NEW_PIN\""));
        let odd = rocm_drift_job("it's", "");
        assert!(odd.contains("'it'\\''s/UPSTREAM'"), "{odd}");
    }
}
