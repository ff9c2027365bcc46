//! Verification policies: judging one action from what a real agent harness can observe.
//!
//! # The information barrier
//!
//! A policy sees an [`Evidence`] value and nothing else: the public instruction, the
//! actions that were dispatched, the tool's own message, and the page as the browser
//! showed it before and after the action (screenshots at the model's image size, the
//! visible text of every frame, the URL, and a per-frame snapshot of form controls and
//! selected elements read through CDP). It never sees the ground-truth ledger, and this
//! is enforced structurally, not by convention:
//!
//! - this crate does not depend on `faultline-sites`, where ledgers live, so no policy
//!   can name, hold or construct a `Ledger` or the `LedgerKey` that unlocks one
//!   (see the `compile_fail` example below; the harness also has a test that inspects
//!   the dependency graph);
//! - this crate has no HTTP client and no browser handle; the evidence is a plain value
//!   collected by the harness before judging, so a policy cannot go and fetch anything;
//! - the ledger HTTP endpoint needs a per-run bearer token that only scoring holds.
//!
//! Expectations come from [`faultline_tasks::Instruction::expectation`], i.e. from the instruction text.
//!
//! ```compile_fail
//! // faultline-sites is not a dependency of the policies crate: this cannot compile.
//! use faultline_sites::LedgerKey;
//! ```
//!
//! # Adding a policy
//!
//! Implement [`VerificationPolicy`] and register a constructor with
//! [`Registry::register`]; stored runs refer to policies by name, so a report can say
//! exactly which judged what. A constructor may capture what it needs (an external
//! policy's command and process pool), so a registry built from a config rebuilds the
//! same policies by name.
//!
//! # Judgements and infrastructure errors
//!
//! [`VerificationPolicy::judge`] returns a [`PolicyOutcome`]: a [`Judgement`], or an
//! [`InfraError`] when the policy could not judge at all (an external verifier process
//! crashed, hung past its timeout, answered malformed JSON, an unknown verdict or the
//! wrong protocol version). An infrastructure error is not a verdict: it is stored apart
//! and never counted as caught, missed or a false alarm. The built-in policies always
//! judge (they return `Ok`).

#![warn(missing_docs)]
#![warn(unreachable_pub)]

mod builtin;
mod evidence;

pub use builtin::{GenericPolicy, OutcomePolicy, PixelPolicy, StatePolicy, UnverifiedPolicy};
pub use evidence::{Control, Evidence, FrameSnapshot, Observation, PageState, ScrollOffset};

use faultline_tasks::PluginFailure;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

pub use faultline_tasks::Verdict;

/// A verdict plus the message the agent would be told.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Judgement {
    /// The policy's judgement of the action.
    pub verdict: Verdict,
    /// What the agent would be told about the action.
    pub message: String,
}

impl Judgement {
    /// A judgement with `verdict` and `message`.
    pub fn new(verdict: Verdict, message: impl Into<String>) -> Judgement {
        Judgement {
            verdict,
            message: message.into(),
        }
    }
}

/// Why a policy could not judge: not a verdict, but a failure of the machinery around
/// it (see the crate docs). Stored with the (trial, policy) it hit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{kind}: {reason}")]
pub struct InfraError {
    /// How the process failed (`spawn`, `crash`, `timeout`, `malformed`,
    /// `unknown_verdict`, `protocol`).
    pub kind: PluginFailure,
    /// What went wrong, for a person.
    pub reason: String,
    /// The last bytes the process wrote to stderr (empty when there is none).
    pub stderr_tail: String,
    /// Which incarnation of the process failed (1 for the first one started).
    pub attempt: u32,
}

/// What judging gives: a judgement, or an infrastructure error.
pub type PolicyOutcome = Result<Judgement, InfraError>;

/// Judges one action from observable evidence. See the crate docs for why a policy
/// cannot reach the ledger.
pub trait VerificationPolicy: Send + Sync {
    /// The registry name, stored with every verdict.
    fn name(&self) -> &str;
    /// Judges the evidence. Must be deterministic: the same evidence, the same judgement.
    /// An `Err` means the policy could not judge (it is never read as a verdict).
    fn judge(&self, evidence: &Evidence<'_>) -> PolicyOutcome;
    /// Whether judging may block on I/O (an external process), so an async caller
    /// should move it off its executor's threads. False for the built-ins.
    fn blocks(&self) -> bool {
        false
    }
}

type Constructor = Arc<dyn Fn() -> Box<dyn VerificationPolicy> + Send + Sync>;

/// Policies by name, so a stored run can be re-judged by the same policies.
#[derive(Clone)]
pub struct Registry {
    constructors: BTreeMap<String, Constructor>,
}

impl Default for Registry {
    /// The built-in policies: the four of [`BUILTIN`] and `state`.
    fn default() -> Self {
        let mut r = Registry {
            constructors: BTreeMap::new(),
        };
        r.register("unverified", || Box::new(UnverifiedPolicy));
        r.register("generic", || Box::new(GenericPolicy));
        r.register("pixel", || Box::new(PixelPolicy::default()));
        r.register("outcome", || Box::new(OutcomePolicy));
        r.register("state", || Box::new(StatePolicy));
        r
    }
}

impl Registry {
    /// Adds (or replaces) the policy `name`; the constructor may capture what the policy
    /// needs (e.g. an external verifier's command).
    pub fn register(
        &mut self,
        name: &str,
        constructor: impl Fn() -> Box<dyn VerificationPolicy> + Send + Sync + 'static,
    ) {
        self.constructors
            .insert(name.to_string(), Arc::new(constructor));
    }

    /// Whether `name` is registered.
    pub fn contains(&self, name: &str) -> bool {
        self.constructors.contains_key(name)
    }

    /// The registered policy names, in sorted order.
    pub fn names(&self) -> Vec<&str> {
        self.constructors.keys().map(String::as_str).collect()
    }

    /// A fresh instance of the policy registered as `name`; the error lists the known names.
    pub fn build(&self, name: &str) -> Result<Box<dyn VerificationPolicy>, String> {
        self.constructors.get(name).map(|c| c()).ok_or_else(|| {
            format!(
                "unknown policy `{name}` (known: {})",
                self.names().join(", ")
            )
        })
    }
}

/// The built-in policy names in their canonical report order: the policies a config
/// without a `policies` list is judged by. `state` is registered too, but only a config
/// that names it uses it (it is the generic policy extended to effects that leave the
/// DOM alone; `generic` stays the reference's).
pub const BUILTIN: [&str; 4] = ["unverified", "generic", "pixel", "outcome"];
