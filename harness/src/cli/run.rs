//! `faultline run`: runs an experiment and writes its report.

use super::RunArgs;
use crate::config::{self, Overrides};
use crate::error::usage;
use crate::experiment::{self, RunRequest};
use anyhow::{anyhow, bail, Result};
use std::io::Write as _;
use std::path::PathBuf;

pub(super) async fn run(args: RunArgs) -> Result<()> {
    run_as(args, crate::environment::EnvOptions::default()).await
}

/// `faultline env`: the run's items served to a harness started by hand.
pub(super) async fn run_env(args: super::EnvArgs) -> Result<()> {
    run_as(
        args.run,
        crate::environment::EnvOptions {
            bind: args.bind,
            start_workers: false,
            announce: true,
        },
    )
    .await
}

async fn run_as(args: RunArgs, options: crate::environment::EnvOptions) -> Result<()> {
    let text = config::load_text(args.config.as_deref()).map_err(usage)?;
    let overrides = Overrides {
        seed: args.seed,
        layouts: args.layouts,
        jobs: args.jobs,
        faults: (!args.faults.is_empty()).then(|| args.faults.clone()),
        isolation: args.isolation.clone(),
    };
    let config = config::resolve(&text, &overrides).map_err(usage)?;
    if !options.start_workers && config.harness.is_none() {
        return Err(usage(anyhow!(
            "{}: `faultline env` serves a run under [harness]; add a [harness] section (see the README, \"Test your own harness\")",
            config.source
        )));
    }
    let shard = match args.shard.as_deref() {
        None => None,
        Some("auto") => Some(
            experiment::shard::shard_from_env(|k| std::env::var(k).ok())
                .map_err(|e| usage(anyhow!(e)))?,
        ),
        Some(s) => Some(
            s.parse::<experiment::shard::Shard>()
                .map_err(|e| usage(anyhow!("--shard: {e}")))?,
        ),
    };
    let out = match (args.out, shard) {
        (Some(o), Some(s)) => o.join(s.dir_name()),
        (None, Some(_)) => {
            return Err(usage(anyhow!(
                "--shard needs --out DIR (shard I of N writes DIR/shard-I-of-N)"
            )))
        }
        (Some(o), None) => o,
        (None, None) if args.resume => {
            return Err(usage(anyhow!(
                "--resume needs --out DIR (the run to continue)"
            )))
        }
        (None, None) => PathBuf::from("results").join(format!("run-{}", utc_stamp())),
    };
    if let Some(s) = shard {
        eprintln!("shard {s}: writing {}", out.display());
    }
    let request = RunRequest {
        out,
        // A shard run again (a replaced pod, a requeued array task) resumes its own
        // directory: the items it already stored are never run twice.
        resume: args.resume || shard.is_some(),
        shard,
        config,
        config_text: text,
        overrides,
        max_trials: args.max_trials,
        max_episodes: args.max_episodes,
        progress: true,
    };
    let summary = match request.config.harness.is_some() {
        true => crate::environment::run_request(request, options).await?,
        false => experiment::run(request).await?,
    };
    let secs = summary.detection_wall.as_secs_f64();
    let mut stdout = std::io::stdout().lock();
    writeln!(
        stdout,
        "detection: {} trials run, {} already stored, {} in all; wall time {:.1} s ({:.2} trials/s, jobs {})",
        summary.trials_run,
        summary.trials_skipped,
        summary.trials_total,
        secs,
        if secs > 0.0 { summary.trials_run as f64 / secs } else { 0.0 },
        summary.detection_jobs
    )?;
    if let Some(r) = &summary.recovery {
        let secs = r.wall.as_secs_f64();
        writeln!(
            stdout,
            "recovery:  {} episodes run, {} already stored, {} in all; wall time {:.1} s ({:.2} episodes/s, jobs {})",
            r.run,
            r.skipped,
            r.total,
            secs,
            if secs > 0.0 { r.run as f64 / secs } else { 0.0 },
            r.jobs
        )?;
    }
    if summary.infra_failures > 0 || summary.policy_errors > 0 {
        writeln!(
            stdout,
            "infra:     {} failed attempt(s) retried or given up on, {} item(s) failed for good, {} browser restart(s), {} judgement(s) a policy could not make; listed in the report (--resume retries failed items)",
            summary.infra_failures, summary.failed_items, summary.browser_restarts, summary.policy_errors
        )?;
    }
    let misses = summary.recovery.as_ref().map_or(0, |r| r.cassette_misses);
    if misses > 0 {
        writeln!(
            stdout,
            "cassette:  missed {misses} request(s) in replay mode; their episodes were not run"
        )?;
    }
    writeln!(
        stdout,
        "results:   {}",
        summary.out.join("results.sqlite").display()
    )?;
    writeln!(stdout, "report:    {}", summary.report.display())?;
    writeln!(stdout, "view:      {}", summary.view.display())?;
    // A replay that missed its cassette did not measure what was recorded: not a
    // finished run, whatever else went well.
    if misses > 0 {
        bail!(
            "the agent's cassette missed {misses} request(s) in replay mode: those episodes were not run \
             (agent_endpoint, listed in the report); record them with cassette mode record or auto, \
             then run again with --resume"
        );
    }
    Ok(())
}

/// `YYYYmmdd-HHMMSS` in UTC, without a date-time dependency.
pub(super) fn utc_stamp() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}{m:02}{d:02}-{:02}{:02}{:02}",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_stamp_has_the_expected_shape() {
        let s = utc_stamp();
        assert_eq!(s.len(), 15);
        assert_eq!(&s[8..9], "-");
        assert!(s.starts_with("20"));
    }
}
