//! Assertions the statistics tests share: a value against its reference, within a
//! tolerance each test states (the reference values' precision differs: closed forms
//! checked to 1e-10, iterated or cluster-robust ones to 1e-9, tail probabilities
//! relative to their size).

/// Asserts `|actual - expected| < tol`.
#[track_caller]
pub(crate) fn close(actual: f64, expected: f64, tol: f64) {
    assert!(
        (actual - expected).abs() < tol,
        "got {actual}, expected {expected} (tolerance {tol})"
    );
}

/// Asserts `|actual - expected| / |expected| < tol`: for values (tail probabilities)
/// whose size spans many orders of magnitude.
#[track_caller]
pub(crate) fn rel_close(actual: f64, expected: f64, tol: f64) {
    assert!(
        ((actual - expected) / expected).abs() < tol,
        "got {actual}, expected {expected} (relative tolerance {tol})"
    );
}
