//! Whether two runs measured the same thing (and may be compared at all).

use super::snapshot::Snapshot;
use super::verdict::Comparability;
use std::collections::BTreeSet;

/// Checks whether `candidate` measured the same thing as `baseline`.
pub fn comparability(baseline: &Snapshot, candidate: &Snapshot) -> Comparability {
    let (a, b) = (&baseline.identity, &candidate.identity);
    let mut warnings = Vec::new();
    let differs = |what: &str, x: &serde_json::Value, y: &serde_json::Value| {
        (x != y).then(|| format!("{what} differ (baseline {x}, candidate {y})"))
    };
    let refused = differs("root seeds", &a.root_seed, &b.root_seed)
        .or_else(|| differs("layouts", &a.layouts, &b.layouts))
        .or_else(|| differs("tasks", &a.tasks, &b.tasks))
        .or_else(|| differs("fault selections", &a.faults, &b.faults))
        .or_else(|| differs("decisions", &a.decisions, &b.decisions))
        .or_else(|| differs("recovery designs", &a.recovery, &b.recovery))
        .or_else(|| {
            let ka: BTreeSet<&str> = baseline.trials.iter().map(|t| t.key.as_str()).collect();
            let kb: BTreeSet<&str> = candidate.trials.iter().map(|t| t.key.as_str()).collect();
            first_difference("trial", &ka, &kb)
        })
        .or_else(|| {
            let shared = shared_policies(baseline, candidate);
            let keys = |s: &Snapshot| -> BTreeSet<String> {
                s.episodes
                    .iter()
                    .filter(|e| shared.contains(&e.policy))
                    .map(|e| e.key.clone())
                    .collect()
            };
            let (ka, kb) = (keys(baseline), keys(candidate));
            let ka: BTreeSet<&str> = ka.iter().map(String::as_str).collect();
            let kb: BTreeSet<&str> = kb.iter().map(String::as_str).collect();
            first_difference("episode", &ka, &kb)
        });
    if a.chromium_version != b.chromium_version {
        warnings.push(format!(
            "Chromium versions differ (baseline {}, candidate {})",
            a.chromium_version.as_deref().unwrap_or("unknown"),
            b.chromium_version.as_deref().unwrap_or("unknown")
        ));
    }
    // The settle mode is the harness's timing, a change a gate exists to judge: reported,
    // never a refusal, and only when both runs recorded one (older runs and baseline
    // files did not).
    if let (Some(x), Some(y)) = (&a.settle, &b.settle) {
        if x != y {
            warnings.push(format!("settle modes differ (baseline {x}, candidate {y})"));
        }
    }
    let shared = shared_policies(baseline, candidate);
    for (side, s) in [("baseline", baseline), ("candidate", candidate)] {
        let only: Vec<&str> = s
            .policies
            .iter()
            .filter(|p| !shared.contains(*p))
            .map(String::as_str)
            .collect();
        if only.is_empty() {
            continue;
        }
        warnings.push(match side {
            "baseline" => format!(
                "policies only in the baseline: {} (their cells are missing from the candidate)",
                only.join(", ")
            ),
            _ => format!(
                "policies only in the candidate are not compared: {}",
                only.join(", ")
            ),
        });
    }
    Comparability { refused, warnings }
}

fn first_difference(what: &str, a: &BTreeSet<&str>, b: &BTreeSet<&str>) -> Option<String> {
    if let Some(k) = a.difference(b).next() {
        return Some(format!(
            "{what} items differ: `{k}` is in the baseline only ({} vs {} items)",
            a.len(),
            b.len()
        ));
    }
    b.difference(a).next().map(|k| {
        format!(
            "{what} items differ: `{k}` is in the candidate only ({} vs {} items)",
            a.len(),
            b.len()
        )
    })
}

/// Policies both runs have, in the baseline's order.
pub(super) fn shared_policies(a: &Snapshot, b: &Snapshot) -> Vec<String> {
    a.policies
        .iter()
        .filter(|p| b.policies.contains(p))
        .cloned()
        .collect()
}
