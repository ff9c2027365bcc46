//! An external verification policy: the evidence goes to a plugin process, a verdict comes
//! back (see the [module docs](super) for the protocol and the failure rules).

use super::{PluginSpec, Pool};
use faultline_policies::{
    Evidence, InfraError, Judgement, PolicyOutcome, Registry, Verdict, VerificationPolicy,
};
use faultline_tasks::{PluginFailure, Size};
use serde_json::{json, Value};
use std::sync::Arc;

/// The protocol name of a verifier.
pub const PROTOCOL: &str = "faultline.policy";

/// The longest verifier message kept: 16 KiB. A longer one is cut to it, with the marker
/// `… [truncated: N bytes]`, and the verdict stands: the message is stored with every
/// verdict and shown to the agent at every step, so its size is the harness's to bound.
pub const MAX_MESSAGE_BYTES: usize = 16 << 10;

/// A verifier running as a plugin process.
pub struct ExternalPolicy {
    pool: Arc<Pool>,
    viewport: Size,
}

impl ExternalPolicy {
    /// A policy judging through `pool` (shared by every copy the registry builds).
    pub fn new(pool: Arc<Pool>, viewport: Size) -> ExternalPolicy {
        ExternalPolicy { pool, viewport }
    }

    /// The pool of the policy's processes.
    pub fn pool(&self) -> &Arc<Pool> {
        &self.pool
    }
}

/// The pool of an external verifier: its handshake names it and gives the viewport.
pub fn pool(spec: PluginSpec, viewport: Size) -> Arc<Pool> {
    let hello = json!({ "name": spec.name, "viewport": viewport });
    Arc::new(Pool::new(spec, PROTOCOL, hello))
}

/// The evidence as a verifier receives it; `before` and `after` are the screenshot paths.
pub fn evidence_json(ev: &Evidence<'_>, viewport: Size, before: &str, after: &str) -> Value {
    let image = ev.after.size;
    let actions: Vec<Value> = ev
        .actions
        .iter()
        .map(|a| {
            let p = a.point();
            json!({
                "action": a,
                "image_point": p,
                "viewport_point": p.map(|p| p.scale(image, viewport)),
            })
        })
        .collect();
    json!({
        "instruction": ev.instruction,
        "actions": actions,
        "tool_message": ev.tool_message,
        "image": image,
        "viewport": viewport,
        "url_before": ev.before_state.url,
        "url_after": ev.after_state.url,
        "before": { "screenshot": before, "size": ev.before.size, "text": ev.before.text },
        "after": { "screenshot": after, "size": ev.after.size, "text": ev.after.text },
        "before_state": ev.before_state,
        "after_state": ev.after_state,
    })
}

/// Reads a verifier's answer.
pub fn judgement_from(answer: &Value) -> Result<Judgement, (PluginFailure, String)> {
    let verdict = match answer.get("verdict") {
        Some(Value::String(s)) => s.parse::<Verdict>().map_err(|e| {
            (
                PluginFailure::UnknownVerdict,
                format!(
                    "{} (expected success, no_change or fail)",
                    super::clip(&e.to_string())
                ),
            )
        })?,
        Some(other) => {
            return Err((
                PluginFailure::UnknownVerdict,
                format!(
                    "verdict is not a string: {}",
                    super::clip(&other.to_string())
                ),
            ));
        }
        None => {
            return Err((
                PluginFailure::Malformed,
                format!("no `verdict` in {}", super::clip(&answer.to_string())),
            ))
        }
    };
    let message = match answer.get("message") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => super::truncate(s, MAX_MESSAGE_BYTES).into_owned(),
        Some(other) => {
            return Err((
                PluginFailure::Malformed,
                format!(
                    "message is not a string: {}",
                    super::clip(&other.to_string())
                ),
            ))
        }
    };
    Ok(Judgement::new(verdict, message))
}

impl VerificationPolicy for ExternalPolicy {
    fn name(&self) -> &str {
        &self.pool.spec().name
    }

    fn judge(&self, ev: &Evidence<'_>) -> PolicyOutcome {
        let before = self.pool.write_png("before", &ev.before.png)?;
        let after = self.pool.write_png("after", &ev.after.png)?;
        let request = json!({
            "type": "judge",
            "evidence": evidence_json(
                ev,
                self.viewport,
                &before.path().display().to_string(),
                &after.path().display().to_string(),
            ),
        });
        // The files live until the answer is read (`before` and `after` drop after).
        let outcome = self.pool.with_process(|p| {
            let answer = p.request(request)?;
            judgement_from(&answer).map_err(|(kind, reason)| p.fail(kind, reason))
        });
        if let Err(e) = &outcome {
            if self.pool.first_failure() {
                eprintln!(
                    "faultline: warning: verifier `{}` failed ({}): {}; its judgements are stored as infrastructure errors, not verdicts, and counted in the run's summary",
                    self.name(),
                    e.kind,
                    e.reason
                );
            }
        }
        outcome
    }

    fn blocks(&self) -> bool {
        true
    }
}

/// The built-in policies plus the config's external ones, each external policy's
/// constructor capturing one shared pool (so detection and recovery share processes).
pub fn registry(external: &[PluginSpec], viewport: Size) -> Registry {
    let mut r = Registry::default();
    for spec in external {
        let pool = pool(spec.clone(), viewport);
        r.register(&spec.name, move || {
            Box::new(ExternalPolicy::new(pool.clone(), viewport))
        });
    }
    r
}

/// An infrastructure error as the results database stores it.
pub fn infra_row(
    item_key: &str,
    policy: &str,
    e: &InfraError,
) -> faultline_analysis::db::InfraErrorRow {
    faultline_analysis::db::InfraErrorRow {
        item_key: item_key.into(),
        policy: policy.into(),
        kind: e.kind.into(),
        reason: e.reason.clone(),
        stderr_tail: e.stderr_tail.clone(),
        attempt: e.attempt.max(1),
    }
}
