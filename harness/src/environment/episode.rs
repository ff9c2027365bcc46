//! Recovery episodes served to an external harness.
//!
//! A run under `[harness]` with `[recovery]` enabled serves, after its detection trials,
//! one episode per recovery (task, fault) pair, layout and run. The claim hands the
//! harness what a trial's does (the recorded reply with its format, coordinate space and
//! image size, the start URL under a fresh scope with the site-side fault armed) plus the
//! episode's budget — the same [`EpisodeLimits`] a built-in episode runs under — and a
//! longer lease. Then:
//!
//! 1. the harness replays the reply (step 0), observes and judges it with its own
//!    verifier, and **posts the step** (`POST /v1/leases/{lease}/steps`): faultline notes
//!    its captures and answer, lets the page's in-flight events in and judges the ledger
//!    as it stands — exactly the checkpoint a built-in episode makes after every step —
//!    and answers only with what is left of the budget (never the truth);
//! 2. its agent decides the next reply from what the harness saw and was told, and the
//!    harness executes, judges and posts it as step 1, 2, ...;
//! 3. when the agent stops (or answers, or runs out of budget or steps or time), the
//!    harness **reports** how it stopped; faultline takes the ledger and stores the
//!    episode in the same schema as a built-in one, with the harness's name as both the
//!    policy and the agent.
//!
//! What the harness cannot give is stored as nothing rather than invented: no model
//! calls or tokens, no per-step screenshot. A step or report that breaks the episode's
//! rules (a reply over the budget, a step past the cap, a malformed body) is an
//! infrastructure error of the item, which is offered again: never an outcome.
//!
//! Whether the fault *fired* is asked per step exactly as for a trial (the probe's ledger
//! test on the step's own events, the site's witness, the rewritten reply), so a harness
//! without a probe's defect has episodes stored as not fired, which the recovery tables
//! count apart; `recovered` is the ledger's truth at the end.

use super::board::{Board, EpisodeItem, Item, Lease};
use super::offer::{probe_witness, Probe};
use super::progress::Checkpointed;
use super::report::{
    check_captures, check_executed, let_late_events_in, CaptureInterval, MAX_TEXT_BYTES,
};
use super::Shared;
use crate::agent::{Agent, AgentError, AgentReply, AgentView};
use crate::engine::episode::EpisodeLimits;
use crate::engine::roundtrip::parse::MAX_REPLY_BYTES;
use crate::engine::roundtrip::CaptureMark;
use crate::experiment::detection::TrialSpec;
use crate::experiment::items::EpisodeTask;
use anyhow::Result;
use faultline_analysis::db::manifest::RecoveryDesign;
use faultline_analysis::db::{EpisodeRow, EpisodeStepRow};
use faultline_sites::{Ledger, LedgerEvent, Scope};
use faultline_tasks::{parse_reply, Action, DecisionSet, StopReason, Verdict};
use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

/// The agent of an external harness: only a name, under which its episodes are keyed and
/// stored. It acts inside the harness, never inside faultline.
struct ExternalAgent(String);

impl Agent for ExternalAgent {
    fn name(&self) -> &str {
        &self.0
    }

    fn reply<'a>(&'a self, _: AgentView<'a>) -> BoxFuture<'a, Result<AgentReply, AgentError>> {
        Box::pin(async {
            Err(AgentError::new(
                "an external harness's agent acts in the harness, not in faultline",
            ))
        })
    }
}

/// The run's episodes for the harness `name`, in the built-in phase's order and under its
/// keys (`recovery/<task>/<fault>/<name>/<name>/r<run>/<layout>`); none when recovery is
/// off.
pub(crate) fn episodes(
    config: &crate::config::ExperimentConfig,
    decisions: &DecisionSet,
    name: &str,
) -> Vec<EpisodeTask> {
    if !config.recovery.enabled {
        return Vec::new();
    }
    let agent: Arc<dyn Agent> = Arc::new(ExternalAgent(name.to_string()));
    crate::experiment::items::episodes(config, decisions, &[agent], &design(config))
}

/// The recovery design of a run served to an external harness: faultline cannot know
/// whether the harness's agent acts alike every time, so every run is served.
pub(crate) fn design(config: &crate::config::ExperimentConfig) -> RecoveryDesign {
    crate::experiment::items::design(config, Vec::new())
}

