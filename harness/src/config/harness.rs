//! Resolver of the `[harness]` section: an external harness under test.

use super::file::{HarnessFile, RecoveryFile};
use super::RecoveryConfig;
use anyhow::{bail, Result};
use faultline_faults::Fault;
use serde::{Deserialize, Serialize};

/// The external harness a run's items are served to (see [`crate::environment`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HarnessConfig {
    /// The harness's name: its verdicts are stored as this policy's.
    pub name: String,
    /// The worker program and its arguments; `None` when the harness is started by hand
    /// (`faultline env`).
    pub command: Option<Vec<String>>,
    /// How many worker processes `faultline run` starts. Not part of what a run *is*.
    #[serde(skip)]
    pub workers: usize,
    /// How long a worker may hold an item before it is taken back. Not part of what a
    /// run *is*.
    #[serde(skip)]
    pub lease_ms: u64,
}

/// The default lease: a minute for one item (a browser, a navigation, a settle, a
/// verifier), far above what a working harness needs.
pub const DEFAULT_LEASE_MS: u64 = 60_000;
/// The most worker processes one run starts.
pub const MAX_WORKERS: usize = 64;

/// The `[harness]` section, validated.
pub(super) fn resolve_harness(
    file: &HarnessFile,
    at: &dyn Fn(&str) -> String,
) -> Result<HarnessConfig> {
    let name = file.name.clone().unwrap_or_else(|| "harness".to_string());
    let valid = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if !valid {
        bail!(
            "{}: a harness name is 1 to 64 letters, digits, `_`, `-` or `.`",
            at("harness.name")
        );
    }
    if faultline_policies::Registry::default().contains(&name) {
        bail!(
            "{}: `{name}` is a built-in policy's name; name the harness after itself",
            at("harness.name")
        );
    }
    if let Some(c) = &file.command {
        if c.is_empty() || c[0].is_empty() {
            bail!(
                "{}: expected a program and its arguments, e.g. command = [\"python3\", \"harness.py\"]",
                at("harness.command")
            );
        }
    }
    let workers = file.workers.unwrap_or(1);
    if !(1..=MAX_WORKERS).contains(&workers) {
        bail!(
            "{}: expected between 1 and {MAX_WORKERS} workers, found {workers}",
            at("harness.workers")
        );
    }
    let lease_ms = file.lease_ms.unwrap_or(DEFAULT_LEASE_MS);
    if !(100..=3_600_000).contains(&lease_ms) {
        bail!(
            "{}: expected a lease between 100 and 3600000 ms, found {lease_ms}",
            at("harness.lease_ms")
        );
    }
    Ok(HarnessConfig {
        name,
        command: file.command.clone(),
        workers,
        lease_ms,
    })
}

/// The `[recovery]` section of a run under `[harness]`: the episodes are served to the
/// harness, whose own verifier tells its own agent, so its name is the one policy and the
/// one agent. `runs` repeats every episode as for a built-in agent (an external agent may
/// act differently each time). Only the faults that reach an external harness are kept.
pub(super) fn external_recovery(
    mut recovery: RecoveryConfig,
    file: Option<&RecoveryFile>,
    harness: &HarnessConfig,
    at: &dyn Fn(&str) -> String,
) -> Result<RecoveryConfig> {
    if !recovery.enabled {
        return Ok(recovery);
    }
    if let Some(f) = file {
        for (key, set) in [
            ("policies", f.policies.is_some()),
            ("agent", f.agent.is_some()),
            ("agents", f.agents.is_some()),
        ] {
            if set {
                bail!(
                    "{}: under [harness] the harness's own verifier tells its own agent; remove `{key}` (both are stored as `{}`)",
                    at(key),
                    harness.name
                );
            }
        }
    }
    recovery.policies = vec![harness.name.clone()];
    recovery.agents = vec![harness.name.clone()];
    recovery.faults.retain(|f| reaches_external(*f));
    if recovery.faults.is_empty() {
        bail!(
            "{}: none of these faults can reach an external harness (they need faultline's own round trip or browser); choose network, page or self-report faults, or `reference`",
            at("faults")
        );
    }
    Ok(recovery)
}

/// The faults an external harness can meet: everything the fixture server injects
/// (network and page faults) and every rewrite of the reply it is handed (the agent's
/// own claims), every fault on the DevTools protocol (injected by the proxy a harness
/// connects its driver through), plus the four reference stage faults as conformance probes. Faults that
/// need a hook in faultline's own round trip or its browser (the other tool faults, a
/// viewport changed over CDP) cannot reach a foreign harness's browser.
pub fn reaches_external(fault: Fault) -> bool {
    use faultline_faults::Mechanism;
    match fault.mechanism() {
        Mechanism::Network | Mechanism::Page | Mechanism::Agent | Mechanism::Devtools => true,
        Mechanism::Browser => false,
        Mechanism::Harness => Fault::STAGE.contains(&fault),
    }
}
