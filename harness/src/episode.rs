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
//! step, and whether the outcome held at that point) by the runner, never by the agent
//! or the policy: they get [`AgentView`] and [`Evidence`] values only.

use crate::agent::{Agent, AgentView, HistoryEntry, PolicyFeedback, TokenUsage};
use crate::roundtrip::{parse_stage, RoundTrip};
use crate::trial::TrialEnv;
use anyhow::{Context, Result};
use faultline_faults::{FaultPlan, Witness};
use faultline_policies::{Evidence, Observation, PageState, Verdict, VerificationPolicy};
use faultline_sites::{LedgerEvent, Scope, Truth};
use faultline_tasks::{Action, Decision};
use serde::{Deserialize, Serialize};
use std::time::Instant;

/// Limits of one episode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct EpisodeLimits {
    /// Browser actions the agent may take after the recorded decision.
    pub budget: u32,
    /// Steps in all, the recorded decision included.
    pub max_steps: u32,
}

impl Default for EpisodeLimits {
    fn default() -> Self {
        EpisodeLimits {
            budget: 3,
            max_steps: 8,
        }
    }
}

pub use faultline_tasks::StopReason;

/// One step of the transcript.
#[derive(Debug, Clone)]
pub struct EpisodeStep {
    pub step: u32,
    /// The recorded decision (step 0) or the agent.
    pub from_decision: bool,
    pub reply: String,
    pub parse_error: Option<String>,
    pub actions: Vec<Action>,
    /// JSON of the executed actions (viewport points, honest messages).
    pub executed_json: String,
    pub browser_actions: u32,
    pub tool_message: String,
    /// The policy's judgement, when the step was executed and judged.
    pub feedback: Option<PolicyFeedback>,
    /// The observation after the step (when it was executed).
    pub observation: Option<Observation>,
    pub witness: Option<Witness>,
    pub truth: Truth,
    pub ledger_events: Vec<LedgerEvent>,
    pub usage: Option<TokenUsage>,
}

/// A finished episode.
pub struct EpisodeResult {
    /// The observation before the recorded decision.
    pub before: Observation,
    pub steps: Vec<EpisodeStep>,
    pub stop_reason: StopReason,
    /// The parse or agent error that ended the episode.
    pub error: Option<String>,
    /// Browser actions the agent took after the recorded decision.
    pub browser_actions: u32,
    pub fired: bool,
    /// What the fault layer recorded on the site (network and page faults), if it fired.
    pub site_witness: Option<Witness>,
    pub truth: Truth,
    pub ledger: faultline_sites::Ledger,
    pub detected_at_first_step: bool,
    /// `None` when the recorded decision was not judged (its reply did not parse).
    pub first_verdict: Option<Verdict>,
    pub model_calls: u32,
    pub usage: Option<TokenUsage>,
    pub duration_ms: f64,
}

/// What an episode is.
pub struct EpisodeSpec<'a> {
    pub decision: &'a Decision,
    pub fault: FaultPlan,
    pub policy: &'a dyn VerificationPolicy,
    pub agent: &'a dyn Agent,
    pub limits: EpisodeLimits,
    pub seed: u64,
}

/// Runs one episode in a fresh browser context under a fresh ledger scope.
pub async fn run_episode(env: &TrialEnv, spec: &EpisodeSpec<'_>) -> Result<EpisodeResult> {
    let started = Instant::now();
    let layout = spec.decision.layout();
    let scope = Scope::random();
    crate::trial::arm_site(env, &scope, Some(&spec.fault), &layout);
    let mut page = env.pages.take().await?;
    let result = async {
        page.goto(&env.server.page_url(&scope, &layout)).await?;
        let mut rt = RoundTrip::new(
            &mut page,
            &layout,
            Some(spec.fault),
            spec.decision.image,
            env.timing,
        );
        let (before, before_state) = rt
            .observe_now()
            .await
            .context("observing before the recorded decision")?;
        let mut ep = Episode {
            env,
            spec,
            layout: &layout,
            scope: &scope,
            noted_captures: 0,
            seen_events: 0,
        };
        let out = ep.drive(&mut rt, before.clone(), before_state).await?;
        rt.page.flush_ledger().await?;
        ep.note_captures(&rt);
        let site = crate::trial::disarm_site(env, &scope, Some(&spec.fault));
        let (ledger, truth) = env.scorer.score(&scope, &layout);
        Ok(EpisodeResult {
            before,
            truth,
            ledger,
            fired: out.fired || site.is_some(),
            site_witness: site,
            duration_ms: started.elapsed().as_secs_f64() * 1000.0,
            ..out
        })
    }
    .await;
    tokio::spawn(page.close());
    if result.is_err() {
        // Whatever the error, the scope must not keep its ledger or its arming.
        let _ = env.server.disarm(&scope);
        let _ = env.scorer.score(&scope, &layout);
    }
    result
}