/// An episode as a board item.
pub(crate) fn item(task: &EpisodeTask) -> Item {
    Item::Episode(EpisodeItem {
        start: TrialSpec::episode_start(
            task.key(),
            task.decision().clone(),
            task.fault(),
            task.seed(),
        ),
        run: task.run(),
    })
}

/// An episode's lease: its time limit, plus one trial's lease for opening the page and
/// reporting.
pub fn lease(limits: &EpisodeLimits, trial_lease: Duration) -> Duration {
    Duration::from_millis(limits.time_limit_ms) + trial_lease
}

/// The budget as a claim states it.
pub fn budget(limits: &EpisodeLimits) -> Value {
    json!({
        "browser_actions": limits.budget,
        "max_steps": limits.max_steps,
        "max_wait_ms": limits.max_wait_ms,
        "time_limit_ms": limits.time_limit_ms,
    })
}

/// `POST /v1/leases/{lease}/steps`: one step of an episode, after the harness executed,
/// observed and judged it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepReport {
    /// The agent's reply (faultline's grammar). Step 0 replays the claim's reply: leave it
    /// out or send it unchanged.
    #[serde(default)]
    pub reply: Option<String>,
    /// Why the harness's parser refused the reply (nothing was executed).
    #[serde(default)]
    pub parse_error: Option<String>,
    /// The actions the harness executed, with whatever it records of them (JSON array).
    #[serde(default)]
    pub executed: Option<Value>,
    /// What the harness's tool reported back.
    #[serde(default)]
    pub tool_message: Option<String>,
    /// Its verifier's verdict on the step; `null` when the step was not judged (a reply
    /// that only answered or stopped, or did not parse).
    #[serde(default)]
    pub verdict: Option<Verdict>,
    /// The verifier's message (what the agent was told).
    #[serde(default)]
    pub message: Option<String>,
    /// The page-clock intervals of the step's captures, in order.
    #[serde(default)]
    pub captures: Vec<CaptureInterval>,
    /// The answer the step gave, judged against the newest capture.
    #[serde(default)]
    pub answer: Option<String>,
    /// The text the harness observed after the step.
    #[serde(default)]
    pub observation_text: Option<String>,
}

/// `POST /v1/leases/{lease}/report` for an episode: how it ended.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EpisodeReport {
    /// Why the episode ended, in the stop-reason vocabulary: `stopped`, `answered`,
    /// `parse_error`, `over_budget`, `step_cap`, `agent_error` or `time_limit`.
    pub stop_reason: StopReason,
    /// The error that ended it (`parse_error`, `agent_error`).
    #[serde(default)]
    pub error: Option<String>,
}

/// What a step check needs to know of the lease, read under the board's lock.
pub(crate) struct StepContext {
    index: usize,
    spent: u32,
    next_capture: u64,
    events_seen: usize,
    scope: Scope,
    offered_reply: String,
    layout: faultline_tasks::Layout,
}

/// The lease's episode state for its next step; `Err` when the lease is a trial's.
pub(crate) fn context(board: &Board, lease: &Lease) -> Result<StepContext, String> {
    let Some(progress) = &lease.episode else {
        return Err(
            "steps: this lease is a detection trial's; report it with POST .../report".into(),
        );
    };
    Ok(StepContext {
        index: progress.steps.len(),
        spent: progress.spent,
        next_capture: progress.captures,
        events_seen: progress.events_seen,
        scope: lease.scope.clone(),
        offered_reply: lease.offered.reply.clone(),
        layout: board.item(lease.item).spec().decision().layout(),
    })
}

