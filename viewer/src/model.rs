//! The data files: what the pages load, as documented JSON.
//!
//! Row fields that are (or may become) typed values are read through `to_string()`, so
//! this module depends only on their text form, which is what the database stores.

use crate::{Assets, Thumbs};
use anyhow::Result;
use faultline_analysis::db::{EpisodeRow, EpisodeStepRow, ResultsDb, TrialRow, VerdictRow};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// Version of the data files' shapes (bumped when a field changes meaning).
pub const FORMAT: u32 = 1;

/// The file name (without `.js`) of a trial's data file.
pub fn trial_id(key: &str) -> String {
    slug(key)
}

/// The file name (without `.js`) of an episode's data file.
pub fn episode_id(key: &str) -> String {
    slug(key)
}

/// `/` becomes `-` (as in the screenshots' names); anything outside `[A-Za-z0-9._-]`
/// becomes `_`.
fn slug(key: &str) -> String {
    key.chars()
        .map(|c| match c {
            '/' => '-',
            c if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') => c,
            _ => '_',
        })
        .collect()
}

/// Width and height in pixels.
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct Size {
    pub width: f64,
    pub height: f64,
}

/// What the whole run contributes to every page.
pub(crate) struct Run {
    pub manifest: Value,
    pub policies: Vec<String>,
    /// The screenshots' size (the model's image space).
    pub image: Option<Size>,
    pub viewport: Option<Size>,
    /// The recovery phase's browser-action budget.
    pub budget: Option<u64>,
}

fn size(v: &Value) -> Option<Size> {
    Some(Size {
        width: v.get("width")?.as_f64()?,
        height: v.get("height")?.as_f64()?,
    })
}

impl Run {
    pub(crate) fn load(db: &ResultsDb) -> Result<Run> {
        let record = db.manifest()?;
        let manifest: Value = match &record {
            Some(m) => serde_json::to_value(m)?,
            None => Value::Null,
        };
        let mut policies: Vec<String> = db
            .meta("policies")?
            .and_then(|p| serde_json::from_str(&p).ok())
            .unwrap_or_default();
        if policies.is_empty() {
            for v in db.verdicts()? {
                let p = v.policy.to_string();
                if !policies.contains(&p) {
                    policies.push(p);
                }
            }
        }
        // The resolved config is the harness's own type, stored untyped in the record.
        let resolved = record.as_ref().map_or(&Value::Null, |m| &m.config_resolved);
        Ok(Run {
            image: size(&resolved["image"]),
            viewport: size(&resolved["viewport"]),
            budget: record
                .as_ref()
                .and_then(|m| m.recovery.as_ref())
                .map(|r| u64::from(r.budget))
                .or_else(|| resolved["recovery"]["limits"]["budget"].as_u64()),
            policies,
            manifest,
        })
    }

    /// Viewport pixels -> screenshot pixels.
    fn scale(&self) -> (f64, f64) {
        match (self.image, self.viewport) {
            (Some(i), Some(v)) if v.width > 0.0 && v.height > 0.0 => {
                (i.width / v.width, i.height / v.height)
            }
            _ => (1.0, 1.0),
        }
    }
}

/// The index: everything the run page's browser filters on.
#[derive(Serialize)]
pub(crate) struct Index {
    pub kind: &'static str,
    pub format: u32,
    pub policies: Vec<String>,
    pub image: Option<Size>,
    pub viewport: Option<Size>,
    pub budget: Option<u64>,
    pub trials: Vec<TrialSummary>,
    pub episodes: Vec<EpisodeSummary>,
}