struct Episode<'e> {
    env: &'e TrialEnv,
    spec: &'e EpisodeSpec<'e>,
    layout: &'e faultline_tasks::Layout,
    scope: &'e Scope,
    /// Captures already noted in the ledger.
    noted_captures: usize,
    /// Ledger events already attributed to a step.
    seen_events: usize,
}

impl Episode<'_> {
    fn note_captures(&mut self, rt: &RoundTrip<'_>) {
        for m in &rt.marks[self.noted_captures..] {
            self.env.scorer.note_capture(self.scope, m);
        }
        self.noted_captures = rt.marks.len();
    }

    /// Flushes the page's ledger requests, notes what the harness witnessed, and judges
    /// the ledger as it stands; returns the events recorded since the last call.
    async fn checkpoint(
        &mut self,
        rt: &RoundTrip<'_>,
        answer: Option<&str>,
    ) -> Result<(Truth, Vec<LedgerEvent>)> {
        rt.page.flush_ledger().await?;
        self.note_captures(rt);
        if let Some(a) = answer {
            self.env
                .scorer
                .note_answer(self.scope, a, rt.last_capture());
        }
        let (ledger, truth) = self.env.scorer.peek(self.scope, self.layout);
        let new = ledger.events[self.seen_events.min(ledger.events.len())..].to_vec();
        self.seen_events = ledger.events.len();
        Ok((truth, new))
    }

    async fn drive(
        &mut self,
        rt: &mut RoundTrip<'_>,
        before: Observation,
        before_state: PageState,
    ) -> Result<EpisodeResult> {
        let spec = self.spec;
        let instruction = self.layout.instruction();
        let mut observation = before;
        let mut state = before_state;
        let mut steps: Vec<EpisodeStep> = Vec::new();
        let mut history: Vec<HistoryEntry> = Vec::new();
        let mut spent = 0u32;
        let mut model_calls = 0u32;
        let mut usage_total: Option<TokenUsage> = None;
        let mut first: Option<(Verdict, bool)> = None;
        // A self-report fault rewrites what the recorded agent replied.
        let (mut reply, mut decision_witness) = spec.fault.on_decision(&spec.decision.reply);
        let mut reply_usage: Option<TokenUsage> = None;
        let mut error = None;

        let stop_reason = 'episode: loop {
            let n = steps.len() as u32;
            let from_decision = n == 0;
            let mut record = EpisodeStep {
                step: n,
                from_decision,
                reply: reply.clone(),
                parse_error: None,
                actions: Vec::new(),
                executed_json: "[]".into(),
                browser_actions: 0,
                tool_message: String::new(),
                feedback: None,
                observation: None,
                witness: None,
                truth: Truth {
                    achieved: false,
                    detail: String::new(),
                },
                ledger_events: Vec::new(),
                usage: reply_usage.take(),
            };

            // --- parse stage (the fault is armed: a parse fault acts on every reply) ---
            let (actions, parse_witness) = match parse_stage(&reply, Some(&spec.fault)) {
                Ok((a, w)) => (a, decision_witness.take().or(w)),
                Err(e) => {
                    record.parse_error = Some(e.0.clone());
                    record.tool_message = e.to_string();
                    let (truth, events) = self.checkpoint(rt, None).await?;
                    record.truth = truth;
                    record.ledger_events = events;
                    steps.push(record);
                    error = Some(e.to_string());
                    break 'episode StopReason::ParseError;
                }
            };
            let browser = actions.iter().filter(|a| a.is_browser_action()).count() as u32;
            record.actions = actions.clone();
            record.browser_actions = browser;
            if !from_decision && spent + browser > spec.limits.budget {
                record.tool_message = format!(
                    "Refused: the reply needs {browser} browser action(s) and {} remain.",
                    spec.limits.budget - spent
                );
                let (truth, events) = self.checkpoint(rt, None).await?;
                record.truth = truth;
                record.ledger_events = events;
                steps.push(record);
                break 'episode StopReason::OverBudget;
            }
            let terminal = actions
                .iter()
                .all(|a| matches!(a, Action::Answer { .. } | Action::Stop));
            if terminal && !from_decision {
                // Nothing for the browser to do: record the answer against the newest
                // observation and end.
                let answer = actions.iter().rev().find_map(|a| match a {
                    Action::Answer { value } => Some(value.clone()),
                    _ => None,
                });
                record.tool_message = match &answer {
                    Some(v) => format!("Answered {v:?}."),
                    None => "Stopped.".into(),
                };
                record.witness = parse_witness;
                let (truth, events) = self.checkpoint(rt, answer.as_deref()).await?;
                record.truth = truth;
                record.ledger_events = events;
                steps.push(record);
                break 'episode if answer.is_some() {
                    StopReason::Answered
                } else {
                    StopReason::Stopped
                };
            }

            // --- execute, feedback, observe ---
            let outcome = rt.act(actions, parse_witness).await?;
            if !from_decision {
                spent += browser;
            }
            let judgement = spec.policy.judge(&Evidence {
                instruction: &instruction,
                actions: &outcome.actions,
                tool_message: &outcome.tool_message,
                before: &observation,
                after: &outcome.after,
                before_state: &state,
                after_state: &outcome.after_state,
            });
            let feedback = PolicyFeedback {
                policy: spec.policy.name().to_string(),
                verdict: judgement.verdict,
                message: judgement.message,
            };
            let (truth, events) = self.checkpoint(rt, outcome.answer.as_deref()).await?;
            if first.is_none() {
                let detected = (feedback.verdict == Verdict::Success) == truth.achieved;
                first = Some((feedback.verdict, detected));
            }
            record.executed_json = serde_json::to_string(&outcome.executed)?;
            record.tool_message = outcome.tool_message.clone();
            record.feedback = Some(feedback.clone());
            record.observation = Some(outcome.after.clone());
            record.witness = outcome.witness;
            record.truth = truth;
            record.ledger_events = events;
            history.push(HistoryEntry {
                reply: reply.clone(),
                actions: outcome.actions.clone(),
                tool_message: outcome.tool_message.clone(),
                feedback: Some(feedback.clone()),
            });
            steps.push(record);
            observation = outcome.after;
            state = outcome.after_state;
            // The recorded decision's own answer does not end the episode: the agent
            // still sees what the policy says about it and may act again.
            if !from_decision && (outcome.stop || outcome.answer.is_some()) {
                break 'episode if outcome.answer.is_some() {
                    StopReason::Answered
                } else {
                    StopReason::Stopped
                };
            }
            if steps.len() as u32 >= spec.limits.max_steps {
                break 'episode StopReason::StepCap;
            }

            // --- the agent's turn ---
            let view = AgentView {
                instruction: &instruction,
                observation: &observation,
                feedback: Some(&feedback),
                history: &history,
                budget_left: spec.limits.budget - spent,
                step: steps.len() as u32,
                image: spec.decision.image,
                seed: spec.seed,
            };
            match spec.agent.reply(view).await {
                Ok(r) => {
                    model_calls += r.model_calls;
                    if let Some(u) = r.usage {
                        let t = usage_total.get_or_insert_with(TokenUsage::default);
                        t.prompt_tokens += u.prompt_tokens;
                        t.completion_tokens += u.completion_tokens;
                    }
                    reply = r.text;
                    reply_usage = r.usage;
                }
                Err(e) => {
                    error = Some(e.to_string());
                    break 'episode StopReason::AgentError;
                }
            }
        };

        let (first_verdict, detected_at_first_step) = match first {
            Some((v, d)) => (Some(v), d),
            None => (None, false),
        };
        let fired = steps.iter().any(|s| s.witness.is_some());
        let truth = steps
            .last()
            .map(|s| s.truth.clone())
            .expect("an episode has at least one step");
        Ok(EpisodeResult {
            before: observation.clone(),
            steps,
            stop_reason,
            error,
            browser_actions: spent,
            fired,
            site_witness: None,
            truth,
            ledger: Default::default(),
            detected_at_first_step,
            first_verdict,
            model_calls,
            usage: usage_total,
            duration_ms: 0.0,
        })
    }
}
