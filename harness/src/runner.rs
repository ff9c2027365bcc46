//! The detection experiment: every recorded decision replayed once with its stage fault
//! (faulty trial) and once clean (working trial), every policy judging the same stored
//! trial, results written to SQLite as they finish.
//!
//! Trials run concurrently (`jobs`), each in a fresh browser context with a fresh ledger
//! scope. Each trial is stored atomically under a stable key, so an interrupted run
//! resumes by skipping the keys it already has.

use crate::browser::{find_chromium, BrowserHandle};
use crate::cli::UsageError;
use crate::config::{ConfigText, DecisionSource, ExperimentConfig, Overrides};
use crate::record::record_oracle;
use crate::trial::{run_trial, Condition, Scorer, TrialEnv, TrialResult};
use anyhow::{anyhow, bail, Context, Result};
use faultline_analysis::db::{ResultsDb, TrialRow, VerdictRow};
use faultline_faults::{Fault, FaultPlan};
use faultline_policies::Registry;
use faultline_sites::FixtureServer;
use faultline_tasks::seed::derive;
use faultline_tasks::{Decision, DecisionSet, TaskKind};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::task::JoinSet;

/// The faultline version and the commit it was built from.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
pub const GIT_COMMIT: &str = env!("FAULTLINE_GIT_COMMIT");

/// What `faultline run` was asked to do.
pub struct RunRequest {
    pub out: PathBuf,
    pub resume: bool,
    pub config: ExperimentConfig,
    pub config_text: ConfigText,
    pub overrides: Overrides,
    /// Stop after this many newly finished trials (for tests of resume).
    pub max_trials: Option<usize>,
    /// Show a progress bar (when stderr is a terminal).
    pub progress: bool,
}

/// What a run did.
#[derive(Debug, Clone)]
pub struct RunSummary {
    pub out: PathBuf,
    pub trials_total: usize,
    pub trials_run: usize,
    pub trials_skipped: usize,
    pub detection_wall: Duration,
    pub report: PathBuf,
}

/// A trial to run.
#[derive(Clone)]
struct TrialSpec {
    key: String,
    decision: Arc<Decision>,
    condition: Condition,
    fault: Fault,
    trial_seed: u64,
}

/// The shared pieces of a run: fixture server, browser, scorer, policies.
pub struct Harness {
    pub env: Arc<TrialEnv>,
}

impl Harness {
    pub async fn start(config: &ExperimentConfig) -> Result<Harness> {
        let chromium = find_chromium(config.chromium.as_deref())?;
        let (server, key) = FixtureServer::start_loopback()
            .await
            .context("starting the fixture server")?;
        let browser = BrowserHandle::launch(&chromium).await?;
        let registry = Registry::default();
        let policies = config
            .policies
            .iter()
            .map(|p| registry.build(p).map_err(|e| anyhow!(e)))
            .collect::<Result<Vec<_>>>()?;
        let pages = browser.page_pool(
            config.viewport,
            config.jobs,
            format!("{}/warm", server.base_url()),
        );
        Ok(Harness {
            env: Arc::new(TrialEnv {
                pages,
                browser: Arc::new(browser),
                server: Arc::new(server),
                scorer: Arc::new(Scorer::new(key)),
                policies: Arc::new(policies),
                timing: config.timing,
                viewport: config.viewport,
            }),
        })
    }

    /// Stops the browser and the server.
    pub async fn shutdown(self) {
        if let Ok(env) = Arc::try_unwrap(self.env) {
            drop(env.pages);
            if let Ok(browser) = Arc::try_unwrap(env.browser) {
                browser.close().await;
            }
            if let Ok(server) = Arc::try_unwrap(env.server) {
                server.shutdown().await;
            }
        }
    }
}

/// Runs the detection experiment and writes the report.
pub async fn run(req: RunRequest) -> Result<RunSummary> {
    // Everything that can be rejected is checked before anything is written.
    let preloaded = preload_decisions(&req.config)?;
    let db_path = req.out.join("results.sqlite");
    if db_path.exists() && !req.resume {
        bail!(UsageError(format!(
            "{} already holds results; pass --resume to continue that run, or choose another --out",
            req.out.display()
        )));
    }
    std::fs::create_dir_all(&req.out).with_context(|| format!("creating {}", req.out.display()))?;
    let mut db = ResultsDb::open(&db_path)?;
    let identity = serde_json::to_string(&req.config.identity())?;
    match db.meta("config_identity")? {
        Some(stored) if stored != identity => {
            bail!(UsageError(format!(
                "{}: the stored run used a different experiment config; resume needs the same seed, layouts, tasks, policies, decisions and timing (stored: {stored})",
                db_path.display()
            )));
        }
        _ => {}
    }

    let harness = Harness::start(&req.config).await?;
    let result = run_with(&req, &harness, &mut db, &identity, preloaded).await;
    harness.shutdown().await;
    result
}