#[derive(Serialize)]
pub(crate) struct TrialSummary {
    pub id: String,
    pub key: String,
    pub task: String,
    pub layout: u32,
    /// `faulty` or `working`.
    pub condition: String,
    pub fault: Option<String>,
    pub stage: Option<String>,
    pub layer: Option<String>,
    /// `null` on working trials.
    pub fired: Option<bool>,
    /// The ledger's verdict: did the intended outcome happen?
    pub truth: bool,
    /// Policy -> `success`, `no_change` or `fail`.
    pub verdicts: BTreeMap<String, String>,
    /// Policy -> `caught`, `missed`, `not_fired`, `false_alarm`, `correct` or
    /// `unconfirmed` (see [`outcome`]).
    pub outcomes: BTreeMap<String, String>,
    pub thumb: Option<String>,
}

#[derive(Serialize)]
pub(crate) struct EpisodeSummary {
    pub id: String,
    pub key: String,
    pub task: String,
    pub fault: String,
    pub stage: String,
    pub layer: String,
    pub policy: String,
    pub agent: String,
    pub run: u32,
    pub layout: u32,
    pub fired: bool,
    /// The ledger's verdict at the end.
    pub recovered: bool,
    pub stop_reason: String,
    pub first_verdict: String,
    pub detected: bool,
    pub steps: u32,
    pub browser_actions: u32,
    pub thumb: Option<String>,
}

/// How a policy's verdict scores against the ledger (the rules of `results/README.md`):
/// on a fired faulty trial `caught` when it agrees with the ledger, `missed` otherwise;
/// `not_fired` when the fault left no witness; on a working trial `false_alarm` when the
/// ledger confirms the outcome and the verdict is not `success`, `correct` when it is,
/// `unconfirmed` when the ledger did not confirm the outcome.
pub(crate) fn outcome(t: &TrialRow, verdict: &str) -> &'static str {
    let success = verdict == "success";
    // Through its text form: the column may be a string or a typed value.
    let condition = t.condition.to_string();
    if condition == "faulty" {
        if t.fired != Some(true) {
            "not_fired"
        } else if success == t.truth_achieved {
            "caught"
        } else {
            "missed"
        }
    } else if !t.truth_achieved {
        "unconfirmed"
    } else if success {
        "correct"
    } else {
        "false_alarm"
    }
}

fn opt<T: ToString>(v: &Option<T>) -> Option<String> {
    v.as_ref().map(|x| x.to_string())
}

pub(crate) fn index(
    db: &ResultsDb,
    run: &Run,
    assets: &mut Assets,
    thumbs: &mut Thumbs,
) -> Result<Index> {
    let mut verdicts: BTreeMap<String, Vec<VerdictRow>> = BTreeMap::new();
    for v in db.verdicts()? {
        verdicts.entry(v.trial_key.clone()).or_default().push(v);
    }
    let trials = db
        .trials()?
        .iter()
        .map(|t| {
            let vs = verdicts.remove(&t.trial_key).unwrap_or_default();
            let shot = t.after_png.as_ref().or(t.before_png.as_ref());
            TrialSummary {
                id: trial_id(&t.trial_key),
                key: t.trial_key.clone(),
                task: t.task.to_string(),
                layout: t.layout_index,
                condition: t.condition.to_string(),
                fault: opt(&t.fault),
                stage: opt(&t.stage),
                layer: opt(&t.layer),
                fired: t.fired,
                truth: t.truth_achieved,
                verdicts: vs
                    .iter()
                    .map(|v| (v.policy.to_string(), v.verdict.to_string()))
                    .collect(),
                outcomes: vs
                    .iter()
                    .map(|v| {
                        (
                            v.policy.to_string(),
                            outcome(t, &v.verdict.to_string()).to_string(),
                        )
                    })
                    .collect(),
                thumb: shot.and_then(|s| thumbs.request(&assets.source(s))),
            }
        })
        .collect();
    let mut episodes = Vec::new();
    for e in db.episodes()? {
        let steps = db.episode_steps(&e.episode_key)?;
        let shot = steps.iter().rev().find_map(|s| s.screenshot.clone());
        episodes.push(EpisodeSummary {
            id: episode_id(&e.episode_key),
            key: e.episode_key.clone(),
            task: e.task.to_string(),
            fault: e.fault.to_string(),
            stage: e.stage.to_string(),
            layer: e.layer.to_string(),
            policy: e.policy.to_string(),
            agent: e.agent.to_string(),
            run: e.run,
            layout: e.layout_index,
            fired: e.fired,
            recovered: e.success,
            stop_reason: e.stop_reason.to_string(),
            first_verdict: e.first_verdict.map_or("none", |v| v.name()).to_string(),
            detected: e.detected_at_first_step,
            steps: e.steps,
            browser_actions: e.browser_actions,
            thumb: shot.and_then(|s| thumbs.request(&assets.source(&s))),
        });
    }
    Ok(Index {
        kind: "index",
        format: FORMAT,
        policies: run.policies.clone(),
        image: run.image,
        viewport: run.viewport,
        budget: run.budget,
        trials,
        episodes,
    })
}

