//! One detection trial: replay a recorded decision on a fresh page, with or without its
//! fault, let every policy judge the same record, then score against the ledger. Trials
//! of one decision that can differ only in the tool's message (the working trial and
//! those whose fault acts only on the feedback) run on one page ([`run_trials`]).
//!
//! The order matters for the information barrier: policies judge first, from the
//! evidence only; the ledger is read afterwards, by the [`crate::engine::Scorer`] (through
//! the [`Session`]), which alone holds the ledger key.

use crate::engine::cost::{Span, Stage, StageCosts};
use crate::engine::roundtrip::ReplyError;
use crate::engine::session::{Finished, Session};
use crate::engine::Engine;
use anyhow::{Context, Result};
use faultline_faults::{FaultPlan, Witness};
use faultline_policies::{Evidence, Observation, PolicyOutcome};
use faultline_sites::{Ledger, Truth};
use faultline_tasks::{ActionFormat, Decision};
use serde::Serialize;
use std::time::Instant;

pub use faultline_tasks::Condition;

/// Everything a finished trial produced.
#[derive(Clone)]
pub struct TrialResult {
    /// The actions after the parse stage (including any parse fault); empty on a parse error.
    pub actions: Vec<faultline_tasks::Action>,
    /// The executed actions with their viewport points and honest messages (JSON).
    pub executed_json: String,
    /// What the tool reported (after any feedback fault), or the parse error.
    pub tool_message: String,
    /// The observation's text after the step (every frame's visible text).
    pub observation_text: String,
    /// The "before" screenshot (PNG, at the decision's image size).
    pub before_png: Vec<u8>,
    /// The "after" screenshot (PNG); the "before" one again on a parse error.
    pub after_png: Vec<u8>,
    /// The page states and text the policies judged, as stored with the trial (JSON).
    pub evidence_json: String,
    /// The fault's witness, when it fired (on the reply, in the round trip or on the site).
    pub witness: Option<Witness>,
    /// Every policy's judgement, or the infrastructure error that kept it from judging.
    pub judgements: Vec<(String, PolicyOutcome)>,
    /// The trial's whole ledger.
    pub ledger: Ledger,
    /// The ledger's judgement: whether the task's outcome was achieved.
    pub truth: Truth,
    /// Wall-clock time of the trial, in milliseconds.
    pub duration_ms: f64,
    /// Set when the reply could not be parsed (no browser action was taken).
    pub parse_error: Option<String>,
    /// What the trial cost, stage by stage (storage is added by the caller).
    pub costs: StageCosts,
}

impl TrialResult {
    /// This trial's result for a trial that rode on its page: the same record, with no
    /// stage costs of its own (the page's are this trial's).
    fn rider(&self) -> TrialResult {
        TrialResult {
            costs: StageCosts::default(),
            ..self.clone()
        }
    }
}

#[derive(Serialize)]
struct EvidenceRecord<'a> {
    before_state: &'a faultline_policies::PageState,
    after_state: &'a faultline_policies::PageState,
    before_text: &'a str,
}

/// The result of a trial whose reply did not parse: nothing was done, so the page after
/// is the page before and no policy judges it.
fn refused(
    before: Observation,
    parse_error: ReplyError,
    finished: Finished,
    started: Instant,
) -> TrialResult {
    TrialResult {
        actions: Vec::new(),
        executed_json: "[]".into(),
        tool_message: parse_error.to_string(),
        observation_text: before.text.clone(),
        before_png: before.png.clone(),
        after_png: before.png,
        evidence_json: "{}".into(),
        witness: None,
        judgements: Vec::new(),
        ledger: finished.ledger,
        truth: finished.truth,
        duration_ms: started.elapsed().as_secs_f64() * 1000.0,
        parse_error: Some(parse_error.0),
        costs: finished.costs,
    }
}

/// Runs one trial in a fresh browser context under a fresh ledger scope.
pub async fn run_trial(
    engine: &Engine,
    decision: &Decision,
    fault: Option<FaultPlan>,
) -> Result<TrialResult> {
    let mut results = run_trials(engine, decision, fault, &[]).await?;
    Ok(results.remove(0))
}

