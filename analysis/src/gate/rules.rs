//! The gate's rules: margins per metric, the paired test that confirms a change, and
//! optional absolute bounds. Read from TOML; every field has a default, so an empty file
//! (or none) is the default rules:
//!
//! ```toml
//! level = 0.95              # confidence level of the paired test
//! significance = "mcnemar"  # mcnemar | bootstrap | none
//! resamples = 2000          # bootstrap resamples for the intervals
//! allow_missing = []        # baseline cells the candidate may lack (see below)
//!
//! [detection]               # caught / fired per (fault, task, policy): may not drop
//! margin = 0.05
//! [false_alarms]            # alarms / confirmed working trials per (task, policy): may not rise
//! margin = 0.05
//! [recovery]                # recovered / fired episodes per (task, fault, policy, agent): may not drop
//! margin = 0.05
//! [defects]                 # an external harness's probe trials showing the defect: may not rise
//! margin = 0.05
//!
//! [[floor]]                 # optional: an absolute bound on the candidate's pooled rate
//! metric = "detection"
//! policy = "outcome"        # optional filters: policy, task, fault, agent
//! min = 0.95                # and/or max = ...
//! ```
//!
//! The gate fails closed. A cell of the baseline that the candidate lacks (a policy it did
//! not run, items it could only answer with infrastructure errors, a fault that no longer
//! fires) fails the gate unless `allow_missing` names it: each entry is a policy name (all
//! its cells) or one cell's name as the report prints it (`fault / task / policy` for
//! detection, `task / policy` for false alarms, `fault / task / policy / agent` for
//! recovery). A floor with no candidate item is not met. And every rule must select
//! something: a floor or an `allow_missing` entry that matches no cell of either run is a
//! bad rules file, refused before anything is judged.

use crate::stats::Level;
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

faultline_tasks::named_enum! {
    /// What a cell measures.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum Metric: "metric" {
        /// Caught / fired faulty trials per (fault, task, policy); higher is better.
        Detection = "detection",
        /// Alarms / ledger-confirmed working trials per (task, policy); lower is better.
        FalseAlarms = "false_alarms",
        /// Recovered / fired episodes per (task, fault, policy, agent); higher is better.
        Recovery = "recovery",
        /// An external harness under test: probe trials where it showed the probe's defect
        /// / probe trials, per (fault, task, harness); lower is better.
        Defects = "defects",
    }
}

impl Metric {
    /// Detection and recovery should go up; false alarms down.
    pub fn higher_is_better(self) -> bool {
        !matches!(self, Metric::FalseAlarms | Metric::Defects)
    }
}

faultline_tasks::named_enum! {
    /// Which paired test confirms a change beyond the margin.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum Significance: "significance test" {
        /// McNemar's exact test on the discordant items: p < 1 - level.
        Mcnemar = "mcnemar",
        /// The interval of the difference (the layout-cluster bootstrap's, or Tango's score
        /// interval when the bootstrap is degenerate) excludes zero on the bad (or good)
        /// side.
        Bootstrap = "bootstrap",
        /// The margin alone decides (for smoke runs too small for any test).
        None = "none",
    }
}

/// The rule for one metric.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MetricRule {
    /// The largest change in the bad direction (a fraction, 0.05 = 5 points) that is not
    /// a regression.
    pub margin: f64,
}

impl Default for MetricRule {
    fn default() -> Self {
        MetricRule { margin: 0.05 }
    }
}

/// An absolute bound on the candidate's rate, pooled over the matching items.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Floor {
    /// The metric whose pooled rate is bounded.
    pub metric: Metric,
    /// Only cells of this policy (all policies when `None`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    /// Only cells of this task (all tasks when `None`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// Only cells of this fault id (all faults when `None`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<String>,
    /// Only cells of this agent (recovery only; all agents when `None`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The smallest acceptable rate, in [0, 1].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    /// The largest acceptable rate, in [0, 1].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
}

impl Floor {
    /// Whether the cell (fault, task, policy, agent) is one the bound pools.
    pub(crate) fn selects(
        &self,
        fault: Option<&str>,
        task: &str,
        policy: &str,
        agent: Option<&str>,
    ) -> bool {
        self.policy.as_deref().is_none_or(|p| p == policy)
            && self.task.as_deref().is_none_or(|t| t == task)
            && self.fault.as_deref().is_none_or(|f| Some(f) == fault)
            && self.agent.as_deref().is_none_or(|a| Some(a) == agent)
    }

    /// `detection policy=outcome >= 0.95`.
    pub fn describe(&self) -> String {
        let mut s = self.metric.name().to_string();
        for (k, v) in [
            ("policy", &self.policy),
            ("task", &self.task),
            ("fault", &self.fault),
            ("agent", &self.agent),
        ] {
            if let Some(v) = v {
                s.push_str(&format!(" {k}={v}"));
            }
        }
        if let Some(m) = self.min {
            s.push_str(&format!(" >= {m}"));
        }
        if let Some(m) = self.max {
            s.push_str(&format!(" <= {m}"));
        }
        s
    }
}

