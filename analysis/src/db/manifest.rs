//! The run record: what a run was, written once when it starts, and the three rules that
//! say when two stored runs are "the same run".
//!
//! The manifest is [`Manifest`], stored as pretty JSON under `meta.manifest`. Its fields
//! are in alphabetical order because the stored text of earlier releases was a JSON map
//! with sorted keys: a typed record writes the very bytes the untyped one did, and every
//! manifest stored since reads back typed. Fields added after the first release are
//! optional, so older run directories still open.
//!
//! "The same run" means three different things, and each rule is written here, once:
//!
//! | rule | used by | includes | leaves out, and why |
//! |---|---|---|---|
//! | [`resume_identity`] | `--resume` | the whole resolved config: seed, layouts, tasks, policies, decisions, faults, timing (settle mode and its waits), viewport and image, recovery design and limits, model endpoint, plugins | how items are scheduled and kept alive (`jobs`, `liveness`, `isolation`), where the config and Chromium came from (`source`, `chromium`) and where model replies come from (`cassette`): none of them changes what an item measures, and a recorded run must resume from its cassette |
//! | [`Manifest::merge_mismatch`] | `faultline merge` | the resume identity of every shard, plus the build that ran it (`faultline_version`, `git_commit`), the Chromium it drove, the decisions' content hash, the root seed and the agents that said they were deterministic (they decide which episodes exist) | nothing: shards are one run cut in pieces, so everything that could make their rows differ must agree |
//! | [`GateIdentity`] | `faultline gate` | what makes items pair up: root seed, layouts, tasks, faults, the decisions' content, the recovery design without its policy list (and, with one run, without its deterministic agents: they then change no item) | policies (a candidate may add one; the gate's rules say which must be there), and everything a harness team changes on purpose: its build, its Chromium, its **timing**. The settle mode is carried and a difference is reported beside the Chromium version, but it does not make runs incomparable: a change of settle timing is exactly the kind of change a gate is there to judge |

use faultline_faults::Fault;
use faultline_tasks::TaskKind;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::str::FromStr;

/// What a run was: written once, before its first item, under `meta.manifest`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// The Chromium version the run drove (the browser's own `product` string).
    pub chromium_version: String,
    /// The config as the user passed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_as_passed: Option<ConfigAsPassed>,
    /// The resolved config, as the harness serializes it (the harness owns its type).
    #[serde(default)]
    pub config_resolved: Value,
    /// Where the decisions came from, in words (a path, `committed`, `recorded`, ...).
    pub decisions: String,
    /// The decisions' content hash (absent before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decisions_sha256: Option<String>,
    /// The faultline version that made the run.
    pub faultline_version: String,
    /// The detection experiment's faults.
    pub faults: Vec<Fault>,
    /// The git commit faultline was built from (`unknown` outside a checkout).
    pub git_commit: String,
    /// Layouts per task.
    pub layouts: u32,
    /// In a merged run: how many shards it was merged from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged_shards: Option<u32>,
    /// The detection experiment's policies, in report order.
    pub policies: Vec<String>,
    /// The recovery design (`null` when recovery was off).
    #[serde(default)]
    pub recovery: Option<RecoveryDesign>,
    /// The root seed every item's seed is derived from.
    pub root_seed: u64,
    /// The settle mode (`fixed` or `stable`; absent before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settle: Option<String>,
    /// In a shard's directory: which shard it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<Shard>,
    /// The tasks run.
    pub tasks: Vec<TaskKind>,
}

/// The config as passed: where it came from, its text and the command-line overrides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigAsPassed {
    /// `embedded:<name>` or the file's path.
    pub name: String,
    /// The overrides given on the command line (`--seed`, `--layouts`, ...), unset ones
    /// as `null`.
    pub overrides: Value,
    /// The config's TOML text.
    pub text: String,
}

/// The recovery experiment's design.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecoveryDesign {
    /// The agents, by registry name.
    pub agents: Vec<String>,
    /// Browser actions an agent may take after the replayed decision.
    pub budget: u32,
    /// The agents whose replies cannot differ between runs of the same item, as they said
    /// when the run started (empty in runs made before agents said so: every item then
    /// ran `runs` times).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deterministic: Vec<String>,
    /// The recovery experiment's faults.
    pub faults: Vec<Fault>,
    /// Layouts per task.
    pub layouts: u32,
    /// Steps in all, the replayed decision included.
    pub max_steps: u32,
    /// The policies whose messages agents are given.
    pub policies: Vec<String>,
    /// Repetitions of every (task, fault, policy, agent, layout) where something can
    /// differ between them (see [`RecoveryDesign::runs_for`]).
    pub runs: u32,
}

