//! Resolver of the fault selectors.

use anyhow::{bail, Result};
use faultline_faults::Fault;
use faultline_tasks::TaskKind;

/// Resolves fault selectors (default: the four reference stage faults) and checks that
/// every selected fault applies to at least one configured task.
pub(super) fn resolve_faults(
    selectors: Option<&[String]>,
    tasks: &[TaskKind],
    at: &str,
) -> Result<Vec<Fault>> {
    let selectors: Vec<String> = match selectors {
        None => vec!["reference".into()],
        Some([]) => bail!("{at}: expected at least one fault selector"),
        Some(list) => list.to_vec(),
    };
    let faults = faultline_faults::select(&selectors).map_err(|e| anyhow::anyhow!("{at}: {e}"))?;
    let usable: Vec<Fault> = faults
        .iter()
        .copied()
        .filter(|f| tasks.iter().any(|t| f.applies_to(*t)))
        .collect();
    if usable.is_empty() {
        let names: Vec<&str> = tasks.iter().map(|t| t.name()).collect();
        bail!(
            "{at}: none of the selected faults applies to the configured tasks ({}); `faultline list faults` shows which tasks each fault needs",
            names.join(", ")
        );
    }
    Ok(usable)
}

/// Drops the faults on the DevTools protocol from a selection a built-in run makes (its
/// `all` included) when its browser connection does not go through the proxy (and from
/// every built-in recovery selection: an episode's protocol side is not wired): they are
/// injected by the DevTools proxy, into an external harness's own browser connection or,
/// with `[browser] devtools_proxy = true`, into faultline's. A selection of nothing else
/// is an error.
pub(super) fn drop_protocol_faults(faults: &mut Vec<Fault>, at: &str) -> Result<()> {
    if !faults.iter().any(|f| f.on_the_protocol()) {
        return Ok(());
    }
    faults.retain(|f| !f.on_the_protocol());
    if faults.is_empty() {
        bail!(
            "{at}: faults on the DevTools protocol act on a browser connection through faultline's DevTools proxy; set `[browser] devtools_proxy = true` for detection, or run them under [harness] with a harness that connects through the proxy its claims offer"
        );
    }
    Ok(())
}
