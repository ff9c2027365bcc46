//! The detection experiment: every recorded decision replayed once with its stage fault
//! (faulty trial) and once clean (working trial), every policy judging the same stored
//! trial, results written to SQLite as they finish.
//!
//! Trials run concurrently (`jobs`), each in a fresh browser context with a fresh ledger
//! scope. Each trial is stored atomically under a stable key, so an interrupted run
//! resumes by skipping the keys it already has.

use crate::agent::cassette::Cassette;
use crate::agent::openai::OpenAiAgent;
use crate::agent::scripted::ScriptedAgent;
use crate::agent::{Agent, ReplayAgent};
use crate::browser::{find_chromium, BrowserHandle};
use crate::cli::UsageError;
use crate::config::{ConfigText, DecisionSource, ExperimentConfig, Overrides};
use crate::episode::{run_episode, EpisodeResult, EpisodeSpec};
use crate::record::record_oracle;
use crate::trial::{run_trial, Condition, Scorer, TrialEnv, TrialResult};
use anyhow::{anyhow, bail, Context, Result};
use faultline_analysis::db::{EpisodeRow, EpisodeStepRow, ResultsDb, TrialRow, VerdictRow};
use faultline_faults::{Fault, FaultPlan};
use faultline_policies::{Registry, VerificationPolicy};
use faultline_sites::FixtureServer;
use faultline_tasks::seed::derive;
use faultline_tasks::{Decision, DecisionSet, TaskKind};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;
use std::collections::BTreeMap;
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
    /// Stop after this many newly finished episodes (for tests of resume).
    pub max_episodes: Option<usize>,
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
    /// The recovery phase, when the config enables it.
    pub recovery: Option<PhaseSummary>,
    pub report: PathBuf,
}

/// A trial to run: faulty when it has a fault, working when not.
#[derive(Clone)]
struct TrialSpec {
    key: String,
    decision: Arc<Decision>,
    fault: Option<Fault>,
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

    // The agent is built before the browser starts, so a bad endpoint config or a
    // missing replay cassette stops the run before any trial.
    let agent = match req.config.recovery.enabled {
        true => Some(build_agent(
            &req.config.recovery.agent,
            &req.config,
            &req.out,
        )?),
        false => None,
    };
    let harness = Harness::start(&req.config).await?;
    let result = run_with(&req, &harness, &mut db, &identity, preloaded, agent).await;
    harness.shutdown().await;
    result
}

async fn run_with(
    req: &RunRequest,
    harness: &Harness,
    db: &mut ResultsDb,
    identity: &str,
    preloaded: Option<(DecisionSet, String)>,
    agent: Option<Arc<dyn Agent>>,
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
            "faults": config.faults,
            "decisions": decisions.1,
            "recovery": config.recovery.enabled.then(|| json!({
                "layouts": config.recovery.layouts,
                "policies": config.recovery.policies,
                "runs": config.recovery.runs,
                "agent": config.recovery.agent,
                "budget": config.recovery.limits.budget,
                "max_steps": config.recovery.limits.max_steps,
                "faults": config.recovery.faults,
            })),
            "config_as_passed": { "name": req.config_text.name, "text": req.config_text.text, "overrides": req.overrides },
            "config_resolved": config,
        });
        db.set_meta("manifest", &serde_json::to_string_pretty(&manifest)?)?;
        db.set_meta("policies", &serde_json::to_string(&config.policies)?)?;
        db.set_meta("config_identity", identity)?;
    }

    let shots = req.out.join("shots");
    std::fs::create_dir_all(&shots)?;
    let detection = run_detection(req, &env, db, &decisions.0, &shots).await?;
    let recovery = match agent {
        Some(agent) => Some(run_recovery(req, &env, db, &decisions.0, &shots, agent).await?),
        None => None,
    };

    let analysis = faultline_analysis::report::default_config(db)?;
    let files = faultline_analysis::report::write_all(db, &req.out, &req.out, &analysis)?;
    Ok(RunSummary {
        out: req.out.clone(),
        trials_total: detection.total,
        trials_run: detection.run,
        trials_skipped: detection.skipped,
        detection_wall: detection.wall,
        recovery,
        report: files.report_md,
    })
}

