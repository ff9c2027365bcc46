//! A harness's report of an item, checked, and the item scored from the ledger.
//!
//! The report is the harness's word: its verifier's verdict, and optionally what it
//! executed, when it looked (page-clock capture intervals), its answer and its
//! screenshots. None of it decides the truth. The truth is the ledger's — what the page
//! itself recorded under the item's scope — judged exactly as for a built-in trial. What
//! the harness says it saw is used only where the page cannot know it: when the harness
//! looked (for the answer's observation), and what it answered.

use super::board::Lease;
use super::offer::probe_witness;
use super::Shared;
use crate::engine::roundtrip::CaptureMark;
use anyhow::Result;
use base64::Engine as _;
use faultline_analysis::db::{TrialRow, VerdictRow};
use faultline_sites::Scope;
use faultline_tasks::{Condition, Verdict};
use serde::Deserialize;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The longest verifier message, tool message or observation text stored (longer ones
/// are cut, and say so).
pub const MAX_TEXT_BYTES: usize = 16 << 10;
/// The most captures one report may name.
pub const MAX_CAPTURES: usize = 64;
/// The largest screenshot (decoded PNG bytes).
pub const MAX_SHOT_BYTES: usize = 4 << 20;

/// `POST /v1/leases/{lease}/report`: what the harness says about the item.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Report {
    /// The harness's verifier's verdict: `success`, `no_change` or `fail`.
    pub verdict: Verdict,
    /// Its message (stored as the policy's message).
    #[serde(default)]
    pub message: String,
    /// What the harness's tool reported back about the actions.
    #[serde(default)]
    pub tool_message: Option<String>,
    /// The actions the harness executed, with whatever it records of them (JSON array).
    #[serde(default)]
    pub executed: Option<serde_json::Value>,
    /// The page-clock intervals (`performance.now()` just before and after) of the
    /// harness's captures, in order.
    #[serde(default)]
    pub captures: Vec<CaptureInterval>,
    /// The answer the harness gave, judged against its last capture.
    #[serde(default)]
    pub answer: Option<String>,
    /// The text the harness observed after acting.
    #[serde(default)]
    pub observation_text: Option<String>,
    /// Its screenshot before acting (PNG, base64).
    #[serde(default)]
    pub before_png: Option<String>,
    /// Its screenshot after acting (PNG, base64).
    #[serde(default)]
    pub after_png: Option<String>,
}

/// One capture's page-clock interval, in milliseconds.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaptureInterval {
    /// `performance.now()` just before the screenshot.
    pub begin_ms: f64,
    /// `performance.now()` just after it (and any DOM read).
    pub end_ms: f64,
}

/// What a checked report adds to the stored item.
pub struct Checked {
    report: Report,
    before_png: Option<Vec<u8>>,
    after_png: Option<Vec<u8>>,
}

impl Report {
    /// Checks the report's bounds: the reason is what the harness is told.
    pub fn check(self) -> Result<Checked, String> {
        check_captures(&self.captures)?;
        check_executed(self.executed.as_ref())?;
        if self.answer.as_ref().is_some_and(|a| a.len() > 1024) {
            return Err("answer: over 1024 bytes".into());
        }
        let shot = |name: &str, b64: &Option<String>| -> Result<Option<Vec<u8>>, String> {
            let Some(b64) = b64 else { return Ok(None) };
            let png = base64::engine::general_purpose::STANDARD
                .decode(b64)
                .map_err(|e| format!("{name}: not base64 ({e})"))?;
            if png.len() > MAX_SHOT_BYTES {
                return Err(format!("{name}: over {MAX_SHOT_BYTES} bytes"));
            }
            if !png.starts_with(b"\x89PNG\r\n\x1a\n") {
                return Err(format!("{name}: not a PNG"));
            }
            Ok(Some(png))
        };
        let before_png = shot("before_png", &self.before_png)?;
        let after_png = shot("after_png", &self.after_png)?;
        Ok(Checked {
            report: self,
            before_png,
            after_png,
        })
    }
}

/// Checks a report's (or an episode step's) capture intervals.
pub(crate) fn check_captures(captures: &[CaptureInterval]) -> Result<(), String> {
    if captures.len() > MAX_CAPTURES {
        return Err(format!(
            "captures: at most {MAX_CAPTURES}, found {}",
            captures.len()
        ));
    }
    for (i, c) in captures.iter().enumerate() {
        if !(c.begin_ms.is_finite() && c.end_ms.is_finite() && c.begin_ms <= c.end_ms)
            || c.begin_ms < 0.0
        {
            return Err(format!(
                "captures[{i}]: expected finite page-clock milliseconds with begin_ms <= end_ms"
            ));
        }
    }
    Ok(())
}

/// Checks a report's (or an episode step's) `executed` list.
pub(crate) fn check_executed(executed: Option<&serde_json::Value>) -> Result<(), String> {
    if let Some(e) = executed {
        if !e.is_array() {
            return Err("executed: expected a JSON array".into());
        }
        if e.to_string().len() > MAX_TEXT_BYTES {
            return Err(format!("executed: over {MAX_TEXT_BYTES} bytes"));
        }
    }
    Ok(())
}

/// The scored item: its row, the harness's verdict, its screenshots; and what the
/// harness is told back once it is stored.
pub(crate) struct Scored {
    /// The trial row, as a built-in trial's.
    pub row: TrialRow,
    /// The harness's verdict, stored under its name.
    pub verdict: VerdictRow,
    /// The screenshots it sent, with where they go.
    pub shots: Vec<(PathBuf, Vec<u8>)>,
    /// What the harness is told once the item is stored.
    pub told: serde_json::Value,
}

