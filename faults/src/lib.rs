//! faultline's fault catalogue.
//!
//! A fault breaks one stage of the agent's action round trip on purpose:
//!
//! | stage    | what it does                     | reference fault |
//! |----------|----------------------------------|-----------------|
//! | parse    | reply text -> typed actions      | [`StageFault::TokenLeak`] |
//! | execute  | action -> browser input events   | [`StageFault::UnscaledCoordinates`] |
//! | feedback | what the tool reports back       | [`StageFault::IframeNoChange`] |
//! | observe  | what the model sees next         | [`StageFault::CaptureBeforeTooltip`] |
//!
//! Each fault is a *pure transformation* applied at its stage's hook in the harness, and
//! every application returns a [`Witness`]: evidence that the fault actually changed
//! something. No witness means the fault did not fire, and such a trial is stored as
//! `fired = false` and excluded from detection counts — a fault that did nothing can be
//! neither caught nor missed.
//!
//! The faults here never look at the ledger either; whether a fault *fired* is decided
//! from what the harness itself did (the text it typed, the point it clicked, the message
//! it sent, the instant it captured), not from what the page recorded.

use faultline_tasks::{Action, Point, Size, TaskKind};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The end-of-message token the parse fault leaks.
pub const LEAKED_TOKEN: &str = "<|im_end|>";

/// The message the feedback fault reports instead of the honest one.
pub const NO_CHANGE_MESSAGE: &str = "No change detected.";

/// A stage of the round trip.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    Parse,
    Execute,
    Feedback,
    Observe,
}

impl Stage {
    pub fn name(self) -> &'static str {
        match self {
            Stage::Parse => "parse",
            Stage::Execute => "execute",
            Stage::Feedback => "feedback",
            Stage::Observe => "observe",
        }
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The four reference stage faults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum StageFault {
    /// A chat end-of-message token is not stripped and ends up in the typed text.
    #[serde(rename = "parse.token_leak")]
    TokenLeak,
    /// Screenshot-to-viewport scaling is skipped: image points are used as viewport points.
    #[serde(rename = "execute.unscaled_coordinates")]
    UnscaledCoordinates,
    /// A click that landed inside an iframe is reported as "No change detected."
    #[serde(rename = "feedback.iframe_no_change")]
    IframeNoChange,
    /// The screenshot is captured right after a hover, before the tooltip appears.
    #[serde(rename = "observe.capture_before_tooltip")]
    CaptureBeforeTooltip,
}

impl StageFault {
    pub const ALL: [StageFault; 4] = [
        StageFault::TokenLeak,
        StageFault::UnscaledCoordinates,
        StageFault::IframeNoChange,
        StageFault::CaptureBeforeTooltip,
    ];

    /// The stable id, `stage.name`.
    pub fn id(self) -> &'static str {
        match self {
            StageFault::TokenLeak => "parse.token_leak",
            StageFault::UnscaledCoordinates => "execute.unscaled_coordinates",
            StageFault::IframeNoChange => "feedback.iframe_no_change",
            StageFault::CaptureBeforeTooltip => "observe.capture_before_tooltip",
        }
    }

    pub fn stage(self) -> Stage {
        match self {
            StageFault::TokenLeak => Stage::Parse,
            StageFault::UnscaledCoordinates => Stage::Execute,
            StageFault::IframeNoChange => Stage::Feedback,
            StageFault::CaptureBeforeTooltip => Stage::Observe,
        }
    }