/// Counts and wall time of one phase.
#[derive(Debug, Clone)]
pub struct PhaseSummary {
    pub total: usize,
    pub run: usize,
    pub skipped: usize,
    pub wall: Duration,
}

/// Of a phase's `items` (fixed before anything runs), those not yet stored, at most
/// `max`: returns (total, already stored, to run).
fn pending<T>(
    items: Vec<T>,
    key: impl Fn(&T) -> &String,
    finished: &std::collections::BTreeSet<String>,
    max: Option<usize>,
) -> (usize, usize, Vec<T>) {
    let total = items.len();
    let todo: Vec<T> = items
        .into_iter()
        .filter(|i| !finished.contains(key(i)))
        .collect();
    let skipped = total - todo.len();
    let todo = todo.into_iter().take(max.unwrap_or(usize::MAX)).collect();
    (total, skipped, todo)
}

fn progress_bar(show: bool, what: &str, total: usize, skipped: usize) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(total as u64);
    bar.set_style(
        ProgressStyle::with_template(&format!(
            "{what} {{bar:40}} {{pos}}/{{len}}  {{elapsed}} elapsed, ETA {{eta}}"
        ))
        .expect("valid template"),
    );
    bar.set_position(skipped as u64);
    bar.reset_eta();
    bar
}

/// Runs a phase: `work` on every item with at most `jobs` at once, each finished result
/// handed to `store` in completion order (storage order does not affect results), with a
/// progress bar over the phase's `(total, already stored)`.
async fn run_phase<S, R, Fut>(
    progress: bool,
    name: &str,
    (total, skipped): (usize, usize),
    items: Vec<S>,
    jobs: usize,
    work: impl Fn(S) -> Fut,
    mut store: impl FnMut(R) -> Result<()>,
) -> Result<PhaseSummary>
where
    Fut: std::future::Future<Output = Result<R>> + Send + 'static,
    R: Send + 'static,
{
    let bar = progress_bar(progress, name, total, skipped);
    let started = Instant::now();
    let mut run = 0usize;
    let mut queue = items.into_iter();
    let mut running: JoinSet<Result<R>> = JoinSet::new();
    for item in queue.by_ref().take(jobs.max(1)) {
        running.spawn(work(item));
    }
    while let Some(joined) = running.join_next().await {
        let result = joined.context("a task panicked")??;
        store(result)?;
        run += 1;
        bar.inc(1);
        if let Some(next) = queue.next() {
            running.spawn(work(next));
        }
    }
    bar.finish_and_clear();
    Ok(PhaseSummary {
        total,
        run,
        skipped,
        wall: started.elapsed(),
    })
}

async fn run_detection(
    req: &RunRequest,
    env: &Arc<TrialEnv>,
    db: &mut ResultsDb,
    decisions: &DecisionSet,
    shots: &Path,
) -> Result<PhaseSummary> {
    let config = &req.config;
    let finished = db.finished_keys()?;
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
    let (total, skipped, todo) = pending(specs, |s| &s.key, &finished, req.max_trials);
    run_phase(
        req.progress,
        "detection",
        (total, skipped),
        todo,
        config.jobs,
        |spec: TrialSpec| {
            let env = env.clone();
            async move {
                let plan = spec.fault.map(|f| FaultPlan::new(f, spec.trial_seed));
                let mut result = run_trial(&env, &spec.decision, plan).await;
                if result.is_err() {
                    // One retry: a browser hiccup should not sink a long run.
                    result = run_trial(&env, &spec.decision, plan).await;
                }
                let result = result.with_context(|| format!("trial {}", spec.key))?;
                Ok((spec, result))
            }
        },
        |(spec, result)| store(db, shots, &spec, result),
    )
    .await
}

/// An episode to run.
struct EpisodeTask {
    key: String,
    decision: Arc<Decision>,
    fault: Fault,
    policy: String,
    run: u32,
    seed: u64,
}

