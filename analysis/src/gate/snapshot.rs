//! What the gate compares: a run reduced to its identity and every item's outcome, read
//! from a results database or from a committed baseline file (the same structure as
//! JSON, versioned). A baseline file that names one trial or episode twice is refused:
//! the gate would pair the item twice and count it double.

use crate::config::run_policies;
use crate::db::{GateIdentity, ResultsDb};
use anyhow::{anyhow, bail, Context, Result};
use faultline_tasks::{Condition, InfraErrorKind, Phase, Verdict};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The `format` field of a baseline file.
pub const BASELINE_FORMAT: &str = "faultline-baseline";
/// The baseline file version this faultline writes and reads.
pub const BASELINE_VERSION: u32 = 1;

/// One detection trial: its key, cell and every policy's verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrialOutcome {
    /// The trial key ([`crate::db::TrialRow::trial_key`]).
    pub key: String,
    /// The task's name.
    pub task: String,
    /// `None` on working trials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<String>,
    /// The layout index (the layout cluster of the paired statistics).
    pub layout: u32,
    /// `None` on working trials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fired: Option<bool>,
    /// The ledger's verdict: the intended outcome happened.
    pub truth: bool,
    /// Policy -> `success`, `no_change` or `fail`.
    pub verdicts: BTreeMap<String, Verdict>,
}

impl TrialOutcome {
    /// The policy's verdict agreed with the ledger (the report's *caught*).
    pub fn caught(&self, policy: &str) -> Option<bool> {
        self.verdicts
            .get(policy)
            .map(|v| (*v == Verdict::Success) == self.truth)
    }

    /// The policy raised an alarm (any verdict but `success`).
    pub fn alarm(&self, policy: &str) -> Option<bool> {
        self.verdicts.get(policy).map(|v| *v != Verdict::Success)
    }
}

/// One recovery episode: its key, cell and outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpisodeOutcome {
    /// The episode key ([`crate::db::EpisodeRow::episode_key`]).
    pub key: String,
    /// The task's name.
    pub task: String,
    /// The fault id.
    pub fault: String,
    /// The policy whose messages the agent was given.
    pub policy: String,
    /// The agent's name.
    pub agent: String,
    /// The layout index (the layout cluster of the paired statistics).
    pub layout: u32,
    /// Whether the fault left a witness at any step.
    pub fired: bool,
    /// The ledger's verdict at the end of the episode.
    pub success: bool,
}

/// A (trial or episode, policy) the policy could not judge: every attempt ended in an
/// infrastructure error and no verdict (or episode) was stored.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct InfraError {
    /// The trial or episode key.
    pub key: String,
    /// The policy that could not judge.
    pub policy: String,
    /// The last attempt's kind (`spawn`, `crash`, `timeout`, `malformed`, ...), by name.
    pub kind: InfraErrorKind,
}

/// A run as the gate sees it (and as a baseline file stores it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    /// Always [`BASELINE_FORMAT`].
    pub format: String,
    /// [`BASELINE_VERSION`].
    pub version: u32,
    /// What makes the run comparable to another: the gate's identity rule of the run
    /// record ([`GateIdentity`]).
    pub identity: GateIdentity,
    /// The run's policies, in report order.
    pub policies: Vec<String>,
    /// Detection trials, by key.
    pub trials: Vec<TrialOutcome>,
    /// Recovery episodes, by key.
    pub episodes: Vec<EpisodeOutcome>,
    /// Items a policy could only answer with infrastructure errors (absent from files
    /// written before the gate looked at them, and from runs without any).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub infra_errors: Vec<InfraError>,
    /// Whether the run put an external harness under test (its reference stage faults
    /// are conformance probes, measured as defect cells; absent for built-in runs).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub external: bool,
}

