//! One detection trial: replay a recorded decision on a fresh page, with or without its
//! fault, let every policy judge the same record, then score against the ledger. Trials
//! of one decision that can differ only in the tool's message or in when the observation
//! is captured (the working trial, those whose fault acts only on the feedback, and one
//! whose fault acts only on the capture's timing) run on one page ([`run_trials`]).
//!
//! The order matters for the information barrier: policies judge first, from the
//! evidence only; the ledger is read afterwards, by the [`crate::engine::Scorer`] (through
//! the [`Session`]), which alone holds the ledger key. A capture-timing rider's ledger is
//! the one exception to that order: its trial ends at its early capture, so its ledger is
//! judged there, before any policy judges; it is kept apart and reaches no evidence.

use crate::engine::cost::{Span, Stage, StageCosts};
use crate::engine::roundtrip::ReplyError;
use crate::engine::session::{Finished, Session};
use crate::engine::Engine;
use anyhow::{Context, Result};
use faultline_faults::{FaultPlan, Witness};
use faultline_policies::{Evidence, Observation, PageState, PolicyOutcome};
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
    before_state: &'a PageState,
    after_state: &'a PageState,
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
/// each of `followers`, which ride on it:
///
/// - a fault that acts only on the feedback
///   ([`faultline_faults::Fault::acts_only_on_feedback`]) or none (the working trial):
///   nothing but the tool's message can differ, so the page is loaded, acted on and
///   observed once and the message is told under each member's fault;
/// - at most one fault that acts only on the capture's timing
///   ([`faultline_faults::Fault::acts_only_on_capture_timing`]), under a lead that acts
///   on the page as the working trial does: the page captures its early observation
///   after the actions, and its ledger is judged there
///   ([`Session::score_ended_here`]), before the lead's settle and capture.
///
/// Every policy judges each member's own record. The results come in order, the lead's
/// first; the page's costs are the lead's, a follower's are none of its own (it rode on
/// that page).
///
/// # Panics
/// When a follower's fault acts anywhere else, or a capture-timing follower's lead acts
/// on the page.
pub async fn run_trials(
    engine: &Engine,
    decision: &Decision,
    lead: Option<FaultPlan>,
    followers: &[Option<FaultPlan>],
) -> Result<Vec<TrialResult>> {
    for f in followers.iter().flatten() {
        assert!(
            f.fault.rides_on_working_page(),
            "{} acts beyond the feedback and the capture's timing: it cannot ride on another trial's page",
            f.id()
        );
    }
    let early_riders: Vec<(usize, FaultPlan)> = followers
        .iter()
        .enumerate()
        .filter_map(|(i, f)| {
            f.filter(|f| f.fault.acts_only_on_capture_timing())
                .map(|f| (i, f))
        })
        .collect();
    assert!(
        early_riders.len() <= 1,
        "one page captures early for one rider at most"
    );
    let early_rider = early_riders.first().copied();
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
    let stepped = match early_rider {
        None => session
            .rt()
            .step(&reply, decision.format, Some(decision.space))
            .await?
            .map(|step| (step, None)),
        Some((at, rider)) => match session
            .rt()
            .step_with_early_rider(&reply, decision.format, Some(decision.space), rider)
            .await?
        {
            Err(parse_error) => Err(parse_error),
            Ok((acted, early)) => {
                // The rider's trial ends with its early observation: its ledger is
                // judged now, before the lead's settle and capture.
                let early = match early {
                    Some(e) => {
                        let (ledger, truth) = session
                            .score_ended_here(acted.answer(), e.after_capture)
                            .await?;
                        let ended_ms = started.elapsed().as_secs_f64() * 1000.0;
                        Some((at, e, ledger, truth, ended_ms))
                    }
                    None => None,
                };
                Ok((session.rt().finish_step(acted).await?, early))
            }
        },
    };
    let (step, early) = match stepped {
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
    let judge = |tool_message: &str, after: &Observation, after_state: &PageState| {
        let evidence = Evidence {
            instruction: &instruction,
            actions: &step.actions,
            tool_message,
            before: &before,
            after,
            before_state: &before_state,
            after_state,
        };
        crate::engine::judge::judge_all(&session.site(), &engine.policies, &evidence)
    };
    let judgements = judge(&step.tool_message, &step.after, &step.after_state);
    let followers_judged: Vec<_> = told
        .iter()
        .enumerate()
        .map(|(i, (m, _))| match &early {
            Some((at, e, ..)) if *at == i => judge(&e.tool_message, &e.after, &e.after_state),
            _ => judge(m, &step.after, &step.after_state),
        })
        .collect();
    span.end(session.costs());
    // Only now is the lead's ledger read, after the harness adds what it witnessed itself.
    session.record(step.answer.as_deref()).await?;
    let finished = session.finish()?;
    let witness = reply_witness.or(step.witness).or(finished.site_witness);
    tracing::debug!(ms = started.elapsed().as_millis() as u64, "scored");
    let lead = TrialResult {
        executed_json: serde_json::to_string(&step.executed)?,
        evidence_json: evidence_json(&before_state, &step.after_state, &before.text)?,
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
    let mut early = early;
    let riders = told
        .into_iter()
        .zip(followers_judged)
        .enumerate()
        .map(|(i, ((tool_message, witness), judgements))| {
            Ok(match early.take_if(|(at, ..)| *at == i) {
                Some((_, e, ledger, truth, ended_ms)) => TrialResult {
                    evidence_json: evidence_json(&before_state, &e.after_state, &before.text)?,
                    tool_message: e.tool_message,
                    observation_text: e.after.text,
                    after_png: e.after.png,
                    witness: e.witness,
                    judgements,
                    ledger,
                    truth,
                    duration_ms: ended_ms,
                    ..lead.rider()
                },
                None => TrialResult {
                    tool_message,
                    witness,
                    judgements,
                    ..lead.rider()
                },
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(with_riders(lead, riders))
}

/// The page states and text the policies judged, as stored with a trial (JSON).
fn evidence_json(
    before_state: &PageState,
    after_state: &PageState,
    before_text: &str,
) -> Result<String> {
    Ok(serde_json::to_string(&EvidenceRecord {
        before_state,
        after_state,
        before_text,
    })?)
}

/// The lead's result first, then its riders'.
fn with_riders(lead: TrialResult, riders: Vec<TrialResult>) -> Vec<TrialResult> {
    std::iter::once(lead).chain(riders).collect()
}