async fn run_recovery(
    req: &RunRequest,
    env: &Arc<TrialEnv>,
    db: &mut ResultsDb,
    decisions: &DecisionSet,
    shots: &Path,
    agent: Arc<dyn Agent>,
) -> Result<PhaseSummary> {
    let config = &req.config;
    let rc = &config.recovery;
    let registry = Registry::default();
    let mut policies: BTreeMap<String, Arc<dyn VerificationPolicy>> = BTreeMap::new();
    for name in &rc.policies {
        let p = registry.build(name).map_err(|e| anyhow!(e))?;
        policies.insert(name.clone(), Arc::from(p));
    }
    let finished = db.finished_episode_keys()?;
    // Fixed before any agent call: the first `layouts` layouts of every task, every
    // (task, fault) pair, every policy, every run.
    let mut tasks = Vec::new();
    for (task, fault) in config.recovery_pairs() {
        for policy in &rc.policies {
            for run in 0..rc.runs {
                for index in 0..rc.layouts {
                    let Some(decision) = decisions.find(task, config.seed, index) else {
                        continue;
                    };
                    let key = format!(
                        "recovery/{task}/{}/{policy}/{}/r{run}/{index:03}",
                        fault.id(),
                        rc.agent
                    );
                    tasks.push(EpisodeTask {
                        seed: derive(config.seed, &["episode", &key]),
                        key,
                        decision: Arc::new(decision.clone()),
                        fault,
                        policy: policy.clone(),
                        run,
                    });
                }
            }
        }
    }
    let (total, skipped, todo) = pending(tasks, |t| &t.key, &finished, req.max_episodes);
    let limits = rc.limits;
    run_phase(
        req.progress,
        "recovery ",
        (total, skipped),
        todo,
        config.jobs,
        |task: EpisodeTask| {
            let env = env.clone();
            let agent = agent.clone();
            let policy = policies[&task.policy].clone();
            async move {
                let spec = EpisodeSpec {
                    decision: &task.decision,
                    fault: FaultPlan::new(task.fault, task.seed),
                    policy: policy.as_ref(),
                    agent: agent.as_ref(),
                    limits,
                    seed: task.seed,
                };
                let result = run_episode(&env, &spec)
                    .await
                    .with_context(|| format!("episode {}", task.key))?;
                Ok((task, agent.name().to_string(), result))
            }
        },
        |(task, agent_name, result)| store_episode(db, shots, &task, &agent_name, result),
    )
    .await
}

/// Builds the agent a config names; the `openai` agent's cassette lives in `out` unless
/// the config says where.
pub fn build_agent(name: &str, config: &ExperimentConfig, out: &Path) -> Result<Arc<dyn Agent>> {
    Ok(match name {
        "replay" => Arc::new(ReplayAgent),
        "scripted" => Arc::new(ScriptedAgent),
        "openai" => {
            let path = config.cassette.path_in(out);
            let cassette =
                Cassette::open(&path, config.cassette.mode).map_err(|e| anyhow!(UsageError(e)))?;
            Arc::new(
                OpenAiAgent::new(config.openai.clone(), Arc::new(cassette))
                    .map_err(|e| anyhow!(UsageError(e.0)))?,
            )
        }
        other => bail!(UsageError(format!(
            "unknown agent `{other}` (available: {})",
            crate::config::AGENTS.join(", ")
        ))),
    })
}

