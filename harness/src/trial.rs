//! One detection trial: replay a recorded decision on a fresh page, with or without its
//! stage fault, let every policy judge the same record, then score against the ledger.
//!
//! The order matters for the information barrier: policies judge first, from the
//! evidence only; the ledger is read afterwards, by [`Scorer`], which alone holds the
//! ledger key.

use crate::browser::{BrowserHandle, PagePool};
use crate::roundtrip::{RoundTrip, Timing};
use anyhow::{Context, Result};
use faultline_faults::{FaultPlan, Witness};
use faultline_policies::{Evidence, Judgement, VerificationPolicy};
use faultline_sites::{FixtureServer, Ledger, LedgerKey, Scope, Truth};
use faultline_tasks::{Decision, Layout, Size};
use serde::Serialize;
use std::sync::Arc;
use std::time::Instant;

/// Reads ledgers and judges truth. The only holder of the ledger key.
pub struct Scorer {
    key: LedgerKey,
}

impl Scorer {
    pub fn new(key: LedgerKey) -> Scorer {
        Scorer { key }
    }

    /// Records a capture's page-clock interval in the scope's ledger.
    pub fn note_capture(&self, scope: &Scope, mark: &crate::roundtrip::CaptureMark) {
        self.key.note(
            scope,
            "capture",
            serde_json::json!({ "id": mark.id, "begin_ms": mark.begin_ms, "end_ms": mark.end_ms }),
        );
    }

    /// Records the agent's answer in the scope's ledger, with the capture it is judged
    /// against: the newest observation when the answer was given (for a reply that also
    /// acted, the observation that followed it).
    pub fn note_answer(&self, scope: &Scope, value: &str, capture: Option<u64>) {
        self.key.note(
            scope,
            "answer",
            serde_json::json!({ "value": value, "capture": capture }),
        );
    }

    /// Takes the scope's ledger and judges it against the layout.
    pub fn score(&self, scope: &Scope, layout: &Layout) -> (Ledger, Truth) {
        let ledger = self.key.take(scope);
        let truth = faultline_sites::judge(layout, &ledger);
        (ledger, truth)
    }

    /// Judges the scope's ledger as it stands, leaving it in place (episodes judge after
    /// every step and take the ledger at the end).
    pub fn peek(&self, scope: &Scope, layout: &Layout) -> (Ledger, Truth) {
        let ledger = self.key.read(scope);
        let truth = faultline_sites::judge(layout, &ledger);
        (ledger, truth)
    }
}

/// What a trial needs from the run.
pub struct TrialEnv {
    pub browser: Arc<BrowserHandle>,
    /// Fresh pages opened ahead of time, one browser context each.
    pub pages: PagePool,
    pub server: Arc<FixtureServer>,
    pub scorer: Arc<Scorer>,
    pub policies: Arc<Vec<Box<dyn VerificationPolicy>>>,
    pub timing: Timing,
    pub viewport: Size,
}

pub use faultline_tasks::Condition;

/// Everything a finished trial produced.
pub struct TrialResult {
    pub actions: Vec<faultline_tasks::Action>,
    pub executed_json: String,
    pub tool_message: String,
    pub observation_text: String,
    pub before_png: Vec<u8>,
    pub after_png: Vec<u8>,
    pub evidence_json: String,
    pub witness: Option<Witness>,
    pub judgements: Vec<(String, Judgement)>,
    pub ledger: Ledger,
    pub truth: Truth,
    pub duration_ms: f64,
    /// Set when the reply could not be parsed (no browser action was taken).
    pub parse_error: Option<String>,
}

#[derive(Serialize)]
struct EvidenceRecord<'a> {
    before_state: &'a faultline_policies::PageState,
    after_state: &'a faultline_policies::PageState,
    before_text: &'a str,
}

