//! How the analysis computes its intervals ([`AnalysisConfig`]), and the defaults a stored
//! run gets ([`default_config`], [`run_policies`]). The configuration is recorded in the
//! report.

use crate::db::ResultsDb;
use crate::stats::{Estimate, Level, Proportion};
use anyhow::{Context, Result};
use faultline_tasks::seed::derive_analysis;
use serde::{Deserialize, Serialize};

faultline_tasks::named_enum! {
    /// Which interval single proportions get.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "kebab-case")]
    pub enum ProportionMethod: "proportion method" {
        /// Wilson's score interval (the default).
        Wilson = "wilson",
        /// The exact (conservative) Clopper-Pearson interval.
        ClopperPearson = "clopper-pearson",
    }
}

/// How the analysis computes its intervals. Recorded in the report.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AnalysisConfig {
    /// The confidence level of every interval (default 95%).
    pub level: Level,
    /// The interval single proportions get (default Wilson).
    pub proportion: ProportionMethod,
    /// Bootstrap resamples per interval (default 10,000).
    pub resamples: usize,
    /// Root of every bootstrap seed in the report.
    pub seed: u64,
}

impl AnalysisConfig {
    /// Defaults: 95%, Wilson, 10,000 resamples, seed derived from the run's root seed.
    pub fn for_run(root_seed: u64) -> AnalysisConfig {
        AnalysisConfig {
            level: Level::default(),
            proportion: ProportionMethod::Wilson,
            resamples: 10_000,
            seed: derive_analysis(root_seed, "analysis"),
        }
    }

    /// The interval of `num` out of `den`, or `None` when `den` is 0.
    pub fn proportion(&self, num: u64, den: u64) -> Option<Estimate> {
        let p = Proportion::new(num, den).ok()?;
        Some(match self.proportion {
            ProportionMethod::Wilson => p.wilson(self.level),
            ProportionMethod::ClopperPearson => p.clopper_pearson(self.level),
        })
    }
}

/// The policy order recorded with the run (falls back to the built-in order).
pub fn run_policies(db: &ResultsDb) -> Result<Vec<String>> {
    Ok(match db.meta("policies")? {
        Some(json) => serde_json::from_str(&json).context("meta.policies is not a JSON list")?,
        None => ["unverified", "generic", "pixel", "outcome"]
            .iter()
            .map(|s| s.to_string())
            .collect(),
    })
}

/// The analysis defaults for a stored run (seed derived from its root seed).
pub fn default_config(db: &ResultsDb) -> Result<AnalysisConfig> {
    let root = db.manifest()?.map_or(0, |m| m.root_seed);
    Ok(AnalysisConfig::for_run(root))
}