/// A step checked against the episode's rules: its reply, parsed actions and browser
/// actions. The reason is what the harness is told, naming the field.
fn check_step(
    step: &StepReport,
    cx: &StepContext,
    limits: &EpisodeLimits,
) -> Result<(String, Vec<Action>, u32), String> {
    let at = |field: &str| format!("steps[{}].{field}", cx.index);
    if cx.index as u32 >= limits.max_steps {
        return Err(format!(
            "steps[{}]: the episode's {} steps (max_steps) are used up",
            cx.index, limits.max_steps
        ));
    }
    let reply = match (cx.index, &step.reply) {
        (0, None) => cx.offered_reply.clone(),
        (0, Some(r)) if *r == cx.offered_reply => r.clone(),
        (0, Some(_)) => {
            return Err(format!(
                "{}: step 0 replays the claim's reply; leave it out or send it unchanged",
                at("reply")
            ))
        }
        (_, None) => return Err(format!("{}: expected the agent's reply", at("reply"))),
        (_, Some(r)) if r.len() > MAX_REPLY_BYTES => {
            return Err(format!("{}: over {MAX_REPLY_BYTES} bytes", at("reply")))
        }
        (_, Some(r)) => r.clone(),
    };
    check_captures(&step.captures).map_err(|e| format!("steps[{}].{e}", cx.index))?;
    check_executed(step.executed.as_ref()).map_err(|e| format!("steps[{}].{e}", cx.index))?;
    if step.answer.as_ref().is_some_and(|a| a.len() > 1024) {
        return Err(format!("{}: over 1024 bytes", at("answer")));
    }
    if step.message.is_some() && step.verdict.is_none() {
        return Err(format!(
            "{}: a message needs the verdict it explains",
            at("message")
        ));
    }
    // The budget is counted on the reply as faultline's grammar reads it (a harness's
    // special tokens are plain text to it), as for a built-in agent.
    let actions = parse_reply(&reply).unwrap_or_default();
    // A reply the harness's parser refused executed nothing.
    let browser = match step.parse_error {
        Some(_) => 0,
        None => actions.iter().filter(|a| a.is_browser_action()).count() as u32,
    };
    if cx.index > 0 && cx.spent + browser > limits.budget {
        return Err(format!(
            "{}: the reply takes {browser} browser action(s) and {} of the budget's {} remain",
            at("reply"),
            limits.budget - cx.spent,
            limits.budget
        ));
    }
    Ok((reply, actions, browser))
}

/// Checkpoints one step: checks it, notes its captures and answer in the ledger, lets
/// the page's in-flight events in and judges the ledger as it stands (kept for the
/// transcript; the harness is told only what is left of the budget). `Err` is the reason
/// the step is refused.
pub(crate) async fn checkpoint(
    shared: &Shared,
    lease_id: &str,
    cx: StepContext,
    step: StepReport,
) -> Result<Value, String> {
    let limits = &shared.limits;
    let (reply, actions, browser) = check_step(&step, &cx, limits)?;
    let_late_events_in(shared, &cx.scope).await;
    for (i, c) in step.captures.iter().enumerate() {
        shared.scorer.note_capture(
            &cx.scope,
            &CaptureMark {
                id: cx.next_capture + i as u64,
                begin_ms: c.begin_ms,
                end_ms: c.end_ms,
            },
        );
    }
    let noted = cx.next_capture + step.captures.len() as u64;
    if let Some(a) = &step.answer {
        shared
            .scorer
            .note_answer(&cx.scope, a, noted.checked_sub(1));
    }
    let (ledger, truth) = shared.scorer.peek(&cx.scope, &cx.layout);
    let events: Vec<LedgerEvent> = ledger.events.iter().skip(cx.events_seen).cloned().collect();
    let cut = |s: &str| crate::plugin::truncate(s, MAX_TEXT_BYTES).into_owned();
    let row = EpisodeStepRow {
        episode_key: String::new(),
        step: cx.index as u32,
        source: if cx.index == 0 { "decision" } else { "agent" }.into(),
        reply,
        parse_error: step.parse_error.as_deref().map(cut),
        actions: serde_json::to_string(&actions).map_err(|e| e.to_string())?,
        executed: step
            .executed
            .as_ref()
            .map_or_else(|| "[]".to_string(), Value::to_string),
        browser_actions: browser,
        tool_message: cut(step.tool_message.as_deref().unwrap_or_default()),
        verdict: step.verdict,
        policy_message: step
            .verdict
            .map(|_| cut(step.message.as_deref().unwrap_or_default())),
        observation_text: step.observation_text.as_deref().map(cut),
        screenshot: None,
        witness: None,
        truth_achieved: truth.achieved,
        truth_detail: truth.detail,
        ledger_events: serde_json::to_string(&events).map_err(|e| e.to_string())?,
        usage: None,
    };
    let mut board = shared.board.lock().expect("not poisoned");
    let Some(progress) = board.lease_mut(lease_id).and_then(|l| l.episode.as_mut()) else {
        return Err("the lease ended while its step was checkpointed".into());
    };
    if progress.steps.len() != cx.index {
        return Err(format!(
            "steps[{}]: two steps were posted at once",
            cx.index
        ));
    }
    progress.captures = noted;
    progress.events_seen = ledger.events.len();
    if cx.index > 0 {
        progress.spent += browser;
    }
    progress.steps.push(Checkpointed {
        row,
        captures: step
            .captures
            .iter()
            .map(|c| (c.begin_ms, c.end_ms))
            .collect(),
        events,
        answered: step.answer.is_some(),
    });
    Ok(json!({
        "step": cx.index,
        "browser_actions_left": limits.budget - progress.spent,
        "steps_left": limits.max_steps - progress.steps.len() as u32,
    }))
}

