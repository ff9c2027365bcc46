//! One recovery episode: the recorded decision replayed with its fault on, then the agent
//! acting on what the verification policy told it, until it stops, answers, runs out of
//! budget or hits the step cap. The ledger judges the end state.
//!
//! - Step 0 is the recorded decision, through the same round trip as a detection trial.
//! - After every executed step the policy judges it from the evidence alone, and the
//!   agent is shown the new observation and the policy's verdict and message.
//! - The fault stays armed for the whole episode: a fault in the harness's code (parser,
//!   executor) acts on every retry; observation and feedback faults act on every step
//!   where their condition holds.
//! - The budget counts browser actions the agent takes after the recorded decision
//!   (`click`, `hover`, `type`, `press`, `scroll`); `wait`, `answer` and `stop` are free,
//!   and a hard step cap bounds the episode. A reply that would overspend the budget is
//!   not executed: the episode ends `over_budget`.
//! - An agent reply that only answers or stops is not executed in the browser: an answer
//!   is recorded against the newest observation, and the episode ends. An agent reply that
//!   acts and answers is executed and ends the episode after its observation. The
//!   recorded decision's own answer (the chart's `hover` + `answer`) does not end it:
//!   the agent still sees the policy's judgement of it.
//!
//! The ledger is read after every step for the transcript (what happened during the
//! step, and whether the outcome held at that point) through the [`Session`], never by
//! the agent or the policy: they get [`crate::agent::AgentView`] and
//! [`faultline_policies::Evidence`] values only.

mod group;

use crate::agent::{Agent, PolicyFeedback, TokenUsage};
use crate::engine::cost::StageCosts;
use crate::engine::session::Session;
use crate::engine::Engine;
use anyhow::{Context, Result};
use faultline_faults::{FaultPlan, Witness};
use faultline_policies::{Observation, Verdict, VerificationPolicy};
use faultline_sites::{LedgerEvent, Truth};
use faultline_tasks::{Action, Decision};
use group::{drive, Member, Seen};
use serde::{Deserialize, Serialize};
use std::time::Instant;

/// Limits of one episode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct EpisodeLimits {
    /// Browser actions the agent may take after the recorded decision.
    pub budget: u32,
    /// Steps in all, the recorded decision included.
    pub max_steps: u32,
    /// Wall-clock limit of the whole episode: past it the episode ends `time_limit`
    /// (checked before every step and bounding every agent call).
    pub time_limit_ms: u64,
    /// The longest `wait(ms)` a reply may ask for; a longer wait is cut to it (and the
    /// tool message says so).
    pub max_wait_ms: u64,
}

impl Default for EpisodeLimits {
    fn default() -> Self {
        EpisodeLimits {
            budget: 3,
            max_steps: 8,
            time_limit_ms: 120_000,
            max_wait_ms: crate::engine::timing::MAX_WAIT_MS,
        }
    }
}

pub use faultline_tasks::StopReason;

/// One step of the transcript.
#[derive(Debug, Clone)]
pub struct EpisodeStep {
    /// The step's index, from 0 (the recorded decision).
    pub step: u32,
    /// The recorded decision (step 0) or the agent.
    pub from_decision: bool,
    /// The reply text: the recorded decision's at step 0, the agent's after.
    pub reply: String,
    /// Why the reply did not parse (`None` when it did); the step was not executed.
    pub parse_error: Option<String>,
    /// The actions parsed from the reply (empty when it did not parse).
    pub actions: Vec<Action>,
    /// JSON of the executed actions (viewport points, honest messages).
    pub executed_json: String,
    /// Browser actions this step performed (what the budget counts after step 0).
    pub browser_actions: u32,
    /// What the tool reported (after any feedback fault).
    pub tool_message: String,
    /// The policy's judgement, when the step was executed and judged.
    pub feedback: Option<PolicyFeedback>,
    /// The observation after the step (when it was executed).
    pub observation: Option<Observation>,
    /// The fault's witness, when it fired on this step.
    pub witness: Option<Witness>,
    /// The ledger's judgement right after this step.
    pub truth: Truth,
    /// Ledger events recorded during this step.
    pub ledger_events: Vec<LedgerEvent>,
    /// The model's token usage for this reply, when a model wrote it.
    pub usage: Option<TokenUsage>,
}

/// A finished episode.
pub struct EpisodeResult {
    /// The observation before the recorded decision.
    pub before: Observation,
    /// The transcript, step 0 (the recorded decision) first.
    pub steps: Vec<EpisodeStep>,
    /// Why the episode ended.
    pub stop_reason: StopReason,
    /// The parse or agent error that ended the episode.
    pub error: Option<String>,
    /// Browser actions the agent took after the recorded decision.
    pub browser_actions: u32,
    /// Whether the fault left a witness at any step or on the site.
    pub fired: bool,
    /// What the fault layer recorded on the site (network and page faults), if it fired.
    pub site_witness: Option<Witness>,
    /// The ledger's judgement at the end: whether the task's outcome was achieved.
    pub truth: Truth,
    /// The episode's whole ledger.
    pub ledger: faultline_sites::Ledger,
    /// The policy's verdict on the recorded decision agreed with the ledger (the detection
    /// experiment's "caught", on the first step).
    pub detected_at_first_step: bool,
    /// `None` when the recorded decision was not judged (its reply did not parse).
    pub first_verdict: Option<Verdict>,
    /// Model calls the agent made over the episode.
    pub model_calls: u32,
    /// Token usage summed over the agent's replies, when its model reported any.
    pub usage: Option<TokenUsage>,
    /// Wall-clock time of the episode, in milliseconds.
    pub duration_ms: f64,
    /// Set when the policy could not judge a step: the episode measured nothing about
    /// recovery, and is stored as an infrastructure error only (its stop reason and
    /// truth mean nothing then).
    pub infra_error: Option<faultline_policies::InfraError>,
    /// What the episode cost, stage by stage (storage is added by the caller).
    pub costs: StageCosts,
}

