//! Experiment configuration: a TOML file (or the embedded default) plus command-line
//! overrides, resolved into one validated [`ExperimentConfig`].
//!
//! Both forms are stored with the run: the config *as passed* (file text and flags) and
//! *as resolved* (every default filled in), so a paper can cite exactly what ran.
//!
//! Where things live: `file.rs` holds the file types (the TOML as written), `locate.rs`
//! finds the config text (embedded configs by name or a file path) and the lines errors
//! point at, this file resolves a whole config into an [`ExperimentConfig`], and
//! `timing.rs`, `plugins.rs`, `faults.rs` and `recovery.rs` resolve their sections.

mod faults;
mod file;
mod harness;
mod locate;
mod plugins;
mod recovery;
mod timing;

use faults::resolve_faults;
pub use file::*;
use harness::resolve_harness;
pub use harness::{reaches_external, HarnessConfig, DEFAULT_LEASE_MS, MAX_WORKERS};
use locate::{line_of_key, line_of_offset, table_at};
pub use locate::{
    load_text, ConfigText, CATALOGUE_CONFIG, DEFAULT_CONFIG, DEVTOOLS_CONFIG, EMBEDDED,
    MINIWOB_CONFIG,
};
use plugins::{plugin_spec, resolve_plugins};
use recovery::resolve_recovery;
use timing::{resolve_liveness, resolve_settle};

use crate::agent::cassette::CassetteMode;
use crate::agent::openai::OpenAiConfig;
use crate::engine::browser::Isolation;
use crate::engine::episode::EpisodeLimits;
use crate::engine::liveness::Liveness;
use crate::engine::timing::Timing;
use crate::experiment::jobs::{Jobs, MAX_JOBS};
use crate::plugin::PluginSpec;
use anyhow::{bail, Result};
use faultline_faults::Fault;
use faultline_tasks::layout::{IMAGE, VIEWPORT};
use faultline_tasks::seed::DEFAULT_ROOT_SEED;
use faultline_tasks::{Size, TaskKind};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Overrides from the command line.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Overrides {
    /// `--seed`: the root seed.
    pub seed: Option<u64>,
    /// `--layouts`: layouts per task.
    pub layouts: Option<u32>,
    /// `--jobs`: concurrent trials and episodes.
    pub jobs: Option<usize>,
    /// `--faults`: selectors replacing the config's `faults`.
    pub faults: Option<Vec<String>>,
    /// `--isolation`: how trials are kept apart.
    pub isolation: Option<String>,
}

/// Where the decisions come from, once resolved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "path")]
pub enum DecisionSource {
    /// The committed decisions when they cover the run's seed, tasks and layouts; otherwise
    /// fresh ones recorded with the oracle into the run directory.
    Auto,
    /// A decision JSONL file.
    File(PathBuf),
}