/// A point to draw over a screenshot, in the screenshot's pixels.
#[derive(Serialize)]
pub(crate) struct Point {
    /// `intended` (where the click was meant to land, from the witness), `parsed` (the
    /// action as the model wrote it, image pixels) or `executed` (where the browser
    /// acted, the viewport point scaled to the image).
    pub role: &'static str,
    pub x: f64,
    pub y: f64,
    /// e.g. `click 1`.
    pub label: String,
}

fn xy(v: &Value) -> Option<(f64, f64)> {
    Some((v.get("x")?.as_f64()?, v.get("y")?.as_f64()?))
}

fn points(run: &Run, actions: &Value, executed: &Value, witness: &Value) -> Vec<Point> {
    let (sx, sy) = run.scale();
    let mut out = Vec::new();
    if let Some((x, y)) = xy(&witness["intended"]) {
        out.push(Point {
            role: "intended",
            x: x * sx,
            y: y * sy,
            label: "intended".into(),
        });
    }
    for (i, a) in actions.as_array().into_iter().flatten().enumerate() {
        if let Some((x, y)) = xy(a) {
            out.push(Point {
                role: "parsed",
                x,
                y,
                label: format!("{} {}", a["kind"].as_str().unwrap_or("action"), i + 1),
            });
        }
    }
    for (i, e) in executed.as_array().into_iter().flatten().enumerate() {
        if let Some((x, y)) = xy(&e["viewport_point"]) {
            out.push(Point {
                role: "executed",
                x: x * sx,
                y: y * sy,
                label: format!(
                    "{} {}",
                    e["action"]["kind"].as_str().unwrap_or("action"),
                    i + 1
                ),
            });
        }
    }
    out
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()))
}

fn json_opt(text: &Option<String>) -> Value {
    text.as_deref().map(json).unwrap_or(Value::Null)
}

#[derive(Serialize)]
pub(crate) struct Truth {
    pub achieved: bool,
    pub detail: String,
}

#[derive(Serialize)]
pub(crate) struct PolicyVerdict {
    pub policy: String,
    pub verdict: String,
    pub message: String,
    pub outcome: &'static str,
}

#[derive(Serialize)]
pub(crate) struct Trial {
    pub kind: &'static str,
    pub format: u32,
    pub id: String,
    pub key: String,
    pub task: String,
    pub layout_index: u32,
    /// Seeds are strings: they are 64-bit and JavaScript numbers are not.
    pub layout_seed: String,
    pub trial_seed: String,
    pub condition: String,
    pub fault: Option<String>,
    pub stage: Option<String>,
    pub layer: Option<String>,
    pub fired: Option<bool>,
    pub not_fired_reason: Option<String>,
    pub witness: Value,
    pub decision_source: String,
    pub reply: String,
    pub actions: Value,
    pub executed: Value,
    pub points: Vec<Point>,
    pub tool_message: String,
    pub observation_text: String,
    pub before: Option<String>,
    pub after: Option<String>,
    pub truth: Truth,
    pub verdicts: Vec<PolicyVerdict>,
    pub evidence: Value,
    pub ledger: Value,
    pub duration_ms: f64,
}