impl RecoveryDesign {
    /// Whether `agent` said its replies cannot differ between runs of the same item.
    pub fn is_deterministic(&self, agent: &str) -> bool {
        self.deterministic.iter().any(|a| a == agent)
    }

    /// How many runs each (task, policy, layout) of `agent` under `fault` gets: `runs`,
    /// unless nothing can differ between them — the agent is deterministic and the fault
    /// draws no parameter from the episode's seed (which differs per run) — when a repeat
    /// would replay the first run and one is enough.
    pub fn runs_for(&self, agent: &str, fault: Fault) -> u32 {
        if self.only_the_view_decides(agent, fault) {
            1
        } else {
            self.runs
        }
    }

    /// Whether `agent`'s episodes under `fault` are decided by what the agent is shown
    /// alone: the agent is deterministic and the fault draws no parameter from the
    /// episode's seed. Then a repeat replays the first run ([`Self::runs_for`]), and an
    /// item's episodes under different policies are one episode while the agent's
    /// replies agree (the recovery phase runs them on one page).
    pub fn only_the_view_decides(&self, agent: &str, fault: Fault) -> bool {
        self.is_deterministic(agent) && !fault.draws_parameters()
    }
}

/// Shard `index` of `count`, 1-based: which part of a run a directory holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// This shard's number, from 1.
    pub index: u32,
    /// How many shards the run is split into.
    pub count: u32,
}

impl FromStr for Shard {
    type Err = String;

    /// `I/N` with 1 <= I <= N.
    fn from_str(s: &str) -> Result<Shard, String> {
        let bad = || format!("expected I/N with 1 <= I <= N (e.g. 2/8), found `{s}`");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count) = (
            i.trim().parse::<u32>().map_err(|_| bad())?,
            n.trim().parse::<u32>().map_err(|_| bad())?,
        );
        if index == 0 || index > count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl Shard {
    /// The shard's directory under the run's `--out`.
    pub fn dir_name(&self) -> String {
        format!("shard-{}-of-{}", self.index, self.count)
    }
}

/// A field's value as JSON, whatever its type (for naming a mismatch).
mod erased {
    pub(super) trait Json {
        fn json(&self) -> serde_json::Value;
    }