/// A validated experiment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExperimentConfig {
    /// The config's name or path.
    pub source: String,
    /// The root seed every layout, trial and episode seed derives from.
    pub seed: u64,
    /// Layouts per task.
    pub layouts: u32,
    /// How many trials and episodes run at once. Not part of what a run *is*: resuming
    /// with another value is fine.
    pub jobs: Jobs,
    /// The tasks, in config order.
    pub tasks: Vec<TaskKind>,
    /// The policies every trial is judged by, in report order.
    pub policies: Vec<String>,
    /// Where the recorded decisions come from.
    pub decisions: DecisionSource,
    /// The faults of the detection experiment, in catalogue order; each runs on every
    /// configured task it applies to.
    pub faults: Vec<Fault>,
    /// The round trip's waits.
    pub timing: Timing,
    /// Deadlines, retries and browser restarts. Not part of what a run *is*.
    #[serde(default)]
    pub liveness: Liveness,
    /// How trials are kept apart in the browser. Not part of what a run *is*: both modes
    /// give every trial a page in the state of a fresh one, and the same tables.
    #[serde(default)]
    pub isolation: Isolation,
    /// Whether the browser connection goes through faultline's DevTools proxy
    /// (`[browser] devtools_proxy`), so the faults on the protocol can be armed per page.
    /// Not part of what a run *is*: with no such fault armed the proxy relays every
    /// message unchanged. Absent from the stored config when off.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub devtools_proxy: bool,
    /// The viewport every page is laid out for.
    pub viewport: Size,
    /// The screenshot size a model sees.
    pub image: Size,
    /// The configured Chromium executable (`None`: found at launch).
    pub chromium: Option<PathBuf>,
    /// The recovery experiment.
    pub recovery: RecoveryConfig,
    /// The model endpoint (defaults filled in), used only by the `openai` agent.
    pub openai: OpenAiConfig,
    /// Where model calls are recorded and replayed.
    pub cassette: CassetteConfig,
    /// External verification policies (absent from the stored config when there are
    /// none, so runs without plugins keep their identity).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub external_policies: Vec<PluginSpec>,
    /// The `exec` agent's process, when configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exec: Option<PluginSpec>,
    /// The external harness under test (`[harness]`; absent from the stored config when
    /// there is none, so built-in runs keep their identity).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harness: Option<HarnessConfig>,
}

/// Where the cassette is and how it answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CassetteConfig {
    /// The cassette file (`None`: `cassette.jsonl` in the run directory; see
    /// [`CassetteConfig::path_in`]).
    pub path: Option<PathBuf>,
    /// Record, replay or auto.
    pub mode: CassetteMode,
}

impl CassetteConfig {
    /// The cassette file of a run writing into `out`.
    pub fn path_in(&self, out: &Path) -> PathBuf {
        self.path
            .clone()
            .unwrap_or_else(|| out.join("cassette.jsonl"))
    }
}

/// The recovery experiment, resolved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecoveryConfig {
    /// Whether the recovery experiment runs.
    pub enabled: bool,
    /// The first `layouts` layouts of each task (at most the detection's layouts).
    pub layouts: u32,
    /// The policies the agents are told by.
    pub policies: Vec<String>,
    /// Repetitions of every (task, fault, policy, layout, agent) episode (1 to 100).
    pub runs: u32,
    /// The agents, by canonical registry name; every episode runs once per agent.
    pub agents: Vec<String>,
    /// The agent's budget and the step cap.
    pub limits: EpisodeLimits,
    /// The faults of the episodes, in catalogue order.
    pub faults: Vec<Fault>,
}

impl ExperimentConfig {
    /// The (task, fault) pairs of the detection experiment: every configured task with
    /// every selected fault that applies to it, in task then catalogue order.
    pub fn detection_pairs(&self) -> Vec<(TaskKind, Fault)> {
        pairs(&self.tasks, &self.faults)
    }

    /// The (task, fault) pairs of the recovery experiment.
    pub fn recovery_pairs(&self) -> Vec<(TaskKind, Fault)> {
        pairs(&self.tasks, &self.recovery.faults)
    }

    /// What `--resume` must find unchanged: the rule is
    /// [`faultline_analysis::db::manifest::resume_identity`], with what it leaves out and why.
    pub fn identity(&self) -> serde_json::Value {
        let resolved = serde_json::to_value(self).expect("config serializes");
        faultline_analysis::db::manifest::resume_identity(&resolved)
    }
}

fn pairs(tasks: &[TaskKind], faults: &[Fault]) -> Vec<(TaskKind, Fault)> {
    tasks
        .iter()
        .flat_map(|t| {
            faults
                .iter()
                .filter(|f| f.applies_to(*t))
                .map(move |f| (*t, *f))
        })
        .collect()
}

