//! The run's plan: every item the config fixes, before anything runs — the detection
//! phase's trials ([`specs`]), the recovery phase's episodes ([`episodes`]) — and the
//! part of them a shard keeps (`keep_shard`). Every item has a stable key; the phases
//! run the ones not yet stored.

use super::{shard, RunRequest};
use crate::agent::Agent;
use anyhow::Result;
use faultline_analysis::db::manifest::{Manifest, RecoveryDesign};
use faultline_faults::Fault;
use faultline_tasks::seed::derive;
use faultline_tasks::{Decision, DecisionSet};
use std::sync::Arc;

/// A trial to run: faulty when it has a fault, working when not.
#[derive(Clone)]
pub struct TrialSpec {
    pub(super) key: String,
    pub(super) decision: Arc<Decision>,
    pub(super) fault: Option<Fault>,
    pub(super) trial_seed: u64,
}

impl TrialSpec {
    /// `detection/<task>/<layout>/<fault id|working>`.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The task the replayed decision was recorded for.
    pub fn task(&self) -> faultline_tasks::TaskKind {
        self.decision.task
    }

    /// The key as the owned string it is stored as.
    pub fn key_string(&self) -> &String {
        &self.key
    }

    /// The recorded decision the trial replays.
    pub fn decision(&self) -> &Decision {
        &self.decision
    }

    /// The trial's fault; `None` for the working trial.
    pub fn fault(&self) -> Option<Fault> {
        self.fault
    }

    /// The trial's own seed (the fault's parameters are drawn from it).
    pub fn trial_seed(&self) -> u64 {
        self.trial_seed
    }

    /// The page this trial may share with others, named for its decision: the working
    /// trial's and a trial whose fault rides on it ([`Fault::rides_on_working_page`],
    /// [`working_page_groups`]). `None` when it needs a page of its own.
    pub(super) fn shared_page(&self) -> Option<String> {
        self.fault
            .is_none_or(Fault::rides_on_working_page)
            .then(|| {
                format!(
                    "page:detection/{}/{:03}",
                    self.decision.task, self.decision.layout_index
                )
            })
    }

    /// The recorded decision of an episode, replayed with its fault at step 0 under the
    /// episode's key and seed: what an external harness is handed first for an episode.
    pub(crate) fn episode_start(
        key: &str,
        decision: Arc<Decision>,
        fault: Fault,
        seed: u64,
    ) -> TrialSpec {
        TrialSpec {
            key: key.to_string(),
            decision,
            fault: Some(fault),
            trial_seed: seed,
        }
    }
}

/// Every trial of the detection phase, in a fixed order: per task, per layout, each of the
/// task's faults and then the working trial.
pub fn specs(config: &crate::config::ExperimentConfig, decisions: &DecisionSet) -> Vec<TrialSpec> {
    let pairs = config.detection_pairs();
    let mut specs = Vec::new();
    for task in &config.tasks {
        let faults: Vec<Fault> = pairs
            .iter()
            .filter(|(t, _)| t == task)
            .map(|(_, f)| *f)
            .collect();
        if faults.is_empty() {
            continue;
        }
        for index in 0..config.layouts {
            // Only a decision file can lack layouts (see `preload_decisions`).
            let Some(decision) = decisions.find(*task, config.seed, index) else {
                continue;
            };
            let decision = Arc::new(decision.clone());
            let mut conditions: Vec<Option<Fault>> = faults.iter().copied().map(Some).collect();
            conditions.push(None);
            for fault in conditions {
                let key = format!(
                    "detection/{task}/{index:03}/{}",
                    fault.map_or("working", Fault::id)
                );
                specs.push(TrialSpec {
                    trial_seed: derive(config.seed, &["trial", &key]),
                    key,
                    decision: decision.clone(),
                    fault,
                });
            }
        }
    }
    specs
}