    impl<T: serde::Serialize> Json for T {
        fn json(&self) -> serde_json::Value {
            serde_json::to_value(self).expect("manifest fields serialize")
        }
    }
}

/// The resolved config's keys that do not change what an item measures (see the module
/// docs): left out of [`resume_identity`].
pub const NOT_IN_RESUME_IDENTITY: [&str; 7] = [
    "jobs",
    "liveness",
    "isolation",
    // Transparent for every fault but those on the protocol, which need it on anyway.
    "devtools_proxy",
    "source",
    "chromium",
    "cassette",
];

/// What `--resume` must find unchanged: the resolved config (as the harness serializes
/// it) without [`NOT_IN_RESUME_IDENTITY`]. Stored as `meta.config_identity`.
pub fn resume_identity(config_resolved: &Value) -> Value {
    let mut v = config_resolved.clone();
    if let Some(o) = v.as_object_mut() {
        for key in NOT_IN_RESUME_IDENTITY {
            o.remove(key);
        }
    }
    v
}

impl Manifest {
    /// The first manifest field that differs between two shards of one run, with its value
    /// in `self` and in `other` as JSON, if any (their resume identities are compared
    /// apart, from `meta.config_identity`).
    pub fn merge_mismatch(&self, other: &Manifest) -> Option<(&'static str, Value, Value)> {
        let json = |v: &dyn erased::Json| v.json();
        let fields: [(&'static str, &dyn erased::Json, &dyn erased::Json); 5] = [
            (
                "faultline_version",
                &self.faultline_version,
                &other.faultline_version,
            ),
            ("git_commit", &self.git_commit, &other.git_commit),
            (
                "chromium_version",
                &self.chromium_version,
                &other.chromium_version,
            ),
            (
                "decisions_sha256",
                &self.decisions_sha256,
                &other.decisions_sha256,
            ),
            ("root_seed", &self.root_seed, &other.root_seed),
        ];
        fields
            .into_iter()
            .map(|(name, a, b)| (name, json(a), json(b)))
            .find(|(_, a, b)| a != b)
            .or_else(|| {
                // Which agents run once decides which episodes exist at all.
                let of = |m: &Manifest| json(&m.recovery.as_ref().map(|r| &r.deterministic));
                let (a, b) = (of(self), of(other));
                (a != b).then_some(("recovery.deterministic", a, b))
            })
    }

    /// The manifest of the run merged from shards whose first manifest is `self`: the
    /// same, without the shard and with the number of shards merged.
    pub fn merged(&self) -> Manifest {
        Manifest {
            shard: None,
            merged_shards: self.shard.map(|s| s.count),
            ..self.clone()
        }
    }
}

/// What makes two runs comparable item by item for `faultline gate` (see the module
/// docs), as a baseline file stores it. The JSON fields are those of baseline format 1,
/// so older baseline files still read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateIdentity {
    /// The run's root seed (`root_seed`).
    pub root_seed: Value,
    /// The number of layouts per task (`layouts`).
    pub layouts: Value,
    /// The tasks run (`tasks`).
    pub tasks: Value,
    /// The fault selection (`faults`).
    pub faults: Value,
    /// The decisions' content hash when the manifest has one, else their description.
    pub decisions: Value,
    /// The recovery design without its policy list (policies may differ between runs).
    pub recovery: Value,
    /// The Chromium version the run used (a difference is only reported).
    pub chromium_version: Option<String>,
    /// The git commit faultline was built from, when known.
    pub git_commit: Option<String>,
    /// The faultline version that made the run.
    pub faultline_version: Option<String>,
    /// The settle mode (a difference is only reported; absent in older baselines).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settle: Option<String>,
}

impl GateIdentity {
    /// The gate's identity of a run, from its manifest.
    pub fn of(m: &Manifest) -> GateIdentity {
        let recovery = match &m.recovery {
            None => Value::Null,
            Some(r) => {
                let mut v = serde_json::to_value(r).expect("the recovery design serializes");
                if let Some(o) = v.as_object_mut() {
                    o.remove("policies");
                    // With one run an agent's determinism plans no other items.
                    if r.runs == 1 {
                        o.remove("deterministic");
                    }
                }
                v
            }
        };
        let decisions = match &m.decisions_sha256 {
            Some(hash) => Value::String(hash.clone()),
            None => Value::String(m.decisions.clone()),
        };
        GateIdentity {
            root_seed: m.root_seed.into(),
            layouts: m.layouts.into(),
            tasks: serde_json::to_value(&m.tasks).expect("task names serialize"),
            faults: serde_json::to_value(&m.faults).expect("fault ids serialize"),
            decisions,
            recovery,
            chromium_version: Some(m.chromium_version.clone()),
            git_commit: Some(m.git_commit.clone()),
            faultline_version: Some(m.faultline_version.clone()),
            settle: m.settle.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::ResultsDb;

    /// A manifest with every field set.
    pub(crate) fn full() -> Manifest {
        Manifest {
            chromium_version: "HeadlessChrome/156.0.0.0".into(),
            config_as_passed: Some(ConfigAsPassed {
                name: "embedded:default".into(),
                overrides: serde_json::json!({ "seed": 11, "layouts": null }),
                text: "seed = 7\n".into(),
            }),
            config_resolved: serde_json::json!({ "seed": 11, "jobs": 4, "timing": { "settle_ms": 120 } }),
            decisions: "committed".into(),
            decisions_sha256: Some("ab12".into()),
            faultline_version: "0.1.0".into(),
            faults: vec![Fault::UnscaledCoordinates, Fault::IframeNoChange],
            git_commit: "e105235".into(),
            layouts: 10,
            merged_shards: Some(3),
            policies: vec!["unverified".into(), "outcome".into()],
            recovery: Some(RecoveryDesign {
                agents: vec!["trusting".into()],
                budget: 3,
                deterministic: vec!["trusting".into()],
                faults: vec![Fault::UnscaledCoordinates],
                layouts: 5,
                max_steps: 8,
                policies: vec!["outcome".into()],
                runs: 2,
            }),
            root_seed: u64::MAX,
            settle: Some("stable".into()),
            shard: Some(Shard { index: 2, count: 3 }),
            tasks: vec![TaskKind::Grid, TaskKind::Frame],
        }
    }

    #[test]
    fn every_manifest_field_is_written_and_read_back_typed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.sqlite");
        let db = ResultsDb::open(&path).unwrap();
        assert_eq!(db.manifest().unwrap(), None);
        db.set_manifest(&full()).unwrap();
        drop(db);
        let db = ResultsDb::open_read_only(&path).unwrap();
        assert_eq!(db.manifest().unwrap(), Some(full()));
        // Every field is in the stored text, under its own name.
        let stored: Value = serde_json::from_str(&db.meta("manifest").unwrap().unwrap()).unwrap();
        let keys: Vec<&str> = stored
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "chromium_version",
                "config_as_passed",
                "config_resolved",
                "decisions",
                "decisions_sha256",
                "faultline_version",
                "faults",
                "git_commit",
                "layouts",
                "merged_shards",
                "policies",
                "recovery",
                "root_seed",
                "settle",
                "shard",
                "tasks",
            ]
        );
    }

