//! Resolver of the `[recovery]` section.

use super::faults::resolve_faults;
use super::file::RecoveryFile;
use super::RecoveryConfig;
use crate::engine::episode::EpisodeLimits;
use anyhow::{bail, Result};
use faultline_policies::Registry;
use faultline_tasks::TaskKind;

pub(super) fn resolve_recovery(
    file: Option<&RecoveryFile>,
    layouts: u32,
    tasks: &[TaskKind],
    registry: &Registry,
    at: &dyn Fn(&str) -> String,
) -> Result<RecoveryConfig> {
    let empty = RecoveryFile::default();
    let r = file.unwrap_or(&empty);
    let enabled = r.enabled.unwrap_or(file.is_some());
    let policies = match &r.policies {
        None => vec!["unverified".into(), "generic".into(), "outcome".into()],
        Some(list) if list.is_empty() => bail!("{}: expected at least one policy", at("policies")),
        Some(list) => {
            for p in list {
                registry
                    .build(p)
                    .map_err(|e| anyhow::anyhow!("{}: {e}", at("policies")))?;
            }
            list.clone()
        }
    };
    let runs = r.runs.unwrap_or(3);
    if runs == 0 || runs > 100 {
        bail!(
            "{}: expected between 1 and 100 runs, found {runs}",
            at("runs")
        );
    }
    let registry = crate::agent::Registry::default();
    let (key, named) = match (&r.agent, &r.agents) {
        (Some(_), Some(_)) => bail!(
            "{}: expected either `agent` or `agents`, not both",
            at("agents")
        ),
        (Some(a), None) => ("agent", vec![a.clone()]),
        (None, Some(list)) if list.is_empty() => {
            bail!("{}: expected at least one agent", at("agents"))
        }
        (None, Some(list)) => ("agents", list.clone()),
        (None, None) => ("agents", vec!["trusting".into(), "observant".into()]),
    };
    let mut agents: Vec<String> = Vec::new();
    for name in &named {
        let Some(canonical) = registry.canonical(name) else {
            bail!(
                "{}: unknown agent `{name}` (available: {})",
                at(key),
                registry.names().join(", ")
            );
        };
        if agents.iter().any(|a| a == canonical) {
            bail!("{}: agent `{name}` is listed twice", at(key));
        }
        agents.push(canonical.to_string());
    }
    let defaults = EpisodeLimits::default();
    let limits = EpisodeLimits {
        budget: r.budget.unwrap_or(defaults.budget),
        max_steps: r.max_steps.unwrap_or(defaults.max_steps),
        time_limit_ms: r.time_limit_ms.unwrap_or(defaults.time_limit_ms),
        max_wait_ms: r.max_wait_ms.unwrap_or(defaults.max_wait_ms),
    };
    if !(1_000..=3_600_000).contains(&limits.time_limit_ms) {
        bail!(
            "{}: expected an episode time limit between 1000 and 3600000 ms, found {}",
            at("time_limit_ms"),
            limits.time_limit_ms
        );
    }
    if limits.max_wait_ms > 60_000 {
        bail!(
            "{}: expected a wait cap of at most 60000 ms, found {}",
            at("max_wait_ms"),
            limits.max_wait_ms
        );
    }
    if limits.budget > 100 {
        bail!(
            "{}: expected a budget of at most 100 browser actions, found {}",
            at("budget"),
            limits.budget
        );
    }
    if limits.max_steps < 2 || limits.max_steps > 200 {
        bail!(
            "{}: expected between 2 and 200 steps (the recorded decision and at least one reply), found {}",
            at("max_steps"),
            limits.max_steps
        );
    }
    let wanted = r.layouts.unwrap_or(20);
    if wanted == 0 {
        bail!("{}: expected at least 1 layout", at("layouts"));
    }
    let mut faults = resolve_faults(r.faults.as_deref(), tasks, &at("faults"))?;
    // Recovery episodes are faultline's own (no external harness runs them yet).
    super::faults::drop_protocol_faults(&mut faults, &at("faults"))?;
    Ok(RecoveryConfig {
        enabled,
        // The recovery layouts are the first of the detection's: no more than it has.
        layouts: wanted.min(layouts),
        policies,
        runs,
        agents,
        limits,
        faults,
    })
}
