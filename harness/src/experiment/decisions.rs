//! The recorded decisions a run replays: a configured file, the committed oracle
//! decisions when they cover the run, or else the oracle records the missing ones into
//! the run directory (one line at a time, so an interrupted recording resumes too).

use super::record::record_oracle;
use super::retry::{with_retries, Attempted};
use crate::config::{DecisionSource, ExperimentConfig};
use crate::engine::Engine;
use crate::error::UsageError;
use anyhow::{bail, Context, Result};
use faultline_tasks::{DecisionSet, TaskKind};
use std::path::Path;
use std::sync::Arc;

/// The decisions for this run when they need no browser: a configured file, or the
/// committed ones when they cover the run. `Ok(None)` means the oracle must record them.
pub fn preload(config: &ExperimentConfig) -> Result<Option<(DecisionSet, String)>> {
    match &config.decisions {
        DecisionSource::File(path) => {
            let set = DecisionSet::load(path)?;
            // Recorded model decisions keep only the layouts the model got right on a
            // clean page: missing layouts are skipped (and said so), a task with none at
            // all is an error.
            let missing = missing(config, &set);
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
            Ok(missing(config, &embedded).is_empty().then(|| {
                (
                    embedded,
                    "committed oracle decisions (tasks/decisions)".to_string(),
                )
            }))
        }
    }
}

fn missing(config: &ExperimentConfig, set: &DecisionSet) -> Vec<(TaskKind, u32)> {
    config
        .tasks
        .iter()
        .flat_map(|t| (0..config.layouts).map(move |i| (*t, i)))
        .filter(|(t, i)| set.find(*t, config.seed, *i).is_none())
        .collect()
}

/// Records the missing oracle decisions into the run directory, one line at a time, so
/// an interrupted recording resumes too.
pub async fn record_missing(
    config: &ExperimentConfig,
    out: &Path,
    env: &Arc<Engine>,
) -> Result<(DecisionSet, String)> {
    let path = out.join("decisions.jsonl");
    // A crash while a line was written leaves a torn last line: it was never a finished
    // decision, so it is cut off (and recorded again) rather than fail the resume.
    let repair = crate::jsonl::repair_torn_tail(&path, |line| {
        serde_json::from_str::<serde_json::Value>(line).is_ok()
    })
    .with_context(|| format!("checking {}", path.display()))?;
    if let crate::jsonl::Repair::TornLineDropped(bytes) = repair {
        eprintln!(
            "{}: dropped a torn last line ({} bytes, cut by a crash); it is recorded again",
            path.display(),
            bytes.len()
        );
    }
    let mut set = if path.exists() {
        DecisionSet::load(&path)?
    } else {
        DecisionSet::default()
    };
    let missing = missing(config, &set);
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
            // A browser that dies while the oracle records is replaced like during a phase;
            // the decision is recorded again from the start on a fresh page.
            let key = format!("record:{task}:{index}");
            let d = match with_retries(env, &key, env.liveness.retries, || {
                record_oracle(env, config.seed, task, index)
            })
            .await?
            {
                Attempted::Done(d, _, _) => d,
                Attempted::Failed(failures) => bail!(
                    "recording the oracle decision for {task} layout {index}: {} attempt(s) failed ({}); `--resume` records it again",
                    failures.len(),
                    failures.last().map(|f| f.reason.as_str()).unwrap_or("")
                ),
            };
            crate::jsonl::append_line(&mut file, &serde_json::to_string(&d)?)
                .with_context(|| format!("appending to {}", path.display()))?;
            set.decisions.push(d);
        }
    }
    Ok((
        set,
        format!("oracle decisions recorded into {}", path.display()),
    ))
}