    #[test]
    fn the_typed_manifest_writes_the_bytes_the_untyped_one_did() {
        // Stored text of an unsharded run before the manifest was typed: a JSON map with
        // sorted keys, no `shard`.
        let mut m = full();
        m.shard = None;
        m.merged_shards = None;
        let untyped = serde_json::to_value(&m).unwrap();
        assert_eq!(
            serde_json::to_string_pretty(&m).unwrap(),
            serde_json::to_string_pretty(&untyped).unwrap()
        );
    }

    #[test]
    fn a_manifest_of_an_older_release_reads_without_its_later_fields() {
        let old = r#"{"chromium_version": "HeadlessChrome/150", "decisions": "committed",
            "faultline_version": "0.1.0", "faults": ["execute.unscaled_coordinates"],
            "git_commit": "unknown", "layouts": 4, "policies": ["generic"],
            "root_seed": 7, "tasks": ["grid"]}"#;
        let m: Manifest = serde_json::from_str(old).unwrap();
        assert_eq!(
            (&m.settle, &m.decisions_sha256, &m.recovery),
            (&None, &None, &None)
        );
        assert_eq!(
            GateIdentity::of(&m).decisions,
            Value::String("committed".into())
        );
    }

    #[test]
    fn resume_identity_leaves_out_only_how_items_are_scheduled_and_sourced() {
        let config = serde_json::json!({
            "seed": 1, "jobs": 4, "liveness": {}, "isolation": "reuse", "source": "x",
            "chromium": "/usr/bin/c", "cassette": {}, "timing": { "settle_ms": 1 }
        });
        assert_eq!(
            resume_identity(&config),
            serde_json::json!({ "seed": 1, "timing": { "settle_ms": 1 } })
        );
    }

    #[test]
    fn merge_names_the_first_field_two_shards_disagree_on() {
        let a = full();
        assert_eq!(a.merge_mismatch(&a.clone()), None);
        let mut b = full();
        b.chromium_version = "HeadlessChrome/157".into();
        assert_eq!(
            a.merge_mismatch(&b),
            Some((
                "chromium_version",
                Value::from("HeadlessChrome/156.0.0.0"),
                Value::from("HeadlessChrome/157")
            ))
        );
        b.git_commit = "other".into();
        assert_eq!(a.merge_mismatch(&b).map(|m| m.0), Some("git_commit"));
        let mut c = full();
        c.recovery.as_mut().unwrap().deterministic.clear();
        assert_eq!(
            a.merge_mismatch(&c).map(|m| m.0),
            Some("recovery.deterministic")
        );
        let merged = a.merged();
        assert_eq!((merged.shard, merged.merged_shards), (None, Some(3)));
    }

    #[test]
    fn the_gate_identity_reports_settle_but_leaves_out_recovery_policies() {
        let id = GateIdentity::of(&full());
        assert_eq!(id.settle.as_deref(), Some("stable"));
        assert_eq!(id.recovery.get("policies"), None);
        assert_eq!(id.recovery["budget"], 3);
        assert_eq!(id.decisions, Value::String("ab12".into()));
        // Deterministic agents plan fewer runs, so they count with more than one run...
        assert_eq!(
            id.recovery["deterministic"],
            serde_json::json!(["trusting"])
        );
        // ...and with one they change nothing: a baseline from before they were stored
        // still pairs up.
        let mut one = full();
        one.recovery.as_mut().unwrap().runs = 1;
        let mut older = one.clone();
        older.recovery.as_mut().unwrap().deterministic.clear();
        assert_eq!(
            GateIdentity::of(&one).recovery,
            GateIdentity::of(&older).recovery
        );
    }
}