/// An episode to run.
pub struct EpisodeTask {
    pub(super) key: String,
    pub(super) decision: Arc<Decision>,
    pub(super) fault: Fault,
    pub(super) policy: String,
    pub(super) agent: Arc<dyn Agent>,
    pub(super) run: u32,
    pub(super) seed: u64,
    /// Whether the episode may share a page with the other policies' and agents'
    /// episodes of the same item (see [`page_groups`]).
    pub(super) shares_page: bool,
}

impl EpisodeTask {
    /// `recovery/<task>/<fault>/<policy>/<agent>/r<run>/<layout>`.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The task the replayed decision was recorded for.
    pub fn task(&self) -> faultline_tasks::TaskKind {
        self.decision.task
    }

    /// The key as the owned string it is stored as.
    pub fn key_string(&self) -> &String {
        &self.key
    }

    /// The recorded decision replayed at step 0.
    pub fn decision(&self) -> &Arc<Decision> {
        &self.decision
    }

    /// The fault armed for the whole episode.
    pub fn fault(&self) -> Fault {
        self.fault
    }

    /// The repetition, from 0.
    pub fn run(&self) -> u32 {
        self.run
    }

    /// The episode's seed (derived from the root seed and the key).
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The page this episode may share with the other policies' and agents' episodes of
    /// the same item ([`page_groups`]); `None` when it needs a page of its own.
    pub(super) fn shared_page(&self) -> Option<String> {
        self.shares_page.then(|| {
            format!(
                "page:recovery/{}/{}/r{}/{:03}",
                self.decision.task,
                self.fault.id(),
                self.run,
                self.decision.layout_index
            )
        })
    }
}

/// The recovery design a run plans its episodes by: the config's, with the agents that
/// say their replies cannot differ between runs. A resumed run keeps the design it
/// stored, so its items keep their keys whatever an agent says now.
pub async fn recovery_design(
    config: &crate::config::ExperimentConfig,
    agents: &[Arc<dyn Agent>],
    stored: Option<&Manifest>,
) -> Result<RecoveryDesign> {
    if let Some(m) = stored {
        return Ok(m
            .recovery
            .clone()
            .unwrap_or_else(|| design(config, Vec::new())));
    }
    let mut deterministic = Vec::new();
    for agent in agents {
        // An `exec` agent asks its process, which blocks.
        let asked = agent.clone();
        if tokio::task::spawn_blocking(move || asked.deterministic()).await? {
            deterministic.push(agent.name().to_string());
        }
    }
    Ok(design(config, deterministic))
}

/// The config's recovery design with `deterministic` as the agents that said so.
pub fn design(
    config: &crate::config::ExperimentConfig,
    deterministic: Vec<String>,
) -> RecoveryDesign {
    let rc = &config.recovery;
    RecoveryDesign {
        agents: rc.agents.clone(),
        budget: rc.limits.budget,
        deterministic,
        faults: rc.faults.clone(),
        layouts: rc.layouts,
        max_steps: rc.limits.max_steps,
        policies: rc.policies.clone(),
        runs: rc.runs,
    }
}

/// Every episode of the recovery phase, in a fixed order.
pub fn episodes(
    config: &crate::config::ExperimentConfig,
    decisions: &DecisionSet,
    agents: &[Arc<dyn Agent>],
    design: &RecoveryDesign,
) -> Vec<EpisodeTask> {
    let rc = &config.recovery;
    // Fixed before any agent call: for every agent, the first `layouts` layouts of every
    // task, every (task, fault) pair, every policy, every run that can differ from the
    // first (a run keeps its key whether or not the others are run).
    let mut tasks = Vec::new();
    for agent in agents {
        for (task, fault) in config.recovery_pairs() {
            for policy in &rc.policies {
                for run in 0..design.runs_for(agent.name(), fault) {
                    for index in 0..rc.layouts {
                        let Some(decision) = decisions.find(task, config.seed, index) else {
                            continue;
                        };
                        let key = format!(
                            "recovery/{task}/{}/{policy}/{}/r{run}/{index:03}",
                            fault.id(),
                            agent.name()
                        );
                        tasks.push(EpisodeTask {
                            seed: derive(config.seed, &["episode", &key]),
                            shares_page: design.only_the_view_decides(agent.name(), fault),
                            key,
                            decision: Arc::new(decision.clone()),
                            fault,
                            policy: policy.clone(),
                            agent: agent.clone(),
                            run,
                        });
                    }
                }
            }
        }
    }
    tasks
}

