//! A fault armed for one trial: the catalogue entry plus the trial's seed, and the hooks
//! the harness calls at each point of the round trip.
//!
//! Every hook is a pure function of its inputs and the seed, and has a no-op default for
//! faults that do not act there, so the round trip calls every hook unconditionally and
//! a fault acts only where it belongs. A hook that changed something returns a
//! [`Witness`]; one that changed nothing returns none.

use crate::catalogue::Fault;
use crate::witness::Witness;
use faultline_tasks::{Action, Point, Size};
use serde_json::json;

/// The end-of-message token the parse fault leaks.
pub const LEAKED_TOKEN: &str = "<|im_end|>";

/// The message the iframe feedback fault reports instead of the honest one.
pub const NO_CHANGE_MESSAGE: &str = "No change detected.";

/// A fault armed for one trial.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultPlan {
    pub fault: Fault,
    /// The trial's seed; every parameter the fault draws comes from it.
    pub seed: u64,
}

/// What the feedback hook knows about the step.
#[derive(Debug, Clone, Copy)]
pub struct FeedbackContext<'a> {
    /// The honest tool message.
    pub honest: &'a str,
    /// The harness's own hit test: the last click went into an `<iframe>`.
    pub clicked_into_iframe: bool,
}

impl FaultPlan {
    pub fn new(fault: Fault, seed: u64) -> FaultPlan {
        FaultPlan { fault, seed }
    }