/// How long after a report the page's ledger requests are still let in. A harness may
/// report the instant its click returns, while the page's request for that click is still
/// queued in the harness's browser: nothing in flight at the server does not yet mean
/// nothing sent.
const LATE_EVENTS: Duration = Duration::from_millis(250);

/// The longest wait for the scope's requests in flight (a response the fault layer
/// delays), counted from the report.
const IN_FLIGHT_AT_MOST: Duration = Duration::from_secs(1);

/// Lets in the events the page sent just before a report or checkpoint: waits
/// [`LATE_EVENTS`], then until nothing of the scope's is in flight (at most
/// [`IN_FLIGHT_AT_MOST`] in all).
pub(crate) async fn let_late_events_in(shared: &Shared, scope: &Scope) {
    let waited = Instant::now();
    tokio::time::sleep(LATE_EVENTS).await;
    while shared.server.in_flight(scope) > 0 && waited.elapsed() < IN_FLIGHT_AT_MOST {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Scores a reported lease from the ledger: the page's in-flight events are let in,
/// the harness's captures and answer noted, the scope disarmed and its ledger judged.
pub(crate) async fn score(shared: &Shared, lease: &Lease, checked: Checked) -> Result<Scored> {
    let spec = shared
        .board
        .lock()
        .expect("not poisoned")
        .item(lease.item)
        .spec()
        .clone();
    let layout = spec.decision().layout();
    let_late_events_in(shared, &lease.scope).await;
    let r = &checked.report;
    for (id, c) in r.captures.iter().enumerate() {
        shared.scorer.note_capture(
            &lease.scope,
            &CaptureMark {
                id: id as u64,
                begin_ms: c.begin_ms,
                end_ms: c.end_ms,
            },
        );
    }
    if let Some(a) = &r.answer {
        let last = r.captures.len().checked_sub(1).map(|i| i as u64);
        shared.scorer.note_answer(&lease.scope, a, last);
    }
    let site_events = shared.server.disarm(&lease.scope);
    let (ledger, truth) = shared.scorer.score(&lease.scope, &layout)?;
    let fault = spec.fault();
    let captures: Vec<(f64, f64)> = r.captures.iter().map(|c| (c.begin_ms, c.end_ms)).collect();
    let witness = match (&lease.offered.probe, fault) {
        (Some(probe), Some(f)) => probe_witness(probe, f, &ledger, &captures),
        _ => lease
            .offered
            .reply_witness
            .clone()
            .or_else(|| lease.devtools.as_ref()?.witness())
            .or_else(|| {
                let f = fault?;
                let first = site_events.iter().find(|e| e.fires)?;
                Some(faultline_faults::Witness::new(
                    f.id(),
                    format!("{}: {}", first.kind, first.data),
                    serde_json::json!({ "site_events": site_events }),
                ))
            }),
    };
    let key = spec.key().to_string();
    let stem = key.replace('/', "-");
    let mut shots = Vec::new();
    let mut shot = |which: &str, png: &Option<Vec<u8>>| {
        png.as_ref().map(|png| {
            let name = format!("shots/{stem}.{which}.png");
            shots.push((shared.out.join(&name), png.clone()));
            name
        })
    };
    let before_png = shot("before", &checked.before_png);
    let after_png = shot("after", &checked.after_png);
    let cut = |s: &str| crate::plugin::truncate(s, MAX_TEXT_BYTES).into_owned();
    let d = spec.decision();
    let row = TrialRow {
        trial_key: key.clone(),
        experiment: faultline_tasks::Phase::Detection,
        task: d.task,
        layout_index: d.layout_index,
        layout_seed: d.layout_seed,
        trial_seed: spec.trial_seed(),
        condition: match fault {
            Some(_) => Condition::Faulty,
            None => Condition::Working,
        },
        fault,
        stage: fault.map(|f| f.stage()),
        fired: fault.map(|_| witness.is_some()),
        witness: witness.as_ref().map(serde_json::to_string).transpose()?,
        decision_source: d.source.clone(),
        reply: lease.offered.reply.clone(),
        actions: serde_json::to_string(
            &faultline_tasks::parse_reply(&lease.offered.reply).unwrap_or_default(),
        )?,
        executed: r
            .executed
            .as_ref()
            .map_or_else(|| "[]".to_string(), |e| e.to_string()),
        tool_message: cut(r.tool_message.as_deref().unwrap_or_default()),
        observation_text: cut(r.observation_text.as_deref().unwrap_or_default()),
        before_png,
        after_png,
        evidence: "{}".into(),
        truth_achieved: truth.achieved,
        truth_detail: truth.detail.clone(),
        ledger: serde_json::to_string(&ledger)?,
        duration_ms: lease.claimed.elapsed().as_secs_f64() * 1000.0,
        layer: fault.map(|f| f.layer()),
        not_fired_reason: match (fault, &witness) {
            (Some(f), None) => Some(match &lease.offered.probe {
                Some(_) => "the harness did not show the defect this probe looks for".to_string(),
                None => super::devtools::not_connected(f, lease.devtools.as_ref())
                    .unwrap_or_else(|| f.spec().not_fired_when.to_string()),
            }),
            _ => None,
        },
    };
    let verdict = VerdictRow {
        trial_key: key.clone(),
        policy: shared.harness.clone(),
        verdict: r.verdict,
        message: cut(&r.message),
    };
    let told = serde_json::json!({
        "stored": key,
        "fault": fault.map(|f| f.id()),
        "fired": row.fired,
        "truth_achieved": truth.achieved,
        "truth": truth.detail,
        "caught": row.fired.unwrap_or(true).then_some((r.verdict == Verdict::Success) == truth.achieved),
    });
    Ok(Scored {
        row,
        verdict,
        shots,
        told,
    })
}