impl Snapshot {
    /// Reads a stored run.
    pub fn from_db(db: &ResultsDb) -> Result<Snapshot> {
        let Some(manifest) = db.manifest()? else {
            bail!("the database has no run manifest")
        };
        let mut verdicts: BTreeMap<String, BTreeMap<String, Verdict>> = BTreeMap::new();
        for v in db.verdicts()? {
            verdicts
                .entry(v.trial_key)
                .or_default()
                .insert(v.policy, v.verdict);
        }
        let trials: Vec<TrialOutcome> = db
            .trials()?
            .into_iter()
            .filter(|t| t.experiment == Phase::Detection)
            .map(|t| TrialOutcome {
                verdicts: verdicts.remove(&t.trial_key).unwrap_or_default(),
                task: t.task.name().to_string(),
                fault: t.fault.map(|f| f.id().to_string()),
                layout: t.layout_index,
                fired: match t.condition {
                    Condition::Faulty => Some(t.fired.unwrap_or(false)),
                    Condition::Working => None,
                },
                truth: t.truth_achieved,
                key: t.trial_key,
            })
            .collect();
        let episodes: Vec<EpisodeOutcome> = db
            .episodes()?
            .into_iter()
            .map(|e| EpisodeOutcome {
                task: e.task.name().to_string(),
                fault: e.fault.id().to_string(),
                policy: e.policy,
                agent: e.agent,
                layout: e.layout_index,
                fired: e.fired,
                success: e.success,
                key: e.episode_key,
            })
            .collect();
        let policies = run_policies(db)?;
        // Only the errors that were never followed by a judgement (a retry may succeed),
        // and only the run's policies' (not the harness's own failures).
        let judged: BTreeSet<(&str, &str)> = trials
            .iter()
            .flat_map(|t| t.verdicts.keys().map(|p| (t.key.as_str(), p.as_str())))
            .chain(episodes.iter().map(|e| (e.key.as_str(), e.policy.as_str())))
            .collect();
        let mut infra: BTreeMap<(String, String), InfraErrorKind> = BTreeMap::new();
        for e in db.infra_errors()? {
            if policies.contains(&e.policy)
                && !judged.contains(&(e.item_key.as_str(), e.policy.as_str()))
            {
                // Ordered by attempt: the last one's kind stays.
                infra.insert((e.item_key, e.policy), e.kind);
            }
        }
        let infra_errors = infra
            .into_iter()
            .map(|((key, policy), kind)| InfraError { key, policy, kind })
            .collect();
        Ok(Snapshot {
            format: BASELINE_FORMAT.into(),
            version: BASELINE_VERSION,
            identity: GateIdentity::of(&manifest),
            policies,
            trials,
            episodes,
            infra_errors,
            external: manifest
                .config_resolved
                .get("harness")
                .is_some_and(|h| !h.is_null()),
        })
    }

    /// Parses a baseline file's text; `name` prefixes every error.
    pub fn from_json(name: &str, text: &str) -> Result<Snapshot> {
        let v: serde_json::Value =
            serde_json::from_str(text).with_context(|| format!("{name}: not JSON"))?;
        match (v["format"].as_str(), v["version"].as_u64()) {
            (Some(BASELINE_FORMAT), Some(n)) if n == u64::from(BASELINE_VERSION) => {}
            (Some(BASELINE_FORMAT), n) => bail!(
                "{name}: baseline version {} (this faultline reads version {BASELINE_VERSION})",
                n.map_or("missing".to_string(), |n| n.to_string())
            ),
            _ => bail!("{name}: not a faultline baseline (no \"format\": \"{BASELINE_FORMAT}\")"),
        }
        let snapshot: Snapshot =
            serde_json::from_value(v).with_context(|| format!("{name}: malformed baseline"))?;
        for (what, keys) in [
            (
                "trial",
                snapshot
                    .trials
                    .iter()
                    .map(|t| t.key.as_str())
                    .collect::<Vec<_>>(),
            ),
            (
                "episode",
                snapshot.episodes.iter().map(|e| e.key.as_str()).collect(),
            ),
        ] {
            let mut seen = BTreeSet::new();
            if let Some(dup) = keys.into_iter().find(|k| !seen.insert(*k)) {
                bail!("{name}: {what} `{dup}` appears twice (a baseline holds each item once)");
            }
        }
        Ok(snapshot)
    }

    /// The baseline file's text: pretty JSON, one stable order, a final newline.
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("snapshots serialize");
        s.push('\n');
        s
    }
}

/// Reads a gate input: a run directory (its `results.sqlite`), a results database, or a
/// baseline file (`.json`). Every failure names the path.
pub fn load_input(path: &Path) -> Result<Snapshot> {
    let name = path.display().to_string();
    let db_path = if path.is_dir() {
        path.join("results.sqlite")
    } else {
        path.to_path_buf()
    };
    if !db_path.exists() {
        bail!("{name}: no such run directory, results database or baseline file");
    }
    let head = std::fs::read(&db_path)
        .with_context(|| format!("{name}: cannot read"))?
        .into_iter()
        .take(16)
        .collect::<Vec<u8>>();
    if head.starts_with(b"SQLite format 3") {
        let read = ResultsDb::open_read_only(&db_path).and_then(|db| Snapshot::from_db(&db));
        return read.map_err(|e| {
            let e = format!("{e:#}");
            match e.contains(&name) {
                true => anyhow!(e),
                false => anyhow!("{name}: {e}"),
            }
        });
    }
    let text = std::fs::read_to_string(&db_path)
        .with_context(|| format!("{name}: neither a results database nor a baseline file"))?;
    Snapshot::from_json(&name, &text)
}