    pub fn id(&self) -> &'static str {
        self.fault.id()
    }

    /// Parse hook: corrupts the parsed actions.
    pub fn on_parse(&self, actions: &mut [Action]) -> Option<Witness> {
        match self.fault {
            Fault::TokenLeak => {
                let text = actions.iter_mut().find_map(|a| match a {
                    Action::Type { text } => Some(text),
                    _ => None,
                })?;
                let original = text.clone();
                text.push_str(LEAKED_TOKEN);
                Some(Witness::new(
                    self.id(),
                    format!("typed {text:?}"),
                    json!({ "original": original, "corrupted": text }),
                ))
            }
            _ => None,
        }
    }

    /// Execute hook: given a pointer action's image point, returns the viewport point to
    /// dispatch (honestly: the point scaled from `image` to `viewport`).
    pub fn on_execute(
        &self,
        image_point: Point,
        image: Size,
        viewport: Size,
    ) -> (Point, Option<Witness>) {
        let intended = image_point.scale(image, viewport);
        match self.fault {
            Fault::UnscaledCoordinates if intended != image_point => (
                image_point,
                Some(Witness::new(
                    self.id(),
                    format!("clicked {image_point} instead of {intended}"),
                    json!({ "image_point": image_point, "intended": intended, "executed": image_point }),
                )),
            ),
            _ => (intended, None),
        }
    }

    /// Whether the execute stage must run the harness's own hit test of each click (the
    /// feedback hook's condition); an honest tool does not need it.
    pub fn needs_iframe_hit_test(&self) -> bool {
        self.fault == Fault::IframeNoChange
    }

    /// Feedback hook: the message the tool reports.
    pub fn on_feedback(&self, ctx: &FeedbackContext<'_>) -> (String, Option<Witness>) {
        match self.fault {
            Fault::IframeNoChange if ctx.clicked_into_iframe => (
                NO_CHANGE_MESSAGE.to_string(),
                Some(Witness::new(
                    self.id(),
                    format!("reported {NO_CHANGE_MESSAGE:?} instead of {:?}", ctx.honest),
                    json!({ "original": ctx.honest, "reported": NO_CHANGE_MESSAGE }),
                )),
            ),
            _ => (ctx.honest.to_string(), None),
        }
    }

    /// Observe hook: whether to skip the settle wait that normally follows a hover.
    pub fn skips_hover_settle(&self) -> bool {
        self.fault == Fault::CaptureBeforeTooltip
    }

    /// The observe fault's witness, from the harness's own page-clock readings: it fired
    /// when the capture began before the tooltip was shown (or the tooltip never showed
    /// within the normal settle time). A tooltip that appears mid-capture is not seen
    /// either: the ledger requires it for the whole capture.
    pub fn capture_witness(
        &self,
        hover_at_ms: f64,
        capture_at_ms: f64,
        tooltip_shown_at_ms: Option<f64>,
    ) -> Option<Witness> {
        if !self.skips_hover_settle() {
            return None;
        }
        let early = match tooltip_shown_at_ms {
            Some(shown) => capture_at_ms < shown,
            None => true,
        };
        let summary = match tooltip_shown_at_ms {
            Some(t) => format!(
                "captured {:.0} ms after the hover, tooltip shown at {:.0} ms",
                capture_at_ms - hover_at_ms,
                t - hover_at_ms
            ),
            None => format!(
                "captured {:.0} ms after the hover, tooltip never shown",
                capture_at_ms - hover_at_ms
            ),
        };
        early.then(|| {
            Witness::new(
                self.id(),
                summary,
                json!({
                    "hover_at_ms": hover_at_ms,
                    "capture_at_ms": capture_at_ms,
                    "tooltip_shown_at_ms": tooltip_shown_at_ms,
                }),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(f: Fault) -> FaultPlan {
        FaultPlan::new(f, 7)
    }

    #[test]
    fn token_leak_corrupts_only_typed_text() {
        let mut a = vec![
            Action::Type {
                text: "Record-10".into(),
            },
            Action::Press {
                key: "Enter".into(),
            },
        ];
        let w = plan(Fault::TokenLeak).on_parse(&mut a).unwrap();
        assert_eq!(
            a[0],
            Action::Type {
                text: "Record-10<|im_end|>".into()
            }
        );
        assert_eq!(
            a[1],
            Action::Press {
                key: "Enter".into()
            }
        );
        assert_eq!(w.str("original"), Some("Record-10"));
        let mut clicks = vec![Action::Click { x: 1.0, y: 1.0 }];
        assert!(plan(Fault::TokenLeak).on_parse(&mut clicks).is_none());
        let mut typed = vec![Action::Type { text: "x".into() }];
        assert!(plan(Fault::UnscaledCoordinates)
            .on_parse(&mut typed)
            .is_none());
    }

    #[test]
    fn unscaled_coordinates_land_at_three_quarters() {
        let (img, vp) = (Size::new(900, 600), Size::new(1200, 800));
        let p = Point::new(450.0, 300.0);
        let (clean, none) = plan(Fault::TokenLeak).on_execute(p, img, vp);
        assert_eq!((clean, none), (Point::new(600.0, 400.0), None));
        let (faulty, w) = plan(Fault::UnscaledCoordinates).on_execute(p, img, vp);
        assert_eq!(faulty, p);
        let w = w.unwrap();
        assert_eq!(w.get("executed").unwrap()["x"], 450.0);
        assert_eq!(w.get("intended").unwrap()["x"], 600.0);
        // No scaling to skip: the fault cannot fire.
        let (_, w) = plan(Fault::UnscaledCoordinates).on_execute(p, vp, vp);
        assert!(w.is_none());
    }

    #[test]
    fn iframe_fault_fires_only_for_clicks_into_frames() {
        let ctx = |into| FeedbackContext {
            honest: "Clicked at (1, 2).",
            clicked_into_iframe: into,
        };
        let (m, w) = plan(Fault::IframeNoChange).on_feedback(&ctx(true));
        assert_eq!(m, NO_CHANGE_MESSAGE);
        assert_eq!(w.unwrap().str("original"), Some("Clicked at (1, 2)."));
        let (m, w) = plan(Fault::IframeNoChange).on_feedback(&ctx(false));
        assert_eq!((m.as_str(), w), ("Clicked at (1, 2).", None));
        let (m, _) = plan(Fault::TokenLeak).on_feedback(&ctx(true));
        assert_eq!(m, "Clicked at (1, 2).");
    }

    #[test]
    fn capture_witness_requires_an_early_capture() {
        let p = plan(Fault::CaptureBeforeTooltip);
        assert!(p.capture_witness(0.0, 10.0, Some(200.0)).is_some());
        assert!(p.capture_witness(0.0, 10.0, None).is_some());
        assert!(p.capture_witness(0.0, 300.0, Some(200.0)).is_none());
        assert!(plan(Fault::TokenLeak)
            .capture_witness(0.0, 10.0, None)
            .is_none());
    }
}