fn shot(assets: &mut Assets, rel: &Option<String>) -> Option<String> {
    rel.as_deref()
        .filter(|r| assets.exists(r))
        .map(|r| assets.link(r))
}

pub(crate) fn trial(
    t: &TrialRow,
    verdicts: &[VerdictRow],
    run: &Run,
    assets: &mut Assets,
) -> Result<Trial> {
    let actions = json(&t.actions);
    let executed = json(&t.executed);
    let witness = json_opt(&t.witness);
    // Report order (the run's policies), then any others.
    let rank = |p: &str| {
        run.policies
            .iter()
            .position(|q| q == p)
            .unwrap_or(usize::MAX)
    };
    let mut vs: Vec<PolicyVerdict> = verdicts
        .iter()
        .map(|v| {
            let verdict = v.verdict.to_string();
            PolicyVerdict {
                policy: v.policy.to_string(),
                outcome: outcome(t, &verdict),
                verdict,
                message: v.message.clone(),
            }
        })
        .collect();
    vs.sort_by(|a, b| (rank(&a.policy), &a.policy).cmp(&(rank(&b.policy), &b.policy)));
    Ok(Trial {
        kind: "trial",
        format: crate::FORMAT,
        id: trial_id(&t.trial_key),
        key: t.trial_key.clone(),
        task: t.task.to_string(),
        layout_index: t.layout_index,
        layout_seed: t.layout_seed.to_string(),
        trial_seed: t.trial_seed.to_string(),
        condition: t.condition.to_string(),
        fault: opt(&t.fault),
        stage: opt(&t.stage),
        layer: opt(&t.layer),
        fired: t.fired,
        not_fired_reason: t.not_fired_reason.clone(),
        points: points(run, &actions, &executed, &witness),
        witness,
        decision_source: t.decision_source.to_string(),
        reply: t.reply.clone(),
        actions,
        executed,
        tool_message: t.tool_message.clone(),
        observation_text: t.observation_text.clone(),
        before: shot(assets, &t.before_png),
        after: shot(assets, &t.after_png),
        truth: Truth {
            achieved: t.truth_achieved,
            detail: t.truth_detail.clone(),
        },
        verdicts: vs,
        evidence: json(&t.evidence),
        ledger: json(&t.ledger),
        duration_ms: t.duration_ms,
    })
}

#[derive(Serialize)]
pub(crate) struct Step {
    pub step: u32,
    /// `decision` (step 0, the replayed recorded decision) or `agent`.
    pub source: String,
    pub reply: String,
    pub parse_error: Option<String>,
    pub actions: Value,
    pub executed: Value,
    /// Drawn over `observed`.
    pub points: Vec<Point>,
    pub browser_actions: u32,
    /// Budget left after this step (`null` without a budget); the replayed decision
    /// (step 0) is not charged.
    pub budget_left: Option<i64>,
    pub tool_message: String,
    pub verdict: Option<String>,
    pub policy_message: Option<String>,
    pub observation_text: Option<String>,
    /// The screenshot the reply was written from (the episode's first observation for
    /// step 0, the previous step's screenshot after).
    pub observed: Option<String>,
    /// The screenshot taken after this step.
    pub screenshot: Option<String>,
    pub witness: Value,
    /// The ledger's verdict right after the step.
    pub truth: Truth,
    pub ledger_events: Value,
    pub usage: Value,
}