    pub fn description(self) -> &'static str {
        match self {
            StageFault::TokenLeak => {
                "the reply's <|im_end|> token is not stripped and is typed with the text"
            }
            StageFault::UnscaledCoordinates => {
                "image coordinates are used as viewport coordinates (no 900x600 -> 1200x800 scaling)"
            }
            StageFault::IframeNoChange => {
                "a click that landed inside an iframe is reported as \"No change detected.\""
            }
            StageFault::CaptureBeforeTooltip => {
                "the observation is captured right after a hover, before the tooltip appears"
            }
        }
    }

    /// The reference task whose recorded decisions exercise this fault.
    pub fn reference_task(self) -> TaskKind {
        match self {
            StageFault::TokenLeak => TaskKind::Search,
            StageFault::UnscaledCoordinates => TaskKind::Grid,
            StageFault::IframeNoChange => TaskKind::Frame,
            StageFault::CaptureBeforeTooltip => TaskKind::Chart,
        }
    }

    /// The stage fault a task's faulty trials use in the detection experiment.
    pub fn for_task(task: TaskKind) -> StageFault {
        StageFault::ALL
            .into_iter()
            .find(|f| f.reference_task() == task)
            .expect("every task has a reference fault")
    }

    /// Parse hook: leaks the token into the first typed text.
    pub fn on_parse(self, actions: &mut [Action]) -> Option<Witness> {
        if self != StageFault::TokenLeak {
            return None;
        }
        let text = actions.iter_mut().find_map(|a| match a {
            Action::Type { text } => Some(text),
            _ => None,
        })?;
        let original = text.clone();
        text.push_str(LEAKED_TOKEN);
        Some(Witness::TokenLeak {
            original,
            corrupted: text.clone(),
        })
    }

    /// Execute hook: given the image point and its correctly scaled viewport point,
    /// returns the point to dispatch.
    pub fn on_execute(
        self,
        image_point: Point,
        image: Size,
        viewport: Size,
    ) -> (Point, Option<Witness>) {
        let intended = image_point.scale(image, viewport);
        if self != StageFault::UnscaledCoordinates || intended == image_point {
            return (intended, None);
        }
        (
            image_point,
            Some(Witness::UnscaledCoordinates {
                image_point,
                intended,
                executed: image_point,
            }),
        )
    }

    /// Feedback hook: `clicked_into_iframe` is the harness's own hit test of the point it
    /// clicked (the top document's element at that point was an `<iframe>`).
    pub fn on_feedback(
        self,
        message: &str,
        clicked_into_iframe: bool,
    ) -> (String, Option<Witness>) {
        if self != StageFault::IframeNoChange || !clicked_into_iframe {
            return (message.to_string(), None);
        }
        (
            NO_CHANGE_MESSAGE.to_string(),
            Some(Witness::IframeNoChange {
                original: message.to_string(),
                reported: NO_CHANGE_MESSAGE.to_string(),
            }),
        )
    }

    /// Observe hook: whether to skip the settle wait that normally follows a hover.
    pub fn skips_hover_settle(self) -> bool {
        self == StageFault::CaptureBeforeTooltip
    }
}

impl fmt::Display for StageFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

impl FromStr for StageFault {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        StageFault::ALL
            .into_iter()
            .find(|f| f.id() == s)
            .ok_or_else(|| {
                let ids: Vec<&str> = StageFault::ALL.iter().map(|f| f.id()).collect();
                format!("unknown fault `{s}` (expected one of: {})", ids.join(", "))
            })
    }
}

/// Evidence that a fault fired, stored with the trial.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "fault")]
pub enum Witness {
    #[serde(rename = "parse.token_leak")]
    TokenLeak { original: String, corrupted: String },
    #[serde(rename = "execute.unscaled_coordinates")]
    UnscaledCoordinates {
        image_point: Point,
        intended: Point,
        executed: Point,
    },
    #[serde(rename = "feedback.iframe_no_change")]
    IframeNoChange { original: String, reported: String },
    /// Page-clock milliseconds (`performance.now()` of the top document). The fault fired
    /// when the capture began before the tooltip was shown (or the tooltip never showed
    /// within the normal settle time). A tooltip that appears mid-capture is not seen
    /// either: the ledger requires it for the whole capture.
    #[serde(rename = "observe.capture_before_tooltip")]
    CaptureBeforeTooltip {
        hover_at_ms: f64,
        capture_at_ms: f64,
        tooltip_shown_at_ms: Option<f64>,
    },
}