/// Checks how the harness says the episode ended against its steps.
pub(crate) fn check_end(
    lease: &Lease,
    end: &EpisodeReport,
    limits: &EpisodeLimits,
) -> Result<(), String> {
    let steps = lease.episode.as_ref().map_or(0, |p| p.steps.len());
    if steps == 0 {
        return Err(
            "report: no step was posted; post step 0 (the replayed reply) to POST .../steps first"
                .into(),
        );
    }
    let last_answered = lease
        .episode
        .as_ref()
        .and_then(|p| p.steps.last())
        .is_some_and(|s| s.row.step > 0 && s.answered);
    match end.stop_reason {
        StopReason::Answered if !last_answered => Err(
            "report.stop_reason: `answered` needs a last step (after step 0) whose reply answers"
                .into(),
        ),
        StopReason::StepCap if (steps as u32) < limits.max_steps => Err(format!(
            "report.stop_reason: `step_cap` after {steps} of {} steps",
            limits.max_steps
        )),
        _ if end.error.as_ref().is_some_and(|e| e.len() > MAX_TEXT_BYTES) => {
            Err(format!("report.error: over {MAX_TEXT_BYTES} bytes"))
        }
        _ => Ok(()),
    }
}

/// The scored episode: its row and steps, and what the harness is told once it is stored.
pub(crate) struct ScoredEpisode {
    /// The episode row, as a built-in episode's.
    pub row: EpisodeRow,
    /// Its steps.
    pub steps: Vec<EpisodeStepRow>,
    /// What the harness is told once the episode is stored.
    pub told: Value,
}