/// The trials grouped by page: a decision's working trial and its faulty trials whose
/// fault rides on it ([`Fault::rides_on_working_page`]: only the tool's message, or only
/// when the observation is captured, can differ between them) share one
/// ([`crate::engine::trial::run_trials`]); any other trial is a group of its own. The
/// lead is the working trial when it is among `trials`, else a trial that acts on the
/// page as the working trial does (a feedback fault): a trial whose fault acts on the
/// capture's timing never leads another, and a page captures early for one such trial
/// at most. Groups keep their first trial's order. Only pending trials are grouped, so a
/// resumed run runs whatever part of a group it still owes (a shard gets whole groups:
/// [`shard_of_items`]).
pub(super) fn working_page_groups(trials: Vec<TrialSpec>) -> Vec<Vec<TrialSpec>> {
    let early = |t: &TrialSpec| t.fault.is_some_and(Fault::acts_only_on_capture_timing);
    let mut groups: Vec<Vec<TrialSpec>> = Vec::new();
    let mut at: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for t in trials {
        let Some(page) = t.shared_page() else {
            groups.push(vec![t]);
            continue;
        };
        match at.get(&page) {
            Some(&g) if early(&t) && groups[g].iter().any(early) => groups.push(vec![t]),
            Some(&g) if t.fault.is_none() || early(&groups[g][0]) => groups[g].insert(0, t),
            Some(&g) => groups[g].push(t),
            None => {
                at.insert(page, groups.len());
                groups.push(vec![t]);
            }
        }
    }
    groups
}

/// The episodes grouped by item: those of one (decision, fault, run) under the different
/// policies and agents, in their first episode's order (each group in planning order).
/// Only episodes that may share a page are grouped
/// ([`crate::engine::episode::run_together`] says when that holds: here, a deterministic
/// agent under a fault that draws nothing from the seed); any other episode is a group
/// of its own.
pub(super) fn page_groups(episodes: Vec<EpisodeTask>) -> Vec<Vec<EpisodeTask>> {
    let mut groups: Vec<Vec<EpisodeTask>> = Vec::new();
    let mut at: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for e in episodes {
        let Some(page) = e.shared_page() else {
            groups.push(vec![e]);
            continue;
        };
        match at.get(&page) {
            Some(&g) => groups[g].push(e),
            None => {
                at.insert(page, groups.len());
                groups.push(vec![e]);
            }
        }
    }
    groups
}

/// The shard (0-based) of every item, by [`shard::assign`] over units: the items that may
/// share a page ([`TrialSpec::shared_page`], [`EpisodeTask::shared_page`]) form one unit,
/// costing what its items cost, so a shard shares pages as an unsharded run does; any
/// other item is a unit of its own.
fn shard_of_items(
    specs: &[TrialSpec],
    episodes: &[EpisodeTask],
    count: u32,
    budget: u32,
) -> std::collections::HashMap<String, u32> {
    let items: Vec<(&str, String, u64)> = specs
        .iter()
        .map(|t| {
            (
                t.key(),
                t.shared_page(),
                shard::cost(t.key(), t.task(), budget),
            )
        })
        .chain(episodes.iter().map(|e| {
            (
                e.key(),
                e.shared_page(),
                shard::cost(e.key(), e.task(), budget),
            )
        }))
        .map(|(key, page, cost)| (key, page.unwrap_or_else(|| key.to_string()), cost))
        .collect();
    let mut units: std::collections::BTreeMap<String, u64> = Default::default();
    for (_, unit, cost) in &items {
        *units.entry(unit.clone()).or_default() += cost;
    }
    let units: Vec<(String, u64)> = units.into_iter().collect();
    let assignment = shard::assign(&units, count);
    items
        .into_iter()
        .map(|(key, unit, _)| (key.to_string(), assignment[&unit]))
        .collect()
}