/// What an episode is.
pub struct EpisodeSpec<'a> {
    /// The recorded decision replayed at step 0 (its task and layout fix the page).
    pub decision: &'a Decision,
    /// The fault, armed for the whole episode.
    pub fault: FaultPlan,
    /// The policy that judges every executed step; the agent sees its verdict and message.
    pub policy: &'a dyn VerificationPolicy,
    /// The agent that acts after the recorded decision.
    pub agent: &'a dyn Agent,
    /// The agent's budget and the step cap.
    pub limits: EpisodeLimits,
    /// The episode's seed, handed to the agent in its view.
    pub seed: u64,
}

/// Another policy's or another agent's episode of the same item, run on the leader's
/// page for as long as it goes the same way (see [`run_together`]).
pub struct Follower<'a> {
    /// The policy that judges the follower's steps.
    pub policy: &'a dyn VerificationPolicy,
    /// The agent that acts in the follower's episode.
    pub agent: &'a dyn Agent,
    /// The follower's episode seed, handed to the agent in its view.
    pub seed: u64,
}

/// Runs one episode in a fresh browser context under a fresh ledger scope.
pub async fn run_episode(engine: &Engine, spec: &EpisodeSpec<'_>) -> Result<EpisodeResult> {
    let mut results = run_together(engine, spec, &[]).await?;
    Ok(results
        .remove(0)
        .expect("the leader's episode always finishes"))
}

/// Runs the episode of `spec` and, on the same page, the episodes of the same item under
/// the `followers`' policies and agents for as long as each goes the same way.
///
/// An episode differs from another policy's or agent's episode of the same item only in
/// what the agent is told and how it answers: the page, the fault and the recorded
/// decision (step 0) are the same. So while the replies are the same reply, the browser
/// does the same thing for all of them, and one page serves them all: every policy
/// judges every step, each member's agent is asked once (with its policy's feedback, its
/// history and its seed), and a follower leaves the group at the first turn where its
/// reply differs from the leader's (or its policy fails where the leader's judged, or
/// the other way round). The caller runs the followers that left on their own; their
/// partial transcripts are dropped.
///
/// Sound only where nothing else can differ between the episodes: every member's agent
/// replies as a function of its view ([`crate::agent::Agent::deterministic`]) and the
/// fault draws no parameter from the episode's seed (the leader's fault plan serves
/// all): the rule of `RecoveryDesign::only_the_view_decides`, by which the recovery
/// phase groups episodes.
///
/// Returns one entry per episode, the leader's first and then the followers' in order:
/// `None` for a follower that left. The page's cost is the leader's; a follower's own is
/// its policy's judgements and its agent's turns, counted in the leader's too.
pub async fn run_together(
    engine: &Engine,
    spec: &EpisodeSpec<'_>,
    followers: &[Follower<'_>],
) -> Result<Vec<Option<EpisodeResult>>> {
    let started = Instant::now();
    let layout = spec.decision.layout();
    let mut session = Session::open(engine, &layout, Some(spec.fault), spec.decision.image).await?;
    session.rt().max_wait_ms = spec.limits.max_wait_ms;
    let (before, before_state) = session
        .rt()
        .observe_now()
        .await
        .context("observing before the recorded decision")?;
    let deadline = started + std::time::Duration::from_millis(spec.limits.time_limit_ms);
    let members = std::iter::once(Member::new(0, spec.policy, spec.agent, spec.seed))
        .chain(
            followers
                .iter()
                .enumerate()
                .map(|(i, f)| Member::new(i + 1, f.policy, f.agent, f.seed)),
        )
        .collect();
    let seen = Seen {
        observation: before.clone(),
        state: before_state,
    };
    let (members, stop_reason) = drive(
        &mut session,
        spec,
        &layout.instruction(),
        members,
        seen,
        deadline,
    )
    .await?;
    session.record(None).await?;
    let finished = session.finish()?;
    let duration_ms = started.elapsed().as_secs_f64() * 1000.0;
    let mut results: Vec<Option<EpisodeResult>> = (0..=followers.len()).map(|_| None).collect();
    let mut page_costs = Some(finished.costs);
    for m in members {
        let t = m.t;
        results[m.index] = Some(EpisodeResult {
            before: before.clone(),
            fired: t.steps.iter().any(|s| s.witness.is_some()) || finished.site_witness.is_some(),
            steps: t.steps,
            stop_reason,
            error: t.error,
            browser_actions: t.spent,
            site_witness: finished.site_witness.clone(),
            truth: finished.truth.clone(),
            ledger: finished.ledger.clone(),
            detected_at_first_step: t.first.is_some_and(|(_, d)| d),
            first_verdict: t.first.map(|(v, _)| v),
            model_calls: t.model_calls,
            usage: t.usage,
            duration_ms,
            infra_error: t.infra_error,
            // The leader comes first and carries the page's cost.
            costs: page_costs.take().unwrap_or_default(),
        });
    }
    Ok(results)
}