/// The gate's rules (see the module docs for the file format and defaults).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Rules {
    /// The confidence level of the paired test and the intervals (default 0.95).
    pub level: Level,
    /// Which test confirms a change beyond the margin (default McNemar's).
    pub significance: Significance,
    /// Bootstrap resamples for the intervals (at least 100; default 2000).
    pub resamples: usize,
    /// The rule for detection cells (caught / fired per fault, task, policy).
    pub detection: MetricRule,
    /// The rule for false-alarm cells (alarms / confirmed working trials per task, policy).
    pub false_alarms: MetricRule,
    /// The rule for recovery cells (recovered / fired episodes per task, fault, policy, agent).
    pub recovery: MetricRule,
    /// The rule for an external harness's defect cells (probe trials showing the defect
    /// per fault, task, harness).
    pub defects: MetricRule,
    /// The absolute bounds on the candidate (`[[floor]]` sections).
    #[serde(rename = "floor")]
    pub floors: Vec<Floor>,
    /// Baseline cells the candidate may lack without failing: policy names, or cell names
    /// as the report prints them (`fault / task / policy`, `task / policy`,
    /// `fault / task / policy / agent`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allow_missing: Vec<String>,
    /// Where each rule was written, for errors about rules that match nothing.
    #[serde(skip)]
    pub(crate) source: RulesSource,
}

/// The rules file's name and the lines its rules were written on (empty for rules built
/// in code).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct RulesSource {
    /// The rules file's name, as given (`rules` when the rules were not read from a file).
    pub name: String,
    /// Per `[[floor]]`, the line of each of its keys.
    pub floor_lines: Vec<BTreeMap<String, usize>>,
    /// Per `allow_missing` entry, its line.
    pub allow_missing_lines: Vec<usize>,
}

impl RulesSource {
    /// `rules.toml:12` or `rules.toml` when the line is unknown.
    pub(crate) fn at(&self, line: Option<usize>) -> String {
        let name = if self.name.is_empty() {
            "rules"
        } else {
            &self.name
        };
        match line {
            Some(l) => format!("{name}:{l}"),
            None => name.to_string(),
        }
    }
}

/// Just enough of a rules file to say on which line each rule was written.
#[derive(Deserialize)]
struct RuleSpans {
    #[serde(default)]
    floor: Vec<BTreeMap<String, toml::Spanned<toml::Value>>>,
    #[serde(default)]
    allow_missing: Vec<toml::Spanned<String>>,
}

/// Whether an `allow_missing` entry names the cell of `policy` called `name`: the policy
/// itself, or the cell's name (spaces around the slashes do not matter).
pub(crate) fn names_cell(entry: &str, policy: &str, name: &str) -> bool {
    entry.trim() == policy || entry.split('/').map(str::trim).eq(name.split(" / "))
}

/// 1-based line of a byte offset.
fn line_of_offset(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

impl Default for Rules {
    fn default() -> Self {
        Rules {
            level: Level::default(),
            significance: Significance::Mcnemar,
            resamples: 2000,
            detection: MetricRule::default(),
            false_alarms: MetricRule::default(),
            recovery: MetricRule::default(),
            defects: MetricRule::default(),
            floors: Vec::new(),
            allow_missing: Vec::new(),
            source: RulesSource::default(),
        }
    }
}

impl Rules {
    /// Parses and checks a rules file's text; `name` prefixes every error.
    pub fn parse(name: &str, text: &str) -> Result<Rules> {
        let mut rules: Rules =
            toml::from_str(text).with_context(|| format!("{name}: not valid gate rules"))?;
        // The text parsed as rules, so it parses as their spans too.
        let spans: RuleSpans = toml::from_str(text).with_context(|| format!("{name}: not TOML"))?;
        rules.source = RulesSource {
            name: name.to_string(),
            floor_lines: spans
                .floor
                .iter()
                .map(|f| {
                    f.iter()
                        .map(|(k, v)| (k.clone(), line_of_offset(text, v.span().start)))
                        .collect()
                })
                .collect(),
            allow_missing_lines: spans
                .allow_missing
                .iter()
                .map(|e| line_of_offset(text, e.span().start))
                .collect(),
        };
        for (what, r) in [
            ("detection", rules.detection),
            ("false_alarms", rules.false_alarms),
            ("recovery", rules.recovery),
            ("defects", rules.defects),
        ] {
            if !(0.0..1.0).contains(&r.margin) {
                bail!(
                    "{name}: [{what}] margin must be in [0, 1), found {}",
                    r.margin
                );
            }
        }
        if rules.resamples < 100 {
            bail!(
                "{name}: resamples must be at least 100, found {}",
                rules.resamples
            );
        }
        for f in &rules.floors {
            if f.min.is_none() && f.max.is_none() {
                bail!("{name}: [[floor]] `{}` needs min or max", f.describe());
            }
            for b in [f.min, f.max].into_iter().flatten() {
                if !(0.0..=1.0).contains(&b) {
                    bail!(
                        "{name}: [[floor]] `{}`: bounds are rates in [0, 1]",
                        f.describe()
                    );
                }
            }
            if f.agent.is_some() && f.metric != Metric::Recovery {
                bail!(
                    "{name}: [[floor]] `{}`: only recovery has agents",
                    f.describe()
                );
            }
        }
        for (i, entry) in rules.allow_missing.iter().enumerate() {
            if entry.trim().is_empty() {
                bail!(
                    "{}: allow_missing: an empty entry (expected a policy name or a cell name such as `fault / task / policy`)",
                    rules.source.at(rules.source.allow_missing_lines.get(i).copied())
                );
            }
        }
        Ok(rules)
    }

    /// Whether `allow_missing` excuses the cell of `policy` named `name` (as the report
    /// prints it).
    pub fn allows_missing(&self, policy: &str, name: &str) -> bool {
        self.allow_missing
            .iter()
            .any(|entry| names_cell(entry, policy, name))
    }

    /// The rule for `metric`.
    pub fn rule(&self, metric: Metric) -> &MetricRule {
        match metric {
            Metric::Detection => &self.detection,
            Metric::FalseAlarms => &self.false_alarms,
            Metric::Recovery => &self.recovery,
            Metric::Defects => &self.defects,
        }
    }
}