async fn run_with(
    req: &RunRequest,
    harness: &Harness,
    db: &mut ResultsDb,
    identity: &str,
    preloaded: Option<(DecisionSet, String)>,
) -> Result<RunSummary> {
    let env = harness.env.clone();
    let config = &req.config;
    let decisions = match preloaded {
        Some(d) => d,
        None => record_decisions(config, &req.out, &env).await?,
    };
    let chromium_version = env.browser.version().to_string();

    if db.meta("manifest")?.is_none() {
        let manifest = json!({
            "faultline_version": VERSION,
            "git_commit": GIT_COMMIT,
            "chromium_version": chromium_version,
            "root_seed": config.seed,
            "layouts": config.layouts,
            "tasks": config.tasks,
            "policies": config.policies,
            "decisions": decisions.1,
            "config_as_passed": { "name": req.config_text.name, "text": req.config_text.text, "overrides": req.overrides },
            "config_resolved": config,
        });
        db.set_meta("manifest", &serde_json::to_string_pretty(&manifest)?)?;
        db.set_meta("policies", &serde_json::to_string(&config.policies)?)?;
        db.set_meta("config_identity", identity)?;
    }

    let finished = db.finished_keys()?;
    let mut specs = Vec::new();
    for task in &config.tasks {
        for index in 0..config.layouts {
            let decision = decisions
                .0
                .find(*task, config.seed, index)
                .ok_or_else(|| anyhow!("no decision for {task} layout {index}"))?;
            let decision = Arc::new(decision.clone());
            for condition in [Condition::Faulty, Condition::Working] {
                let key = format!("detection/{task}/{index:03}/{}", condition.name());
                specs.push(TrialSpec {
                    trial_seed: derive(config.seed, &["trial", &key]),
                    key,
                    decision: decision.clone(),
                    condition,
                    fault: Fault::reference_for(*task)
                        .ok_or_else(|| anyhow!("task {task} has no reference fault"))?,
                });
            }
        }
    }
    let total = specs.len();
    let todo: Vec<TrialSpec> = specs
        .into_iter()
        .filter(|s| !finished.contains(&s.key))
        .collect();
    let skipped = total - todo.len();
    let todo: Vec<TrialSpec> = match req.max_trials {
        Some(n) => todo.into_iter().take(n).collect(),
        None => todo,
    };

    let bar = if req.progress {
        let bar = ProgressBar::new(total as u64);
        bar.set_style(
            ProgressStyle::with_template(
                "detection {bar:40} {pos}/{len} trials  {elapsed} elapsed, ETA {eta}",
            )
            .expect("valid template"),
        );
        bar.set_position(skipped as u64);
        bar.reset_eta();
        bar
    } else {
        ProgressBar::hidden()
    };

    let shots = req.out.join("shots");
    std::fs::create_dir_all(&shots)?;
    let started = Instant::now();
    let mut run_count = 0usize;
    let mut queue = todo.into_iter();
    let mut running: JoinSet<(TrialSpec, Result<TrialResult>)> = JoinSet::new();
    let spawn = |set: &mut JoinSet<_>, spec: TrialSpec| {
        let env = env.clone();
        set.spawn(async move {
            let fault = (spec.condition == Condition::Faulty)
                .then(|| FaultPlan::new(spec.fault, spec.trial_seed));
            let mut result = run_trial(&env, &spec.decision, fault).await;
            if result.is_err() {
                // One retry: a browser hiccup should not sink a long run.
                result = run_trial(&env, &spec.decision, fault).await;
            }
            (spec, result)
        });
    };
    for spec in queue.by_ref().take(config.jobs) {
        spawn(&mut running, spec);
    }
    while let Some(joined) = running.join_next().await {
        let (spec, result) = joined.context("a trial task panicked")?;
        let result = result.with_context(|| format!("trial {}", spec.key))?;
        store(db, &shots, &spec, result)?;
        run_count += 1;
        bar.inc(1);
        if let Some(next) = queue.next() {
            spawn(&mut running, next);
        }
    }
    bar.finish_and_clear();
    let wall = started.elapsed();

    let analysis = faultline_analysis::report::default_config(db)?;
    let files = faultline_analysis::report::write_all(db, &req.out, &req.out, &analysis)?;
    Ok(RunSummary {
        out: req.out.clone(),
        trials_total: total,
        trials_run: run_count,
        trials_skipped: skipped,
        detection_wall: wall,
        report: files.report_md,
    })
}

