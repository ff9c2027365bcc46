//! What went wrong, and the exit code it earns: the one place exit codes are decided.
//!
//! | code | meaning |
//! |---|---|
//! | 0 | done |
//! | 1 | a failure while doing what was asked (browser, disk, network) |
//! | 2 | a problem with what was asked: a flag, a config, a decision file ([`UsageError`]) |
//! | 3 | `gate`: the two runs measured different things ([`NotComparable`]) |
//!
//! `gate` also exits 1 when the candidate regressed, lacks a cell of the baseline or misses
//! a bound ([`Regressed`]): in CI a regression and a broken run both fail the job, and 2
//! (bad input, including rules that select no cell) and 3 tell the caller the gate could
//! not judge.

use anyhow::anyhow;

/// A problem with what the user asked for (exit code 2), as opposed to a failure while
/// doing it (exit code 1).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// `gate`: the candidate regressed, lacks a cell of the baseline or misses a bound (exit
/// code 1).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Regressed(pub String);

/// `gate`: the runs cannot be compared (exit code 3).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct NotComparable(pub String);

/// Exit code for a run that finished.
pub const EXIT_OK: i32 = 0;
/// Exit code for a failure while doing what was asked.
pub const EXIT_FAILURE: i32 = 1;
/// Exit code for bad input: flags, configs, decision files.
pub const EXIT_USAGE: i32 = 2;
/// Exit code for runs the gate refuses to compare.
pub const EXIT_NOT_COMPARABLE: i32 = 3;

/// The exit code an error earns.
pub fn exit_code(err: &anyhow::Error) -> i32 {
    if err.downcast_ref::<UsageError>().is_some()
        || err
            .downcast_ref::<faultline_tasks::DecisionError>()
            .is_some()
    {
        EXIT_USAGE
    } else if err.downcast_ref::<NotComparable>().is_some() {
        EXIT_NOT_COMPARABLE
    } else {
        EXIT_FAILURE
    }
}

/// Marks an error as the user's input being wrong (exit code 2), keeping its context.
pub fn usage(e: anyhow::Error) -> anyhow::Error {
    anyhow!(UsageError(format!("{e:#}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_errors_exit_2_and_failures_exit_1() {
        assert_eq!(exit_code(&usage(anyhow!("bad flag"))), EXIT_USAGE);
        assert_eq!(exit_code(&anyhow!("browser crashed")), EXIT_FAILURE);
        assert_eq!(
            exit_code(&anyhow!(UsageError("--layouts must be > 0".into()))),
            2
        );
        assert_eq!(
            exit_code(&anyhow!(NotComparable("layouts differ".into()))),
            3
        );
        assert_eq!(exit_code(&anyhow!(Regressed("2 regressions".into()))), 1);
    }
}