/// Scores a reported episode from the ledger: the scope disarmed, its ledger taken and
/// judged, each step's witness decided as a trial's is.
pub(crate) async fn score(
    shared: &Shared,
    lease: &mut Lease,
    end: EpisodeReport,
) -> Result<ScoredEpisode> {
    let item = shared
        .board
        .lock()
        .expect("not poisoned")
        .item(lease.item)
        .clone();
    let Item::Episode(episode) = item else {
        anyhow::bail!("scored as an episode, but the item is a trial");
    };
    let spec = &episode.start;
    let d = spec.decision();
    let layout = d.layout();
    let_late_events_in(shared, &lease.scope).await;
    let site_events = shared.server.disarm(&lease.scope);
    let (ledger, truth) = shared.scorer.score(&lease.scope, &layout)?;
    let fault = spec.fault().expect("an episode has a fault");
    let progress = lease.episode.take().unwrap_or_default();
    let key = spec.key().to_string();
    let mut steps = Vec::new();
    let mut so_far: Vec<LedgerEvent> = Vec::new();
    for (i, s) in progress.steps.into_iter().enumerate() {
        so_far.extend(s.events.iter().cloned());
        // The tooltip probe compares the step's capture with when the tooltip first
        // appeared (in any step so far); the others ask the step's own events.
        let events = match &lease.offered.probe {
            Some(Probe::TooltipCapture) => so_far.clone(),
            _ => s.events,
        };
        let asked = Ledger {
            scope: ledger.scope.clone(),
            events,
        };
        let witness = match &lease.offered.probe {
            Some(probe) => probe_witness(probe, fault, &asked, &s.captures),
            None => None,
        };
        let witness = match i {
            0 => witness.or_else(|| lease.offered.reply_witness.clone()),
            _ => witness,
        };
        steps.push(EpisodeStepRow {
            episode_key: key.clone(),
            witness: witness.as_ref().map(serde_json::to_string).transpose()?,
            ..s.row
        });
    }
    let site_witness = site_events.iter().find(|e| e.fires).map(|first| {
        faultline_faults::Witness::new(
            fault.id(),
            format!("{}: {}", first.kind, first.data),
            json!({ "site_events": site_events }),
        )
    });
    let fired = steps.iter().any(|s| s.witness.is_some()) || site_witness.is_some();
    let first_verdict = steps.first().and_then(|s| s.verdict);
    let detected_at_first_step = steps
        .first()
        .zip(first_verdict)
        .is_some_and(|(s, v)| (v == Verdict::Success) == s.truth_achieved);
    let cut = |s: &str| crate::plugin::truncate(s, MAX_TEXT_BYTES).into_owned();
    let row = EpisodeRow {
        episode_key: key.clone(),
        task: d.task,
        fault,
        stage: fault.stage(),
        layer: fault.layer(),
        policy: shared.harness.clone(),
        agent: shared.harness.clone(),
        run: episode.run,
        layout_index: d.layout_index,
        layout_seed: d.layout_seed,
        episode_seed: spec.trial_seed(),
        fired,
        success: truth.achieved,
        truth_detail: truth.detail.clone(),
        browser_actions: progress.spent,
        steps: steps.len() as u32,
        stop_reason: end.stop_reason,
        detected_at_first_step,
        first_verdict,
        error: end.error.as_deref().map(cut),
        // The harness's model, if it has one, is its own business: nothing is claimed.
        model_calls: 0,
        prompt_tokens: None,
        completion_tokens: None,
        ledger: serde_json::to_string(&ledger)?,
        duration_ms: lease.claimed.elapsed().as_secs_f64() * 1000.0,
    };
    let told = json!({
        "stored": key,
        "fault": fault.id(),
        "fired": fired,
        "truth_achieved": truth.achieved,
        "truth": truth.detail,
        "recovered": fired.then_some(truth.achieved),
    });
    Ok(ScoredEpisode { row, steps, told })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cx(index: usize, spent: u32) -> StepContext {
        StepContext {
            index,
            spent,
            next_capture: 0,
            events_seen: 0,
            scope: Scope::random(),
            offered_reply: "click(10, 20)".into(),
            layout: faultline_tasks::Layout::generate(faultline_tasks::TaskKind::Grid, 1, 0),
        }
    }

    fn step(json: &str) -> StepReport {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn step_0_replays_the_claims_reply_and_later_steps_bring_their_own() {
        let limits = EpisodeLimits::default();
        let (reply, _, browser) = check_step(&step("{}"), &cx(0, 0), &limits).unwrap();
        assert_eq!((reply.as_str(), browser), ("click(10, 20)", 1));
        let e = check_step(&step(r#"{"reply": "click(1, 2)"}"#), &cx(0, 0), &limits);
        assert!(e.unwrap_err().starts_with("steps[0].reply:"));
        let e = check_step(&step("{}"), &cx(1, 0), &limits);
        assert_eq!(e.unwrap_err(), "steps[1].reply: expected the agent's reply");
    }

    #[test]
    fn a_step_over_the_budget_or_the_cap_is_refused_naming_the_field() {
        let limits = EpisodeLimits {
            budget: 2,
            max_steps: 3,
            ..EpisodeLimits::default()
        };
        let two = step(r#"{"reply": "click(1, 2)\nclick(3, 4)"}"#);
        assert!(check_step(&two, &cx(1, 0), &limits).is_ok());
        let e = check_step(&two, &cx(2, 1), &limits).unwrap_err();
        assert!(e.starts_with("steps[2].reply: the reply takes 2"), "{e}");
        // A reply the harness's parser refused spent nothing.
        let refused = step(r#"{"reply": "click(1, 2)\nclick(3, 4)", "parse_error": "bad"}"#);
        assert_eq!(check_step(&refused, &cx(2, 1), &limits).unwrap().2, 0);
        let e = check_step(&step(r#"{"reply": "stop()"}"#), &cx(3, 0), &limits).unwrap_err();
        assert!(e.contains("max_steps"), "{e}");
        let e = check_step(
            &step(r#"{"reply": "stop()", "message": "m"}"#),
            &cx(1, 0),
            &limits,
        )
        .unwrap_err();
        assert!(e.starts_with("steps[1].message"), "{e}");
    }
}
