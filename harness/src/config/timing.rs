//! Resolvers of `[timing]`'s settle mode and of `[liveness]`.

use super::file::{LivenessFile, TimingFile};
use crate::engine::liveness::Liveness;
use crate::engine::timing::StableSettle;
use anyhow::{bail, Result};

/// The settle mode of `[timing]`: `None` for `fixed`, the stable mode's parameters for
/// `stable`.
pub(super) fn resolve_settle(
    file: Option<&TimingFile>,
    at: &dyn Fn(&str) -> String,
) -> Result<Option<StableSettle>> {
    let f = file.cloned().unwrap_or_default();
    let stable = match f.settle.as_deref() {
        None | Some("fixed") => false,
        Some("stable") => true,
        Some(other) => bail!(
            "{}: unknown settle mode `{other}` (expected fixed or stable)",
            at("timing.settle")
        ),
    };
    if !stable {
        if f.stable_window_ms.is_some() || f.stable_windows.is_some() || f.stable_cap_ms.is_some() {
            bail!(
                "{}: stable_* settings need settle = \"stable\"",
                at("timing.settle")
            );
        }
        return Ok(None);
    }
    let d = StableSettle::default();
    let st = StableSettle {
        window_ms: f.stable_window_ms.unwrap_or(d.window_ms),
        windows: f.stable_windows.unwrap_or(d.windows),
        cap_ms: f.stable_cap_ms.unwrap_or(d.cap_ms),
    };
    if !(10..=5_000).contains(&st.window_ms) || !(1..=100).contains(&st.windows) {
        bail!(
            "{}: expected a window of 10-5000 ms and 1-100 windows",
            at("timing.stable_window_ms")
        );
    }
    if !(100..=60_000).contains(&st.cap_ms) {
        bail!(
            "{}: expected a cap between 100 and 60000 ms, found {}",
            at("timing.stable_cap_ms"),
            st.cap_ms
        );
    }
    Ok(Some(st))
}

/// The `[liveness]` section, defaults filled in and checked.
pub(super) fn resolve_liveness(
    file: Option<&LivenessFile>,
    at: &dyn Fn(&str) -> String,
) -> Result<Liveness> {
    let d = Liveness::default();
    let f = file.cloned().unwrap_or_default();
    let l = Liveness {
        call_timeout_ms: f.call_timeout_ms.unwrap_or(d.call_timeout_ms),
        page_timeout_ms: f.page_timeout_ms.unwrap_or(d.page_timeout_ms),
        retries: f.retries.unwrap_or(d.retries),
        browser_restarts: f.browser_restarts.unwrap_or(d.browser_restarts),
    };
    if !(500..=600_000).contains(&l.call_timeout_ms) {
        bail!(
            "{}: expected a call timeout between 500 and 600000 ms, found {}",
            at("liveness.call_timeout_ms"),
            l.call_timeout_ms
        );
    }
    if !(1_000..=600_000).contains(&l.page_timeout_ms) {
        bail!(
            "{}: expected a page timeout between 1000 and 600000 ms, found {}",
            at("liveness.page_timeout_ms"),
            l.page_timeout_ms
        );
    }
    if l.retries > 10 {
        bail!(
            "{}: expected at most 10 retries, found {}",
            at("liveness.retries"),
            l.retries
        );
    }
    if l.browser_restarts > 100 {
        bail!(
            "{}: expected at most 100 browser restarts, found {}",
            at("liveness.browser_restarts"),
            l.browser_restarts
        );
    }
    Ok(l)
}