/// Runs one trial in a fresh browser context.
pub async fn run_trial(
    env: &TrialEnv,
    decision: &Decision,
    fault: Option<FaultPlan>,
) -> Result<TrialResult> {
    let started = Instant::now();
    let layout = decision.layout();
    let instruction = layout.instruction();
    let scope = Scope::random();
    // A self-report fault rewrites what the agent replied; a site fault is armed on the
    // scope before the page loads.
    let (reply, reply_witness) = match &fault {
        Some(f) => f.on_decision(&decision.reply),
        None => (decision.reply.clone(), None),
    };
    arm_site(env, &scope, fault.as_ref(), &layout);
    let mut page = env.pages.take().await?;
    tracing::debug!(ms = started.elapsed().as_millis() as u64, "page open");
    let result = async {
        page.goto(&env.server.page_url(&scope, &layout)).await?;
        tracing::debug!(ms = started.elapsed().as_millis() as u64, "loaded");
        let mut rt = RoundTrip::new(&mut page, &layout, fault, decision.image, env.timing);
        let (before, before_state) = rt
            .observe_now()
            .await
            .context("observing before the action")?;
        tracing::debug!(ms = started.elapsed().as_millis() as u64, "observed before");
        let step = rt.step(&reply).await?;
        tracing::debug!(ms = started.elapsed().as_millis() as u64, "stepped");
        let step = match step {
            Ok(s) => s,
            Err(parse_error) => {
                let _ = env.server.disarm(&scope);
                let (ledger, truth) = env.scorer.score(&scope, &layout);
                return Ok(TrialResult {
                    actions: Vec::new(),
                    executed_json: "[]".into(),
                    tool_message: parse_error.to_string(),
                    observation_text: before.text.clone(),
                    before_png: before.png.clone(),
                    after_png: before.png,
                    evidence_json: "{}".into(),
                    witness: None,
                    judgements: Vec::new(),
                    ledger,
                    truth,
                    duration_ms: started.elapsed().as_secs_f64() * 1000.0,
                    parse_error: Some(parse_error.0),
                });
            }
        };
        // Policies judge the stored record; none of them can see the ledger.
        let evidence = Evidence {
            instruction: &instruction,
            actions: &step.actions,
            tool_message: &step.tool_message,
            before: &before,
            after: &step.after,
            before_state: &before_state,
            after_state: &step.after_state,
        };
        let judgements: Vec<(String, Judgement)> = env
            .policies
            .iter()
            .map(|p| (p.name().to_string(), p.judge(&evidence)))
            .collect();
        // Only now is the ledger read, after the harness adds what it witnessed itself.
        rt.page.flush_ledger().await?;
        for m in &rt.marks {
            env.scorer.note_capture(&scope, m);
        }
        if let Some(answer) = &step.answer {
            env.scorer
                .note_answer(&scope, answer, Some(step.after_capture));
        }
        let witness = reply_witness
            .or(step.witness)
            .or(disarm_site(env, &scope, fault.as_ref()));
        let (ledger, truth) = env.scorer.score(&scope, &layout);
        tracing::debug!(ms = started.elapsed().as_millis() as u64, "scored");
        Ok(TrialResult {
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
            ledger,
            truth,
            duration_ms: started.elapsed().as_secs_f64() * 1000.0,
            parse_error: None,
        })
    }
    .await;
    // Closing a context takes a few round trips; nothing waits for it.
    tokio::spawn(page.close());
    if result.is_err() {
        let _ = env.server.disarm(&scope);
    }
    result
}

/// Arms the site side of a fault on the scope, if it has one.
pub fn arm_site(env: &TrialEnv, scope: &Scope, fault: Option<&FaultPlan>, layout: &Layout) {
    if let Some(injection) = fault.and_then(|f| f.site(layout)) {
        env.server.arm(scope, injection);
    }
}

/// Disarms the scope and turns what the fault layer recorded there into the trial's
/// witness, when one of its events is the fault firing.
pub fn disarm_site(env: &TrialEnv, scope: &Scope, fault: Option<&FaultPlan>) -> Option<Witness> {
    let events = env.server.disarm(scope);
    let fault = fault?;
    let first = events.iter().find(|e| e.fires)?;
    let summary = format!("{}: {}", first.kind, first.data);
    Some(Witness::new(
        fault.id(),
        summary,
        serde_json::json!({ "site_events": events }),
    ))
}