/// Keeps the items of the request's shard (all of them when unsharded); for a shard, the
/// keys it owns (JSON) and the run's item count, to store with it.
pub(crate) fn keep_shard(
    req: &RunRequest,
    specs: &mut Vec<TrialSpec>,
    episodes: &mut Vec<EpisodeTask>,
) -> Result<Option<(String, usize)>> {
    let config = &req.config;
    Ok(match req.shard {
        None => None,
        Some(s) => {
            let of = shard_of_items(specs, episodes, s.count, config.recovery.limits.budget);
            let mine = |key: &str| of[key] + 1 == s.index;
            specs.retain(|t| mine(t.key()));
            episodes.retain(|e| mine(e.key()));
            let keys: std::collections::BTreeSet<&str> = specs
                .iter()
                .map(|t| t.key())
                .chain(episodes.iter().map(|e| e.key()))
                .collect();
            Some((serde_json::to_string(&keys)?, of.len()))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::trusting::TrustingAgent;
    use crate::agent::{AgentError, AgentReply, AgentView};
    use faultline_tasks::TaskKind;
    use futures::future::BoxFuture;
    use std::collections::BTreeSet;

    /// An agent that cannot vouch for itself (the trait's default).
    struct Unsure;

    impl Agent for Unsure {
        fn name(&self) -> &str {
            "unsure"
        }

        fn reply<'a>(&'a self, _: AgentView<'a>) -> BoxFuture<'a, Result<AgentReply, AgentError>> {
            Box::pin(async { Ok(AgentReply::text("stop()")) })
        }
    }

    /// The default config on the grid, two layouts, `runs = 3`, with the grid's reference
    /// fault (it draws nothing from the seed) and `layout.target_shift` (it does).
    fn config() -> crate::config::ExperimentConfig {
        let text = crate::config::load_text(None).unwrap();
        let mut c = crate::config::resolve(&text, &crate::config::Overrides::default()).unwrap();
        c.tasks = vec![TaskKind::Grid];
        c.recovery.layouts = 2;
        c.recovery.runs = 3;
        c.recovery.faults = vec![
            Fault::reference_for(TaskKind::Grid).unwrap(),
            Fault::TargetShift,
        ];
        c
    }

    #[tokio::test]
    async fn a_deterministic_agent_runs_once_only_where_nothing_else_differs_and_keeps_its_keys() {
        let c = config();
        let decisions = faultline_tasks::decision::embedded_default().unwrap();
        let agents: Vec<Arc<dyn Agent>> = vec![Arc::new(TrustingAgent), Arc::new(Unsure)];
        let asked = recovery_design(&c, &agents, None).await.unwrap();
        assert_eq!(asked.deterministic, ["trusting"]);
        let planned = episodes(&c, &decisions, &agents, &asked);
        let count = |agent: &str, fault: Fault| {
            planned
                .iter()
                .filter(|e| e.agent.name() == agent && e.fault == fault)
                .count()
        };
        let (reference, shift) = (c.recovery.faults[0], Fault::TargetShift);
        let per_run = 2 * c.recovery.policies.len();
        assert_eq!(count("trusting", reference), per_run);
        assert!(planned
            .iter()
            .filter(|e| e.agent.name() == "trusting" && e.fault == reference)
            .all(|e| e.run == 0 && e.key.contains("/r0/")));
        assert_eq!(count("trusting", shift), 3 * per_run);
        assert_eq!(count("unsure", reference), 3 * per_run);
        assert_eq!(count("unsure", shift), 3 * per_run);
        // The episodes kept are those every run would have had, under the same keys.
        let all = episodes(&c, &decisions, &agents, &design(&c, Vec::new()));
        let all: BTreeSet<&str> = all.iter().map(|e| e.key()).collect();
        assert!(planned.iter().all(|e| all.contains(e.key())));

        // A resumed run plans by the design it stored, whatever its agents say now.
        let stored = Manifest {
            chromium_version: "HeadlessChrome".into(),
            config_as_passed: None,
            config_resolved: serde_json::Value::Null,
            decisions: "committed".into(),
            decisions_sha256: None,
            faultline_version: "0.1.0".into(),
            faults: c.faults.clone(),
            git_commit: "unknown".into(),
            layouts: c.layouts,
            merged_shards: None,
            policies: c.policies.clone(),
            recovery: Some(design(&c, vec!["unsure".into()])),
            root_seed: c.seed,
            settle: None,
            shard: None,
            tasks: c.tasks.clone(),
        };
        let resumed = recovery_design(&c, &agents, Some(&stored)).await.unwrap();
        assert_eq!(resumed.deterministic, ["unsure"]);
    }

    /// Regression: a shard used to split page groups (each item went its own way), so a
    /// sharded run needed more pages than an unsharded one. Every group of either phase
    /// now lands whole in one shard, every item in exactly one, and the shards' loads
    /// differ by at most the dearest unit's cost (greedy balancing's bound).
    #[tokio::test]
    async fn a_shard_keeps_every_page_group_whole_and_the_shards_balanced() {
        let mut c = config();
        c.tasks = vec![TaskKind::Grid, TaskKind::Frame, TaskKind::Chart];
        c.layouts = 4;
        c.recovery.faults = vec![Fault::reference_for(TaskKind::Grid).unwrap()];
        let decisions = faultline_tasks::decision::embedded_default().unwrap();
        let agents: Vec<Arc<dyn Agent>> = vec![Arc::new(TrustingAgent), Arc::new(Unsure)];
        let asked = recovery_design(&c, &agents, None).await.unwrap();
        let trials = specs(&c, &decisions);
        let planned = episodes(&c, &decisions, &agents, &asked);
        let budget = c.recovery.limits.budget;
        for count in [2, 3, 5] {
            let of = shard_of_items(&trials, &planned, count, budget);
            assert_eq!(of.len(), trials.len() + planned.len(), "every item once");
            let shards =
                |keys: Vec<&str>| -> BTreeSet<u32> { keys.iter().map(|k| of[*k]).collect() };
            let detection = working_page_groups(trials.clone());
            let recovery = page_groups(episodes(&c, &decisions, &agents, &asked));
            assert!(detection.iter().any(|g| g.len() > 1) && recovery.iter().any(|g| g.len() > 1));
            for g in &detection {
                assert_eq!(
                    shards(g.iter().map(|t| t.key()).collect()).len(),
                    1,
                    "{}",
                    g[0].key
                );
            }
            for g in &recovery {
                assert_eq!(
                    shards(g.iter().map(|e| e.key()).collect()).len(),
                    1,
                    "{}",
                    g[0].key
                );
            }
            let mut load = vec![0u64; count as usize];
            let mut dearest = 0;
            // Each group as (its first key, what its items cost).
            let trial_groups = detection.iter().map(|g| {
                let items = g.iter().map(|t| (t.key(), t.task()));
                (g[0].key(), items.collect::<Vec<_>>())
            });
            let episode_groups = recovery.iter().map(|g| {
                let items = g.iter().map(|e| (e.key(), e.task()));
                (g[0].key(), items.collect::<Vec<_>>())
            });
            for (first, items) in trial_groups.chain(episode_groups) {
                let cost: u64 = items.iter().map(|(k, t)| shard::cost(k, *t, budget)).sum();
                load[of[first] as usize] += cost;
                dearest = dearest.max(cost);
            }
            let (most, least) = (load.iter().max().unwrap(), load.iter().min().unwrap());
            assert!(
                most - least <= dearest,
                "{count} shards: {load:?}, dearest unit {dearest}"
            );
        }
    }

    /// Grid, frame and chart with every fault of theirs: the pages the detection phase
    /// needs are one per trial, but one per decision for the working trial and the
    /// trials whose fault rides on it (on the feedback, on the capture's timing); a
    /// resumed run groups only what it still owes, never led by a capture-timing trial.
    #[test]
    fn trials_share_a_page_only_with_their_decisions_working_trial_and_riding_faults() {
        let mut c = config();
        c.tasks = vec![TaskKind::Grid, TaskKind::Frame, TaskKind::Chart];
        c.layouts = 3;
        c.faults = Fault::ALL
            .iter()
            .copied()
            .filter(|f| !f.on_the_protocol())
            .collect();
        let decisions = faultline_tasks::decision::embedded_default().unwrap();
        let all = specs(&c, &decisions);
        let keys = |groups: &[Vec<TrialSpec>]| -> Vec<String> {
            let mut k: Vec<String> = groups.iter().flatten().map(|t| t.key.clone()).collect();
            k.sort();
            k
        };
        let groups = working_page_groups(specs(&c, &decisions));
        let mut every: Vec<String> = all.iter().map(|t| t.key.clone()).collect();
        every.sort();
        assert_eq!(keys(&groups), every, "every trial once");
        let shared: Vec<&Vec<TrialSpec>> = groups.iter().filter(|g| g.len() > 1).collect();
        // Per layout: the grid's working trial with wrong_feedback, the frame's with
        // iframe_no_change, the chart's with capture_before_tooltip.
        assert_eq!(shared.len(), 3 * 3);
        let mut riders = std::collections::BTreeSet::new();
        for g in &shared {
            assert_eq!(g.len(), 2);
            assert!(
                g[0].fault.is_none(),
                "the working trial leads: {}",
                g[1].key
            );
            let rider = g[1].fault.unwrap();
            assert!(rider.rides_on_working_page());
            riders.insert((g[1].decision.task, rider));
            assert_eq!(
                (g[0].decision.task, g[0].decision.layout_index),
                (g[1].decision.task, g[1].decision.layout_index)
            );
        }
        assert_eq!(
            riders.into_iter().collect::<Vec<_>>(),
            vec![
                (TaskKind::Grid, Fault::WrongFeedback),
                (TaskKind::Frame, Fault::IframeNoChange),
                (TaskKind::Chart, Fault::CaptureBeforeTooltip),
            ]
        );
        assert_eq!(groups.len(), all.len() - 9);
        // Resumed with the working trials stored: the riding trials run alone.
        let owed: Vec<TrialSpec> = specs(&c, &decisions)
            .into_iter()
            .filter(|t| t.fault.is_some())
            .collect();
        let n = owed.len();
        let groups = working_page_groups(owed);
        assert_eq!(groups.len(), n);
        assert!(groups.iter().all(|g| g.len() == 1));
    }

    /// A page captures early for one rider at most, and such a rider never leads: with
    /// the working trial already stored, a feedback trial of the same decision leads the
    /// capture-timing one (an invented decision that both faults apply to).
    #[test]
    fn a_capture_timing_trial_never_leads_and_one_page_captures_early_once() {
        let mut c = config();
        c.tasks = vec![TaskKind::Chart];
        let decisions = faultline_tasks::decision::embedded_default().unwrap();
        let working = specs(&c, &decisions)
            .into_iter()
            .find(|t| t.fault.is_none() && t.decision.task == TaskKind::Chart)
            .unwrap();
        let with = |fault: Fault, tag: &str| TrialSpec {
            fault: Some(fault),
            key: format!("{}/{tag}", working.key),
            ..working.clone()
        };
        let owed = vec![
            with(Fault::CaptureBeforeTooltip, "early"),
            with(Fault::CaptureBeforeTooltip, "early-again"),
            with(Fault::WrongFeedback, "feedback"),
        ];
        let groups = working_page_groups(owed.clone());
        let led: Vec<Vec<&str>> = groups
            .iter()
            .map(|g| {
                g.iter()
                    .map(|t| t.key.rsplit('/').next().unwrap())
                    .collect()
            })
            .collect();
        assert_eq!(led, vec![vec!["feedback", "early"], vec!["early-again"]]);
        let mut all = owed;
        all.push(working);
        let groups = working_page_groups(all);
        assert!(groups[0][0].fault.is_none(), "the working trial leads");
        assert_eq!(groups[0].len(), 3);
    }
}
