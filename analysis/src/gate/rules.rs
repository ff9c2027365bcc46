//! The gate's rules: margins per metric, the paired test that confirms a change, and
//! optional absolute bounds. Read from TOML; every field has a default, so an empty file
//! (or none) is the default rules:
//!
//! ```toml
//! level = 0.95              # confidence level of the paired test
//! significance = "mcnemar"  # mcnemar | bootstrap | none
//! resamples = 2000          # bootstrap resamples for the intervals
//!
//! [detection]               # caught / fired per (fault, task, policy): may not drop
//! margin = 0.05
//! [false_alarms]            # alarms / confirmed working trials per (task, policy): may not rise
//! margin = 0.05
//! [recovery]                # recovered / fired episodes per (task, fault, policy, agent): may not drop
//! margin = 0.05
//!
//! [[floor]]                 # optional: an absolute bound on the candidate's pooled rate
//! metric = "detection"
//! policy = "outcome"        # optional filters: policy, task, fault, agent
//! min = 0.95                # and/or max = ...
//! ```

use crate::stats::Level;
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

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
    }
}

impl Metric {
    /// Detection and recovery should go up; false alarms down.
    pub fn higher_is_better(self) -> bool {
        !matches!(self, Metric::FalseAlarms)
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
    /// The absolute bounds on the candidate (`[[floor]]` sections).
    #[serde(rename = "floor")]
    pub floors: Vec<Floor>,
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
            floors: Vec::new(),
        }
    }
}

impl Rules {
    /// Parses and checks a rules file's text; `name` prefixes every error.
    pub fn parse(name: &str, text: &str) -> Result<Rules> {
        let rules: Rules =
            toml::from_str(text).with_context(|| format!("{name}: not valid gate rules"))?;
        for (what, r) in [
            ("detection", rules.detection),
            ("false_alarms", rules.false_alarms),
            ("recovery", rules.recovery),
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
        Ok(rules)
    }

    /// The rule for `metric`.
    pub fn rule(&self, metric: Metric) -> &MetricRule {
        match metric {
            Metric::Detection => &self.detection,
            Metric::FalseAlarms => &self.false_alarms,
            Metric::Recovery => &self.recovery,
        }
    }
}