/// The decisions for this run when they need no browser: a configured file, or the
/// committed ones when they cover the run. `Ok(None)` means the oracle must record them.
fn preload_decisions(config: &ExperimentConfig) -> Result<Option<(DecisionSet, String)>> {
    match &config.decisions {
        DecisionSource::File(path) => {
            let set = DecisionSet::load(path)?;
            let missing = missing_decisions(config, &set);
            if let Some((t, i)) = missing.first() {
                bail!(UsageError(format!(
                    "{}: no decision for {t} layout {i} under root seed {} ({} missing in all)",
                    path.display(),
                    config.seed,
                    missing.len()
                )));
            }
            Ok(Some((set, path.display().to_string())))
        }
        DecisionSource::Auto => {
            let embedded = faultline_tasks::decision::embedded_default()?;
            Ok(missing_decisions(config, &embedded).is_empty().then(|| {
                (
                    embedded,
                    "committed oracle decisions (tasks/decisions)".to_string(),
                )
            }))
        }
    }
}

fn missing_decisions(config: &ExperimentConfig, set: &DecisionSet) -> Vec<(TaskKind, u32)> {
    config
        .tasks
        .iter()
        .flat_map(|t| (0..config.layouts).map(move |i| (*t, i)))
        .filter(|(t, i)| set.find(*t, config.seed, *i).is_none())
        .collect()
}

/// Records the missing oracle decisions into the run directory, one line at a time, so
/// an interrupted recording resumes too.
async fn record_decisions(
    config: &ExperimentConfig,
    out: &Path,
    env: &Arc<TrialEnv>,
) -> Result<(DecisionSet, String)> {
    let path = out.join("decisions.jsonl");
    let mut set = if path.exists() {
        DecisionSet::load(&path)?
    } else {
        DecisionSet::default()
    };
    let missing = missing_decisions(config, &set);
    if !missing.is_empty() {
        eprintln!(
            "recording {} oracle decisions for root seed {} into {}",
            missing.len(),
            config.seed,
            path.display()
        );
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .with_context(|| format!("opening {}", path.display()))?;
        for (task, index) in missing {
            let d = record_oracle(env, config.seed, task, index).await?;
            writeln!(file, "{}", serde_json::to_string(&d)?)?;
            set.decisions.push(d);
        }
    }
    Ok((
        set,
        format!("oracle decisions recorded into {}", path.display()),
    ))
}

fn store(db: &mut ResultsDb, shots: &Path, spec: &TrialSpec, r: TrialResult) -> Result<()> {
    let stem = spec.key.replace('/', "-");
    let before = format!("shots/{stem}.before.png");
    let after = format!("shots/{stem}.after.png");
    std::fs::write(shots.join(format!("{stem}.before.png")), &r.before_png)?;
    std::fs::write(shots.join(format!("{stem}.after.png")), &r.after_png)?;
    let d = &spec.decision;
    let faulty = spec.condition == Condition::Faulty;
    let row = TrialRow {
        trial_key: spec.key.clone(),
        experiment: "detection".into(),
        task: d.task.to_string(),
        layout_index: d.layout_index,
        layout_seed: d.layout_seed,
        trial_seed: spec.trial_seed,
        condition: spec.condition.name().into(),
        fault: faulty.then(|| spec.fault.id().to_string()),
        stage: faulty.then(|| spec.fault.stage().to_string()),
        fired: faulty.then_some(r.witness.is_some()),
        witness: r.witness.as_ref().map(serde_json::to_string).transpose()?,
        decision_source: d.source.clone(),
        reply: d.reply.clone(),
        actions: serde_json::to_string(&r.actions)?,
        executed: r.executed_json,
        tool_message: r.tool_message,
        observation_text: r.observation_text,
        before_png: Some(before),
        after_png: Some(after),
        evidence: r.evidence_json,
        truth_achieved: r.truth.achieved,
        truth_detail: r.truth.detail,
        ledger: serde_json::to_string(&r.ledger)?,
        duration_ms: r.duration_ms,
        layer: faulty.then(|| spec.fault.layer().to_string()),
        not_fired_reason: None,
    };
    let verdicts: Vec<VerdictRow> = r
        .judgements
        .iter()
        .map(|(policy, j)| VerdictRow {
            trial_key: spec.key.clone(),
            policy: policy.clone(),
            verdict: j.verdict.name().into(),
            message: j.message.clone(),
        })
        .collect();
    db.insert_trial(&row, &verdicts)
}
