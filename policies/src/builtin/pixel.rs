//! `pixel`: enough changed pixels between the before and after screenshots.

use crate::evidence::{Evidence, Observation};
use crate::{Judgement, PolicyOutcome, Verdict, VerificationPolicy};

/// Success when enough pixels differ between the before and after screenshots.
#[derive(Debug, Clone, Copy)]
pub struct PixelPolicy {
    /// A pixel counts as changed when any channel moves by more than this.
    pub channel_tolerance: u8,
    /// The share of changed pixels that counts as a change (0.0003 of 900x600 is 162
    /// pixels: more than a blinking caret, less than a recoloured small button).
    pub min_changed_fraction: f64,
}

impl Default for PixelPolicy {
    fn default() -> Self {
        PixelPolicy {
            channel_tolerance: 16,
            min_changed_fraction: 0.0003,
        }
    }
}

impl PixelPolicy {
    /// The share of pixels that changed, or an error message.
    pub fn changed_fraction(&self, a: &Observation, b: &Observation) -> Result<f64, String> {
        let a = image::load_from_memory(&a.png)
            .map_err(|e| format!("before screenshot: {e}"))?
            .to_rgb8();
        let b = image::load_from_memory(&b.png)
            .map_err(|e| format!("after screenshot: {e}"))?
            .to_rgb8();
        if a.dimensions() != b.dimensions() {
            return Ok(1.0);
        }
        let tol = self.channel_tolerance;
        let changed = a
            .pixels()
            .zip(b.pixels())
            .filter(|(p, q)| {
                p.0.iter()
                    .zip(q.0.iter())
                    .any(|(x, y)| x.abs_diff(*y) > tol)
            })
            .count();
        let total = (a.width() as usize * a.height() as usize).max(1);
        Ok(changed as f64 / total as f64)
    }
}

impl VerificationPolicy for PixelPolicy {
    fn name(&self) -> &str {
        "pixel"
    }

    fn judge(&self, ev: &Evidence<'_>) -> PolicyOutcome {
        Ok(self.verdict_on(ev))
    }
}

impl PixelPolicy {
    /// The judgement, which a built-in policy can always give.
    pub fn verdict_on(&self, ev: &Evidence<'_>) -> Judgement {
        match self.changed_fraction(ev.before, ev.after) {
            Err(e) => Judgement::new(Verdict::Fail, format!("Could not compare screenshots: {e}")),
            Ok(f) if f >= self.min_changed_fraction => Judgement::new(
                Verdict::Success,
                format!("The screen changed ({:.2}% of pixels).", f * 100.0),
            ),
            Ok(f) => Judgement::new(
                Verdict::NoChange,
                format!("No visible change ({:.3}% of pixels).", f * 100.0),
            ),
        }
    }
}