fn store_episode(
    db: &mut ResultsDb,
    shots: &Path,
    task: &EpisodeTask,
    agent: &str,
    r: EpisodeResult,
) -> Result<()> {
    let stem = task.key.replace('/', "-");
    std::fs::write(shots.join(format!("{stem}.before.png")), &r.before.png)?;
    let d = &task.decision;
    let mut steps = Vec::new();
    for s in &r.steps {
        let screenshot = match &s.observation {
            Some(o) => {
                let name = format!("{stem}.s{}.png", s.step);
                std::fs::write(shots.join(&name), &o.png)?;
                Some(format!("shots/{name}"))
            }
            None => None,
        };
        steps.push(EpisodeStepRow {
            episode_key: task.key.clone(),
            step: s.step,
            source: if s.from_decision { "decision" } else { "agent" }.into(),
            reply: s.reply.clone(),
            parse_error: s.parse_error.clone(),
            actions: serde_json::to_string(&s.actions)?,
            executed: s.executed_json.clone(),
            browser_actions: s.browser_actions,
            tool_message: s.tool_message.clone(),
            verdict: s.feedback.as_ref().map(|f| f.verdict),
            policy_message: s.feedback.as_ref().map(|f| f.message.clone()),
            observation_text: s.observation.as_ref().map(|o| o.text.clone()),
            screenshot,
            witness: s.witness.as_ref().map(serde_json::to_string).transpose()?,
            truth_achieved: s.truth.achieved,
            truth_detail: s.truth.detail.clone(),
            ledger_events: serde_json::to_string(&s.ledger_events)?,
            usage: s.usage.as_ref().map(serde_json::to_string).transpose()?,
        });
    }
    let row = EpisodeRow {
        episode_key: task.key.clone(),
        task: d.task,
        fault: task.fault,
        stage: task.fault.stage(),
        layer: task.fault.layer(),
        policy: task.policy.clone(),
        agent: agent.to_string(),
        run: task.run,
        layout_index: d.layout_index,
        layout_seed: d.layout_seed,
        episode_seed: task.seed,
        fired: r.fired,
        success: r.truth.achieved,
        truth_detail: r.truth.detail.clone(),
        browser_actions: r.browser_actions,
        steps: r.steps.len() as u32,
        stop_reason: r.stop_reason,
        detected_at_first_step: r.detected_at_first_step,
        first_verdict: r.first_verdict,
        error: r.error.clone(),
        model_calls: r.model_calls,
        prompt_tokens: r.usage.map(|u| u.prompt_tokens),
        completion_tokens: r.usage.map(|u| u.completion_tokens),
        ledger: serde_json::to_string(&r.ledger)?,
        duration_ms: r.duration_ms,
    };
    db.insert_episode(&row, &steps)
}

/// The decisions for this run when they need no browser: a configured file, or the
/// committed ones when they cover the run. `Ok(None)` means the oracle must record them.
fn preload_decisions(config: &ExperimentConfig) -> Result<Option<(DecisionSet, String)>> {
    match &config.decisions {
        DecisionSource::File(path) => {
            let set = DecisionSet::load(path)?;
            // Recorded model decisions keep only the layouts the model got right on a
            // clean page: missing layouts are skipped (and said so), a task with none at
            // all is an error.
            let missing = missing_decisions(config, &set);
            for task in &config.tasks {
                if missing.iter().filter(|(t, _)| t == task).count() == config.layouts as usize {
                    bail!(UsageError(format!(
                        "{}: no decision for any {task} layout under root seed {} (expected layouts 0 to {})",
                        path.display(),
                        config.seed,
                        config.layouts - 1
                    )));
                }
            }
            let note = if missing.is_empty() {
                path.display().to_string()
            } else {
                format!(
                    "{} ({} task-layouts have no decision and are skipped)",
                    path.display(),
                    missing.len()
                )
            };
            Ok(Some((set, note)))
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
    let condition = if spec.fault.is_some() {
        Condition::Faulty
    } else {
        Condition::Working
    };
    let row = TrialRow {
        trial_key: spec.key.clone(),
        experiment: "detection".into(),
        task: d.task,
        layout_index: d.layout_index,
        layout_seed: d.layout_seed,
        trial_seed: spec.trial_seed,
        condition,
        fault: spec.fault,
        stage: spec.fault.map(|f| f.stage()),
        fired: spec.fault.map(|_| r.witness.is_some()),
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
        layer: spec.fault.map(|f| f.layer()),
        not_fired_reason: match (spec.fault, &r.witness) {
            (Some(f), None) => Some(f.spec().not_fired_when.to_string()),
            _ => None,
        },
    };
    let verdicts: Vec<VerdictRow> = r
        .judgements
        .iter()
        .map(|(policy, j)| VerdictRow {
            trial_key: spec.key.clone(),
            policy: policy.clone(),
            verdict: j.verdict,
            message: j.message.clone(),
        })
        .collect();
    db.insert_trial(&row, &verdicts)
}