/// Parses and validates a config, applying overrides.
pub fn resolve(config: &ConfigText, overrides: &Overrides) -> Result<ExperimentConfig> {
    let file: ConfigFile = toml::from_str(&config.text).map_err(|e| {
        let line = e.span().map(|s| line_of_offset(&config.text, s.start));
        let field = line
            .and_then(|l| config.text.lines().nth(l - 1))
            .and_then(|l| l.split_once('=').map(|(k, _)| k.trim().to_string()))
            .filter(|k| !k.is_empty() && !k.starts_with('['))
            // A key inside a table is named with its table: `timing.settle_ms`.
            .map(|k| match line.and_then(|l| table_at(&config.text, l)) {
                Some(table) => format!("{table}.{k}"),
                None => k,
            });
        let msg = e.message().trim().to_string();
        match (line, field) {
            (Some(l), Some(f)) if !msg.contains(&f) => {
                anyhow::anyhow!("{}:{l}: {f}: {msg}", config.name)
            }
            (Some(l), _) => anyhow::anyhow!("{}:{l}: {msg}", config.name),
            (None, _) => anyhow::anyhow!("{}: {msg}", config.name),
        }
    })?;
    let at = |key: &str| match line_of_key(&config.text, key) {
        Some(l) => format!("{}:{l}: {key}", config.name),
        None => format!("{}: {key}", config.name),
    };
    // A value given as a flag is blamed on the flag, not on the config it overrode.
    let from = |flag: &str, overridden: bool, key: &str| match overridden {
        true => flag.to_string(),
        false => at(key),
    };

    let seed = overrides.seed.or(file.seed).unwrap_or(DEFAULT_ROOT_SEED);
    let layouts = overrides.layouts.or(file.layouts).unwrap_or(40);
    if layouts == 0 || layouts > 10_000 {
        bail!(
            "{}: expected a number of layouts between 1 and 10000, found {layouts}",
            from("--layouts", overrides.layouts.is_some(), "layouts")
        );
    }
    let jobs = match overrides.jobs.or(file.jobs) {
        None | Some(0) => Jobs::per_phase(),
        Some(j) if j > MAX_JOBS => bail!(
            "{}: expected at most {MAX_JOBS} concurrent trials (or 0 for the default), found {j}",
            from("--jobs", overrides.jobs.is_some(), "jobs")
        ),
        Some(j) => Jobs::Fixed(j),
    };
    let tasks = match &file.tasks {
        None => TaskKind::REFERENCE.to_vec(),
        Some(list) => {
            let mut out = Vec::new();
            for t in list {
                let task: TaskKind = t
                    .parse()
                    .map_err(|e| anyhow::anyhow!("{}: {e}", at("tasks")))?;
                if out.contains(&task) {
                    bail!("{}: task `{t}` is listed twice", at("tasks"));
                }
                out.push(task);
            }
            if out.is_empty() {
                bail!("{}: expected at least one task", at("tasks"));
            }
            out
        }
    };
    let external_policies = resolve_plugins(file.policy.as_deref(), &at)?;
    let registry = crate::plugin::policy::registry(&external_policies, VIEWPORT);
    let policies = match &file.policies {
        None => faultline_policies::BUILTIN
            .iter()
            .map(|s| s.to_string())
            .collect(),
        Some(list) => {
            for p in list {
                registry
                    .build(p)
                    .map_err(|e| anyhow::anyhow!("{}: {e}", at("policies")))?;
            }
            if list.is_empty() {
                bail!("{}: expected at least one policy", at("policies"));
            }
            list.clone()
        }
    };
    let harness = match &file.harness {
        Some(h) => Some(resolve_harness(h, &at)?),
        None => None,
    };
    // An external harness judges with its own verifier: its name is the run's one policy.
    let policies = match (&harness, &file.policies) {
        (None, _) => policies,
        (Some(h), None) => vec![h.name.clone()],
        (Some(_), Some(_)) => bail!(
            "{}: a run under [harness] is judged by the harness's own verifier; remove `policies`",
            at("policies")
        ),
    };
    let mut faults = resolve_faults(
        overrides.faults.as_deref().or(file.faults.as_deref()),
        &tasks,
        &if overrides.faults.is_some() {
            "--faults".to_string()
        } else {
            at("faults")
        },
    )?;
    let devtools_proxy = file
        .browser
        .as_ref()
        .and_then(|b| b.devtools_proxy)
        .unwrap_or(false);
    if harness.is_none() && !devtools_proxy {
        faults::drop_protocol_faults(&mut faults, &at("faults"))?;
    }
    if harness.is_some() {
        let unreachable: Vec<&str> = faults
            .iter()
            .filter(|f| !reaches_external(**f))
            .map(|f| f.id())
            .collect();
        if !unreachable.is_empty() {
            tracing::info!(
                "not offered to an external harness (they need faultline's own round trip or browser): {}",
                unreachable.join(", ")
            );
        }
        faults.retain(|f| reaches_external(*f));
        if faults.is_empty() {
            bail!(
                "{}: none of these faults can reach an external harness (they need faultline's own round trip or browser); choose network, page or self-report faults, or `reference`",
                at("faults")
            );
        }
    }
    let decisions = match file.decisions.as_deref() {
        None | Some("auto") => DecisionSource::Auto,
        Some(p) => DecisionSource::File(PathBuf::from(p)),
    };
    let defaults = Timing::default();
    let timing = Timing {
        settle_ms: file
            .timing
            .as_ref()
            .and_then(|t| t.settle_ms)
            .unwrap_or(defaults.settle_ms),
        hover_settle_ms: file
            .timing
            .as_ref()
            .and_then(|t| t.hover_settle_ms)
            .unwrap_or(defaults.hover_settle_ms),
        navigation_timeout_ms: file
            .timing
            .as_ref()
            .and_then(|t| t.navigation_timeout_ms)
            .unwrap_or(defaults.navigation_timeout_ms),
        stable: resolve_settle(file.timing.as_ref(), &at)?,
    };
    if timing.navigation_timeout_ms < 500 || timing.navigation_timeout_ms > 60_000 {
        bail!(
            "{}: expected a navigation timeout between 500 and 60000 ms, found {}",
            at("timing.navigation_timeout_ms"),
            timing.navigation_timeout_ms
        );
    }
    if timing.hover_settle_ms > 10_000 || timing.settle_ms > 10_000 {
        bail!(
            "{}: settle times above 10000 ms are almost certainly a typo",
            at("timing")
        );
    }
    let liveness = resolve_liveness(file.liveness.as_ref(), &at)?;
    let isolation_file = file.browser.as_ref().and_then(|b| b.isolation.as_deref());
    let isolation = match overrides.isolation.as_deref().or(isolation_file) {
        None => Isolation::default(),
        Some(name) => name.parse::<Isolation>().map_err(|e| {
            anyhow::anyhow!(
                "{}: {e}",
                from(
                    "--isolation",
                    overrides.isolation.is_some(),
                    "browser.isolation"
                )
            )
        })?,
    };
    // `--faults` chooses the faults of the whole run: detection and recovery.
    let recovery_file = file.recovery.clone().map(|mut r| {
        if overrides.faults.is_some() {
            r.faults = overrides.faults.clone();
        }
        r
    });
    let recovery = resolve_recovery(
        recovery_file.as_ref(),
        layouts,
        &tasks,
        &registry,
        &|key: &str| at(&format!("recovery.{key}")),
    )?;
    let exec = match &file.exec {
        Some(e) => Some(plugin_spec("exec", &e.command, e.timeout_ms, &at("exec"))?),
        None => None,
    };
    let recovery = match &harness {
        Some(h) => {
            harness::external_recovery(recovery, recovery_file.as_ref(), h, &|key: &str| {
                at(&format!("recovery.{key}"))
            })?
        }
        None => recovery,
    };
    if recovery.agents.iter().any(|a| a == "exec") && exec.is_none() {
        bail!(
            "{}: the `exec` agent needs an [exec] section with a command",
            at("recovery.agent")
        );
    }
    let openai = file.openai.clone().unwrap_or_default();
    if file.openai.is_some() || recovery.agents.iter().any(|a| a == "openai") {
        openai
            .validate()
            .map_err(|e| anyhow::anyhow!("{}: {e}", at("openai")))?;
    }
    let cassette = CassetteConfig {
        path: file.cassette.as_ref().and_then(|c| c.path.clone()),
        mode: match file.cassette.as_ref().and_then(|c| c.mode.as_deref()) {
            None | Some("auto") => CassetteMode::Auto,
            Some("record") => CassetteMode::Record,
            Some("replay") => CassetteMode::Replay,
            Some(other) => bail!(
                "{}: unknown cassette mode `{other}` (expected record, replay or auto)",
                at("cassette.mode")
            ),
        },
    };
    Ok(ExperimentConfig {
        source: config.name.clone(),
        seed,
        layouts,
        jobs,
        tasks,
        policies,
        decisions,
        timing,
        liveness,
        isolation,
        devtools_proxy,
        viewport: VIEWPORT,
        image: IMAGE,
        chromium: file.browser.and_then(|b| b.executable),
        faults,
        recovery,
        openai,
        cassette,
        external_policies,
        exec,
        harness,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> ConfigText {
        ConfigText {
            name: "exp.toml".into(),
            text: s.into(),
        }
    }

    #[test]
    fn regression_a_toml_error_in_a_table_names_the_key_with_its_table() {
        let e = resolve(
            &text("seed = 1\n[timing]\nsettle_ms = \"fast\"\n"),
            &Overrides::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("exp.toml:3: timing.settle_ms: "), "{e}");
        let e = resolve(&text("seed = \"one\"\n"), &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("exp.toml:1: seed: "), "{e}");
        let e = resolve(&text("[liveness]\nretries = 99\n"), &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("liveness.retries"), "{e}");
    }

    #[test]
    fn embedded_default_resolves_to_the_reference_experiment() {
        let c = resolve(&load_text(None).unwrap(), &Overrides::default()).unwrap();
        assert_eq!(c.seed, DEFAULT_ROOT_SEED);
        assert_eq!(c.layouts, 40);
        assert_eq!(c.tasks, TaskKind::REFERENCE.to_vec());
        let mut faults = c.faults.clone();
        faults.sort();
        assert_eq!(faults, Fault::STAGE.to_vec());
        assert_eq!(c.detection_pairs().len(), 4);
        assert!(c.recovery.enabled);
        assert_eq!((c.recovery.layouts, c.recovery.runs), (20, 3));
        assert_eq!(
            c.recovery.policies,
            vec!["unverified", "generic", "outcome"]
        );
        assert_eq!(
            c.policies,
            vec!["unverified", "generic", "pixel", "outcome"]
        );
        assert_eq!(c.decisions, DecisionSource::Auto);
    }

    /// The protocol faults act on a browser connection through the DevTools proxy: a
    /// built-in run selects them only with `[browser] devtools_proxy = true`, so the
    /// other embedded configs run exactly what they did before the faults existed; a run
    /// under `[harness]` gets them from `all`, and a built-in run without the proxy that
    /// names only them is told how to get them.
    #[test]
    fn built_in_runs_select_a_fault_on_the_devtools_protocol_only_through_the_proxy() {
        for name in [None, Some("catalogue"), Some("miniwob")] {
            let c = resolve(&load_text(name).unwrap(), &Overrides::default()).unwrap();
            assert!(!c.faults.iter().any(|f| f.on_the_protocol()), "{name:?}");
            assert!(!c.devtools_proxy, "{name:?}");
            assert!(
                !c.recovery.faults.iter().any(|f| f.on_the_protocol()),
                "{name:?}"
            );
        }
        let all = resolve(&text("faults = [\"all\"]\n"), &Overrides::default()).unwrap();
        assert!(!all.faults.iter().any(|f| f.on_the_protocol()));
        let external = resolve(
            &text("faults = [\"all\"]\n[harness]\nname = \"mine\"\n"),
            &Overrides::default(),
        )
        .unwrap();
        assert!(external.faults.contains(&Fault::DevtoolsScaledPointer));
        let e = resolve(
            &text("faults = [\"tool.devtools_*\"]\n"),
            &Overrides::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("devtools_proxy = true"), "{e}");
        assert!(e.contains("under [harness]"), "{e}");
        let proxied = resolve(
            &text("faults = [\"all\"]\n[browser]\ndevtools_proxy = true\n"),
            &Overrides::default(),
        )
        .unwrap();
        assert!(proxied.faults.contains(&Fault::DevtoolsHeldAnswer));
        let devtools =
            resolve(&load_text(Some("devtools")).unwrap(), &Overrides::default()).unwrap();
        assert!(devtools.devtools_proxy);
        assert_eq!(
            devtools.faults.len(),
            Fault::ALL.iter().filter(|f| f.on_the_protocol()).count()
        );
        assert!(devtools.faults.iter().all(|f| f.on_the_protocol()));
        // The reference harness's example serves exactly these items, for a side by side.
        let external = resolve(
            &ConfigText {
                name: "playwright-devtools.toml".into(),
                text: include_str!("../../../examples/harnesses/playwright-devtools.toml").into(),
            },
            &Overrides::default(),
        )
        .unwrap();
        assert_eq!(
            (
                &external.tasks,
                external.layouts,
                &external.faults,
                external.seed
            ),
            (
                &devtools.tasks,
                devtools.layouts,
                &devtools.faults,
                devtools.seed
            )
        );
        // The proxy is transparent for every other fault: it is not part of what a run is.
        let plain = resolve(&text("faults = [\"reference\"]\n"), &Overrides::default()).unwrap();
        let through = resolve(
            &text("faults = [\"reference\"]\n[browser]\ndevtools_proxy = true\n"),
            &Overrides::default(),
        )
        .unwrap();
        assert_eq!(plain.identity(), through.identity());
        assert!(serde_json::to_value(&plain)
            .unwrap()
            .get("devtools_proxy")
            .is_none());
    }

    #[test]
    fn embedded_catalogue_selects_every_fault_on_every_task() {
        let c = resolve(
            &load_text(Some("catalogue")).unwrap(),
            &Overrides::default(),
        )
        .unwrap();
        assert_eq!(c.tasks, TaskKind::FIXTURE.to_vec());
        // The catalogue is faultline's own tasks; the MiniWoB++ suite has its config (a
        // fault only MiniWoB++ pages have an analogue for is left out here).
        let on_fixtures = Fault::ALL
            .iter()
            .filter(|f| !f.on_the_protocol())
            .filter(|f| f.tasks().iter().any(|t| t.miniwob_name().is_none()))
            .count();
        assert_eq!(c.faults.len(), on_fixtures);
        assert!(!c.faults.contains(&Fault::CaptureBeforeSettled));
        let pairs: usize = Fault::ALL
            .iter()
            .filter(|f| !f.on_the_protocol())
            .map(|f| {
                f.tasks()
                    .iter()
                    .filter(|t| t.miniwob_name().is_none())
                    .count()
            })
            .sum();
        assert_eq!(c.detection_pairs().len(), pairs);
        assert_eq!(c.recovery_pairs().len(), pairs);
        assert!(c.recovery.enabled);
    }

    #[test]
    fn fault_selectors_resolve_and_bad_ones_say_where() {
        let c = resolve(&text("faults = [\"overlay.*\"]\n"), &Overrides::default()).unwrap();
        // overlay faults apply to grid, frame and chart, all reference tasks.
        assert!(c
            .faults
            .iter()
            .all(|f| f.layer() == faultline_faults::Layer::Overlay));
        assert!(c.detection_pairs().iter().all(|(t, f)| f.applies_to(*t)));
        let e = resolve(
            &text("\nfaults = [\"overlay.cookie_baner\"]\n"),
            &Overrides::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("exp.toml:2: faults: unknown fault"), "{e}");
        assert!(e.contains("overlay.cookie_banner"), "{e}");
        // A fault that needs a task the config does not run.
        let e = resolve(
            &text("tasks = [\"grid\"]\nfaults = [\"http.rate_limited\"]\n"),
            &Overrides::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("none of the selected faults applies"), "{e}");
        let o = Overrides {
            faults: Some(vec!["layer:nope".into()]),
            ..Overrides::default()
        };
        let e = resolve(&text(""), &o).unwrap_err().to_string();
        assert!(e.starts_with("--faults: unknown layer"), "{e}");
        // --faults chooses the faults of both phases.
        let o = Overrides {
            faults: Some(vec!["overlay.modal".into()]),
            ..Overrides::default()
        };
        let c = resolve(&load_text(None).unwrap(), &o).unwrap();
        assert_eq!(c.faults, vec![Fault::Modal]);
        assert_eq!(c.recovery.faults, vec![Fault::Modal]);
    }

    #[test]
    fn a_harness_run_may_serve_recovery_episodes_to_its_own_agent() {
        let harness = "[harness]\nname = \"mine\"\ncommand = [\"h\"]\n";
        let c = resolve(
            &text(&format!(
                "faults = [\"reference\"]\n{harness}[recovery]\nruns = 2\nbudget = 2\nfaults = [\"reference\", \"layout.viewport_changed\"]\n"
            )),
            &Overrides::default(),
        )
        .unwrap();
        assert!(c.recovery.enabled);
        // The harness's verifier tells the harness's agent: one policy, one agent.
        assert_eq!(c.recovery.policies, vec!["mine".to_string()]);
        assert_eq!(c.recovery.agents, vec!["mine".to_string()]);
        assert_eq!((c.recovery.runs, c.recovery.limits.budget), (2, 2));
        // Only faults that reach an external harness are served.
        let ids = |f: &[Fault]| {
            let mut v: Vec<&str> = f.iter().map(|f| f.id()).collect();
            v.sort_unstable();
            v
        };
        assert_eq!(ids(&c.recovery.faults), ids(&Fault::STAGE));
        for key in [
            "policies = [\"outcome\"]",
            "agent = \"trusting\"",
            "agents = [\"observant\"]",
        ] {
            let e = resolve(
                &text(&format!("{harness}[recovery]\n{key}\n")),
                &Overrides::default(),
            )
            .unwrap_err()
            .to_string();
            let field = key.split(' ').next().unwrap();
            assert!(
                e.starts_with(&format!("exp.toml:5: recovery.{field}: under [harness]")),
                "{e}"
            );
        }
        let e = resolve(
            &text(&format!(
                "{harness}[recovery]\nfaults = [\"layout.viewport_changed\"]\n"
            )),
            &Overrides::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("recovery.faults: none of these faults can reach"),
            "{e}"
        );
        // The example config with recovery resolves to the reference harness's episodes.
        let c = resolve(
            &ConfigText {
                name: "playwright-recovery.toml".into(),
                text: include_str!("../../../examples/harnesses/playwright-recovery.toml").into(),
            },
            &Overrides::default(),
        )
        .unwrap();
        assert!(c.recovery.enabled && c.recovery.runs == 3);
        assert_eq!(c.recovery.agents, vec!["playwright".to_string()]);
        // Disabled recovery is left as it was.
        let c = resolve(
            &text(&format!("{harness}[recovery]\nenabled = false\n")),
            &Overrides::default(),
        )
        .unwrap();
        assert!(!c.recovery.enabled);
    }

    #[test]
    fn recovery_errors_name_their_table() {
        let e = resolve(
            &text("policies = [\"outcome\"]\n[recovery]\nruns = 0\n"),
            &Overrides::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("exp.toml:3: recovery.runs: expected"), "{e}");
        let e = resolve(
            &text("[recovery]\nagent = \"gpt\"\n"),
            &Overrides::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("exp.toml:2: recovery.agent: unknown agent `gpt`"),
            "{e}"
        );
        // Recovery never asks for more layouts than detection has.
        let c = resolve(
            &text("layouts = 4\n[recovery]\nlayouts = 20\n"),
            &Overrides::default(),
        )
        .unwrap();
        assert_eq!(c.recovery.layouts, 4);
    }

    #[test]
    fn regression_a_bad_flag_value_is_blamed_on_the_flag_not_the_embedded_config() {
        let e = resolve(
            &load_text(None).unwrap(),
            &Overrides {
                layouts: Some(0),
                ..Overrides::default()
            },
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("--layouts: expected"), "{e}");
        let e = resolve(
            &load_text(None).unwrap(),
            &Overrides {
                jobs: Some(500),
                ..Overrides::default()
            },
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("--jobs: expected"), "{e}");
        // From the file itself, the file and line are named.
        let e = resolve(&text("layouts = 0\n"), &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("exp.toml:1: layouts"), "{e}");
    }

    #[test]
    fn overrides_win_and_jobs_and_isolation_do_not_change_identity() {
        let o = Overrides {
            seed: Some(9),
            layouts: Some(3),
            jobs: Some(1),
            faults: None,
            isolation: Some("fresh_context".into()),
        };
        let a = resolve(
            &text("seed = 2\nlayouts = 5\n[browser]\nisolation = \"reused_context\"\n"),
            &o,
        )
        .unwrap();
        assert_eq!((a.seed, a.layouts, a.jobs), (9, 3, Jobs::Fixed(1)));
        assert_eq!(a.isolation, Isolation::FreshContext);
        let b = resolve(
            &text("seed = 9\nlayouts = 3\njobs = 7\n"),
            &Overrides::default(),
        )
        .unwrap();
        assert_eq!(a.identity(), b.identity());
    }

    #[test]
    fn an_unknown_isolation_is_named_with_its_line_or_flag() {
        let e = resolve(
            &text("seed = 1\n[browser]\nisolation = \"shared\"\n"),
            &Overrides::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("exp.toml:3: browser.isolation: unknown isolation `shared`"),
            "{e}"
        );
        let o = Overrides {
            isolation: Some("none".into()),
            ..Overrides::default()
        };
        let e = resolve(&text(""), &o).unwrap_err().to_string();
        assert!(
            e.starts_with("--isolation: unknown isolation `none`"),
            "{e}"
        );
        let c = resolve(&text(""), &Overrides::default()).unwrap();
        assert_eq!(c.isolation, Isolation::ReusedContext);
    }

    #[test]
    fn errors_name_file_line_and_field() {
        let e = resolve(
            &text("seed = 1\nlayouts = \"many\"\n"),
            &Overrides::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("exp.toml:2: layouts:"), "{e}");
        let e = resolve(&text("seed = 1\nlayuots = 3\n"), &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("exp.toml:2:") && e.contains("layuots"), "{e}");
        let e = resolve(
            &text("tasks = [\"grid\", \"grdi\"]\n"),
            &Overrides::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("exp.toml:1: tasks: unknown task `grdi`"),
            "{e}"
        );
        let e = resolve(&text("\npolicies = [\"outcom\"]\n"), &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("exp.toml:2: policies: unknown policy `outcom`"),
            "{e}"
        );
        let e = resolve(&text("layouts = 0\n"), &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("exp.toml:1: layouts: expected"), "{e}");
    }
}
