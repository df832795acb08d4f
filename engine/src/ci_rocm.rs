//! The optional job of `forkbook ci github --rocm`: on a pull request that moves the pin, the
//! differential drift build with a ROCm toolchain from the runner's distribution (Ubuntu's
//! `hipcc`), the pull request's overlay built at the base branch's pin and at its own, ccache
//! kept between runs. Its own function, beside the workflow's other jobs.

/// The job's YAML (indented as a member of `jobs:`). `records` is the records folder; `setup`
/// the steps every job starts with (checkout, object cache, forkbook, the commits).
pub fn rocm_drift_job(records: &str, setup: &str) -> String {
    // The path of UPSTREAM as a shell word (single-quoted, `'\''` for a quote).
    let upstream = format!("'{}'", format!("{records}/UPSTREAM").replace('\'', "'\\''"));
    format!(
        "
  rocm-drift:
    # On pull requests that move the pin: the differential drift build with a real HIP compiler.
    # What both pins show is the toolchain's (\"also at the recorded pin\"); only what is new at
    # the pull request's pin fails the job.
    if: github.event_name == 'pull_request'
    runs-on: ubuntu-latest
    # The job's `env` may not read the `runner` context (GitHub refuses the whole file): the
    # work folder in the runner's temporary folder is the drift build step's own.
    env:
      BASE_SHA: ${{{{ github.event.pull_request.base.sha }}}}
    steps:
{setup}      - name: Did the pin move?
        id: pin
        run: |
          git fetch --no-tags --depth=1 origin \"$BASE_SHA\"
          old=\"$(git show \"$BASE_SHA\":{upstream} | sed -n 's/^retargeted_to_mlx_pin: //p')\"
          new=\"$(sed -n 's/^retargeted_to_mlx_pin: //p' {upstream})\"
          echo \"old=$old\" >> \"$GITHUB_OUTPUT\"
          echo \"new=$new\" >> \"$GITHUB_OUTPUT\"
          if [ -n \"$old\" ] && [ \"$old\" != \"$new\" ]; then
            echo \"moved=true\" >> \"$GITHUB_OUTPUT\"
          else
            echo \"moved=false\" >> \"$GITHUB_OUTPUT\"
          fi
      - name: Install a ROCm toolchain and ccache
        if: steps.pin.outputs.moved == 'true'
        run: |
          sudo apt-get update -qq
          sudo apt-get install -y -qq --no-install-recommends hipcc libamdhip64-dev rocm-device-libs ccache cmake
      - name: Keep ccache between runs
        if: steps.pin.outputs.moved == 'true'
        uses: {cache}
        with:
          path: ${{{{ runner.temp }}}}/forkbook-drift-build/ccache
          key: forkbook-ccache-${{{{ github.run_id }}}}
          restore-keys: forkbook-ccache-
      - name: The differential drift build (the base's pin to this pull request's)
        if: steps.pin.outputs.moved == 'true'
        env:
          OLD_PIN: ${{{{ steps.pin.outputs.old }}}}
          NEW_PIN: ${{{{ steps.pin.outputs.new }}}}
          DRIFT_WORK: ${{{{ runner.temp }}}}/forkbook-drift-build
        run: forkbook drift build --baseline \"$OLD_PIN\" --to \"$NEW_PIN\" --with-api --work \"$DRIFT_WORK\"
",
        cache = super::ci_actions::CACHE.uses(),
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