/// Runs the trial of `decision` under `lead` and, on the same page, the trials under
/// each of `followers`: faults that act only on the feedback
/// ([`faultline_faults::Fault::acts_only_on_feedback`]) or none (the working trial).
/// Nothing but the tool's message can differ between them, so the page is loaded,
/// acted on and observed once; the message is told under each member's fault and every
/// policy judges each member's record. The results come in order, the lead's first; the
/// page's costs are the lead's, a follower's are none of its own (it rode on that page).
///
/// # Panics
/// When a follower's fault acts anywhere but on the feedback.
pub async fn run_trials(
    engine: &Engine,
    decision: &Decision,
    lead: Option<FaultPlan>,
    followers: &[Option<FaultPlan>],
) -> Result<Vec<TrialResult>> {
    for f in followers.iter().flatten() {
        assert!(
            f.fault.acts_only_on_feedback(),
            "{} acts beyond the feedback: it cannot ride on another trial's page",
            f.id()
        );
    }
    let started = Instant::now();
    let layout = decision.layout();
    let instruction = layout.instruction();
    // A self-report fault rewrites what the agent replied (in faultline's grammar; a
    // reply in another format is left alone, so the fault does not fire); a site fault
    // is armed on the scope before the page loads.
    let (reply, reply_witness) = match &lead {
        Some(f) if decision.format == ActionFormat::Faultline => f.on_decision(&decision.reply),
        _ => (decision.reply.clone(), None),
    };
    let mut session = Session::open(engine, &layout, lead, decision.image).await?;
    if followers
        .iter()
        .flatten()
        .any(|f| f.needs_iframe_hit_test())
    {
        session.rt().hit_test_clicks();
    }
    tracing::debug!(ms = started.elapsed().as_millis() as u64, "loaded");
    let (before, before_state) = session
        .rt()
        .observe_now()
        .await
        .context("observing before the action")?;
    let step = match session
        .rt()
        .step(&reply, decision.format, Some(decision.space))
        .await?
    {
        Ok(s) => s,
        Err(parse_error) => {
            let finished = session.finish()?;
            // Nothing was done, so no fault acted: every member's result is the lead's.
            let lead = refused(before, parse_error, finished, started);
            let riders = followers.iter().map(|_| lead.rider()).collect();
            return Ok(with_riders(lead, riders));
        }
    };
    tracing::debug!(ms = started.elapsed().as_millis() as u64, "stepped");
    // The followers' messages, from the same feedback under their own fault (whose
    // witness, if it fired, is the feedback's).
    let told: Vec<(String, Option<Witness>)> = followers
        .iter()
        .map(|f| step.feedback.report(f.as_ref()))
        .collect();
    // Policies judge the stored records; none of them can see the ledger.
    let span = Span::start(Stage::Policies);
    let judge = |tool_message: &str| {
        let evidence = Evidence {
            instruction: &instruction,
            actions: &step.actions,
            tool_message,
            before: &before,
            after: &step.after,
            before_state: &before_state,
            after_state: &step.after_state,
        };
        crate::engine::judge::judge_all(&session.site(), &engine.policies, &evidence)
    };
    let judgements = judge(&step.tool_message);
    let followers_judged: Vec<_> = told.iter().map(|(m, _)| judge(m)).collect();
    span.end(session.costs());
    // Only now is the ledger read, after the harness adds what it witnessed itself.
    session.record(step.answer.as_deref()).await?;
    let finished = session.finish()?;
    let witness = reply_witness.or(step.witness).or(finished.site_witness);
    tracing::debug!(ms = started.elapsed().as_millis() as u64, "scored");
    let lead = TrialResult {
        executed_json: serde_json::to_string(&step.executed)?,
        evidence_json: serde_json::to_string(&EvidenceRecord {
            before_state: &before_state,
            after_state: &step.after_state,
            before_text: &before.text,
        })?,
        actions: step.actions,
        tool_message: step.tool_message,
        observation_text: step.after.text,
        before_png: before.png,
        after_png: step.after.png,
        witness,
        judgements,
        ledger: finished.ledger,
        truth: finished.truth,
        duration_ms: started.elapsed().as_secs_f64() * 1000.0,
        parse_error: None,
        costs: finished.costs,
    };
    let riders = told
        .into_iter()
        .zip(followers_judged)
        .map(|((tool_message, witness), judgements)| TrialResult {
            tool_message,
            witness,
            judgements,
            ..lead.rider()
        })
        .collect();
    Ok(with_riders(lead, riders))
}

/// The lead's result first, then its riders'.
fn with_riders(lead: TrialResult, riders: Vec<TrialResult>) -> Vec<TrialResult> {
    std::iter::once(lead).chain(riders).collect()
}