#[derive(Serialize)]
pub(crate) struct Episode {
    pub kind: &'static str,
    pub format: u32,
    pub id: String,
    pub key: String,
    pub task: String,
    pub fault: String,
    pub stage: String,
    pub layer: String,
    pub policy: String,
    pub agent: String,
    pub run: u32,
    pub layout_index: u32,
    pub layout_seed: String,
    pub episode_seed: String,
    pub fired: bool,
    pub recovered: bool,
    pub truth_detail: String,
    pub browser_actions: u32,
    pub steps_taken: u32,
    pub stop_reason: String,
    pub detected_at_first_step: bool,
    pub first_verdict: String,
    pub error: Option<String>,
    pub model_calls: u32,
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    pub budget: Option<u64>,
    /// The observation before step 0.
    pub before: Option<String>,
    pub steps: Vec<Step>,
    pub ledger: Value,
    pub duration_ms: f64,
}

pub(crate) fn episode(
    e: &EpisodeRow,
    steps: &[EpisodeStepRow],
    run: &Run,
    assets: &mut Assets,
) -> Result<Episode> {
    // `shots/<episode>.before.png`, beside the steps' `.s<N>.png`.
    let before_rel = steps
        .iter()
        .find_map(|s| s.screenshot.clone())
        .and_then(|s| {
            let stem = s.strip_suffix(".png")?;
            let dot = stem.rfind(".s")?;
            Some(format!("{}.before.png", &stem[..dot]))
        });
    let before = shot(assets, &before_rel);
    let mut observed = before.clone();
    let mut spent: i64 = 0;
    let mut out = Vec::new();
    for s in steps {
        let actions = json(&s.actions);
        let executed = json(&s.executed);
        let witness = json_opt(&s.witness);
        if s.step > 0 {
            spent += i64::from(s.browser_actions);
        }
        let screenshot = shot(assets, &s.screenshot);
        out.push(Step {
            step: s.step,
            source: s.source.to_string(),
            reply: s.reply.clone(),
            parse_error: s.parse_error.clone(),
            points: points(run, &actions, &executed, &Value::Null),
            actions,
            executed,
            browser_actions: s.browser_actions,
            budget_left: run.budget.map(|b| b as i64 - spent),
            tool_message: s.tool_message.clone(),
            verdict: opt(&s.verdict),
            policy_message: s.policy_message.clone(),
            observation_text: s.observation_text.clone(),
            observed: observed.clone(),
            screenshot: screenshot.clone(),
            witness,
            truth: Truth {
                achieved: s.truth_achieved,
                detail: s.truth_detail.clone(),
            },
            ledger_events: json(&s.ledger_events),
            usage: json_opt(&s.usage),
        });
        if screenshot.is_some() {
            observed = screenshot;
        }
    }
    Ok(Episode {
        kind: "episode",
        format: crate::FORMAT,
        id: episode_id(&e.episode_key),
        key: e.episode_key.clone(),
        task: e.task.to_string(),
        fault: e.fault.to_string(),
        stage: e.stage.to_string(),
        layer: e.layer.to_string(),
        policy: e.policy.to_string(),
        agent: e.agent.to_string(),
        run: e.run,
        layout_index: e.layout_index,
        layout_seed: e.layout_seed.to_string(),
        episode_seed: e.episode_seed.to_string(),
        fired: e.fired,
        recovered: e.success,
        truth_detail: e.truth_detail.clone(),
        browser_actions: e.browser_actions,
        steps_taken: e.steps,
        stop_reason: e.stop_reason.to_string(),
        detected_at_first_step: e.detected_at_first_step,
        first_verdict: e.first_verdict.map_or("none", |v| v.name()).to_string(),
        error: e.error.clone(),
        model_calls: e.model_calls,
        prompt_tokens: e.prompt_tokens,
        completion_tokens: e.completion_tokens,
        budget: run.budget,
        before,
        steps: out,
        ledger: json(&e.ledger),
        duration_ms: e.duration_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_follow_the_screenshot_names() {
        assert_eq!(
            trial_id("detection/grid/000/execute.unscaled_coordinates"),
            "detection-grid-000-execute.unscaled_coordinates"
        );
        assert_eq!(episode_id("recovery/a b/r0"), "recovery-a_b-r0");
    }
}
