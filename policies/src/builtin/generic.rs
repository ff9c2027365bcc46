//! `generic`: a change of URL or of the top document is success; and `state`, the
//! same extended to focus, scroll and selection (effects that leave the DOM alone).

use crate::evidence::Evidence;
use crate::{Judgement, PolicyOutcome, Verdict, VerificationPolicy};

/// Success when the URL or the top document changed; blind to child frames, like many
/// harnesses that diff only the main document.
#[derive(Debug, Clone, Copy, Default)]
pub struct GenericPolicy;

impl VerificationPolicy for GenericPolicy {
    fn name(&self) -> &str {
        "generic"
    }

    fn judge(&self, ev: &Evidence<'_>) -> PolicyOutcome {
        Ok(self.verdict_on(ev))
    }
}

impl GenericPolicy {
    /// The judgement, which a built-in policy can always give.
    pub fn verdict_on(&self, ev: &Evidence<'_>) -> Judgement {
        if ev.before_state.url != ev.after_state.url {
            return Judgement::new(
                Verdict::Success,
                format!("The page navigated to {}.", ev.after_state.url),
            );
        }
        let before = ev.before_state.top().map(|f| f.dom_digest.as_str());
        let after = ev.after_state.top().map(|f| f.dom_digest.as_str());
        if before != after {
            Judgement::new(Verdict::Success, "The page changed.")
        } else {
            Judgement::new(Verdict::NoChange, "No change detected on the page.")
        }
    }
}

/// The generic policy, extended to the effects that leave the DOM alone: when the URL
/// and the top document did not change, it also compares every frame's focus
/// (`document.activeElement`), its scroll offsets (the window's and every scrolled
/// element's) and its selection before and after the action. Success when any of them
/// changed; no change when none did.
#[derive(Debug, Clone, Copy, Default)]
pub struct StatePolicy;

impl VerificationPolicy for StatePolicy {
    fn name(&self) -> &str {
        "state"
    }

    fn judge(&self, ev: &Evidence<'_>) -> PolicyOutcome {
        Ok(self.verdict_on(ev))
    }
}

impl StatePolicy {
    /// The judgement, which a built-in policy can always give.
    pub fn verdict_on(&self, ev: &Evidence<'_>) -> Judgement {
        let generic = GenericPolicy.verdict_on(ev);
        if generic.verdict != Verdict::NoChange {
            return generic;
        }
        let before = &ev.before_state.frames;
        for after in &ev.after_state.frames {
            let was = before
                .iter()
                .find(|b| b.is_top == after.is_top && b.url == after.url);
            let Some(was) = was else { continue };
            let place = if after.is_top {
                String::new()
            } else {
                format!(" in the frame {}", after.url)
            };
            if was.focus != after.focus {
                let message = if after.focus.is_empty() {
                    format!("The focus left {}{place}.", was.focus)
                } else {
                    format!("The focus moved to {}{place}.", after.focus)
                };
                return Judgement::new(Verdict::Success, message);
            }
            if was.scroll != after.scroll {
                return Judgement::new(Verdict::Success, format!("The page scrolled{place}."));
            }
            if was.selection != after.selection {
                let message = if after.selection.is_empty() {
                    format!("The selection was cleared{place}.")
                } else {
                    format!("Selected {:?}{place}.", after.selection)
                };
                return Judgement::new(Verdict::Success, message);
            }
        }
        Judgement::new(
            Verdict::NoChange,
            "No change detected on the page, its focus, scroll or selection.",
        )
    }
}