impl Witness {
    /// Builds the observe witness from the harness's own timings, if the capture really
    /// preceded the tooltip.
    pub fn capture_before_tooltip(
        hover_at_ms: f64,
        capture_at_ms: f64,
        tooltip_shown_at_ms: Option<f64>,
    ) -> Option<Witness> {
        let early = match tooltip_shown_at_ms {
            Some(shown) => capture_at_ms < shown,
            None => true,
        };
        early.then_some(Witness::CaptureBeforeTooltip {
            hover_at_ms,
            capture_at_ms,
            tooltip_shown_at_ms,
        })
    }

    /// One line for tables and logs.
    pub fn summary(&self) -> String {
        match self {
            Witness::TokenLeak { corrupted, .. } => format!("typed {corrupted:?}"),
            Witness::UnscaledCoordinates {
                intended, executed, ..
            } => format!("clicked {executed} instead of {intended}"),
            Witness::IframeNoChange { original, reported } => {
                format!("reported {reported:?} instead of {original:?}")
            }
            Witness::CaptureBeforeTooltip {
                hover_at_ms,
                capture_at_ms,
                tooltip_shown_at_ms,
            } => match tooltip_shown_at_ms {
                Some(t) => format!(
                    "captured {:.0} ms after the hover, tooltip shown at {:.0} ms",
                    capture_at_ms - hover_at_ms,
                    t - hover_at_ms
                ),
                None => format!(
                    "captured {:.0} ms after the hover, tooltip never shown",
                    capture_at_ms - hover_at_ms
                ),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let w = StageFault::TokenLeak.on_parse(&mut a).unwrap();
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
        assert!(matches!(w, Witness::TokenLeak { ref original, .. } if original == "Record-10"));
        let mut clicks = vec![Action::Click { x: 1.0, y: 1.0 }];
        assert!(StageFault::TokenLeak.on_parse(&mut clicks).is_none());
        let mut typed = vec![Action::Type { text: "x".into() }];
        assert!(StageFault::UnscaledCoordinates
            .on_parse(&mut typed)
            .is_none());
    }

    #[test]
    fn unscaled_coordinates_land_at_three_quarters() {
        let (img, vp) = (Size::new(900, 600), Size::new(1200, 800));
        let p = Point::new(450.0, 300.0);
        let (clean, none) = StageFault::TokenLeak.on_execute(p, img, vp);
        assert_eq!((clean, none), (Point::new(600.0, 400.0), None));
        let (faulty, w) = StageFault::UnscaledCoordinates.on_execute(p, img, vp);
        assert_eq!(faulty, p);
        assert!(w.is_some());
        // No scaling to skip: the fault cannot fire.
        let (_, w) = StageFault::UnscaledCoordinates.on_execute(p, vp, vp);
        assert!(w.is_none());
    }

    #[test]
    fn iframe_fault_fires_only_for_clicks_into_frames() {
        let (m, w) = StageFault::IframeNoChange.on_feedback("Clicked at (1, 2).", true);
        assert_eq!(m, NO_CHANGE_MESSAGE);
        assert!(w.is_some());
        let (m, w) = StageFault::IframeNoChange.on_feedback("Clicked at (1, 2).", false);
        assert_eq!((m.as_str(), w), ("Clicked at (1, 2).", None));
    }

    #[test]
    fn capture_witness_requires_an_early_capture() {
        assert!(Witness::capture_before_tooltip(0.0, 10.0, Some(200.0)).is_some());
        assert!(Witness::capture_before_tooltip(0.0, 10.0, None).is_some());
        assert!(Witness::capture_before_tooltip(0.0, 300.0, Some(200.0)).is_none());
    }

    #[test]
    fn ids_round_trip_and_serde_agrees() {
        for f in StageFault::ALL {
            assert_eq!(f.id().parse::<StageFault>().unwrap(), f);
            assert_eq!(
                serde_json::to_string(&f).unwrap(),
                format!("\"{}\"", f.id())
            );
            assert_eq!(StageFault::for_task(f.reference_task()), f);
            assert!(f.id().starts_with(f.stage().name()));
        }
        assert!("parse.nope".parse::<StageFault>().is_err());
    }
}
