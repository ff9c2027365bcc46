//! What an external harness is handed for an item, and what the ledger is asked about it
//! afterwards.
//!
//! Every item replays its recorded decision. Most are handed **in viewport coordinates**
//! (the image the harness would send its model is the viewport itself: nothing to scale),
//! so a harness's defect shows only in the rows of the probe made for it:
//!
//! | fault                           | handed                                   | fired when the ledger shows                        |
//! |---------------------------------|------------------------------------------|----------------------------------------------------|
//! | `parse.token_leak`              | the reply with `<\|im_end\|>` in its typed text | the page received the token                  |
//! | `execute.unscaled_coordinates`  | the reply in the 900x600 image's pixels  | a click landed on the image point, unscaled        |
//! | `feedback.iframe_no_change`     | the reply (a click into an iframe)       | the click changed the iframe (the verifier's test) |
//! | `observe.capture_before_tooltip`| the reply (a hover, then the answer)     | the harness's capture began before the tooltip     |
//!
//! A network or page fault is armed on the item's scope exactly as for a built-in trial
//! and fires as it does there; a self-report fault rewrites the reply it is handed.

use crate::experiment::detection::TrialSpec;
use faultline_faults::{Fault, FaultPlan, Witness, LEAKED_TOKEN};
use faultline_sites::Ledger;
use faultline_tasks::{parse_reply, Action, ActionFormat, CoordinateSpace, Size};
use serde_json::json;

/// How close (in CSS pixels) a click must land to a point to count as landing on it.
const LANDED_PX: f64 = 2.0;

/// What the ledger is asked about a probe after the harness reports.
#[derive(Debug, Clone, PartialEq)]
pub enum Probe {
    /// Did the page receive the leaked token?
    LeakedToken,
    /// Did a click land on one of these image points, used as viewport points?
    Unscaled {
        /// The reply's points in image pixels.
        image_points: Vec<(f64, f64)>,
        /// The image and the viewport they should have been scaled between.
        image: Size,
        /// The viewport.
        viewport: Size,
    },
    /// Did the click change the iframe's table?
    IframeChange,
    /// Did the harness's capture begin before the tooltip appeared?
    TooltipCapture,
}

/// What an item's claim hands the harness, and what is kept to score it.
#[derive(Debug, Clone)]
pub struct Offered {
    /// The reply to replay.
    pub reply: String,
    /// Its language.
    pub format: ActionFormat,
    /// The space of its points.
    pub space: CoordinateSpace,
    /// The size of the image its points refer to: the screenshot size the harness sends
    /// its model.
    pub image: Size,
    /// The armed fault, when the item has one.
    pub plan: Option<FaultPlan>,
    /// The rewrite of the reply when a self-report fault fired on it.
    pub reply_witness: Option<Witness>,
    /// The conformance probe, for a reference stage fault.
    pub probe: Option<Probe>,
}

/// What `spec` hands an external harness. See the module documentation.
pub fn offer(spec: &TrialSpec, viewport: Size) -> Offered {
    let d = spec.decision();
    let plan = spec.fault().map(|f| FaultPlan::new(f, spec.trial_seed()));
    let (reply, reply_witness) = match &plan {
        Some(p) if d.format == ActionFormat::Faultline => p.on_decision(&d.reply),
        _ => (d.reply.clone(), None),
    };
    let in_image = |reply: String, probe| Offered {
        reply,
        format: d.format,
        space: d.space,
        image: d.image,
        plan,
        reply_witness: reply_witness.clone(),
        probe,
    };
    // Another agent's format is handed as it was recorded (its own coordinate space).
    if d.format != ActionFormat::Faultline || d.space != CoordinateSpace::Image {
        return in_image(reply, None);
    }
    let Ok(mut actions) = parse_reply(&reply) else {
        return in_image(reply, None);
    };
    let probe = match spec.fault() {
        Some(Fault::UnscaledCoordinates) => {
            let image_points = actions
                .iter()
                .filter_map(Action::point)
                .map(|p| (p.x, p.y))
                .collect();
            return in_image(
                reply,
                Some(Probe::Unscaled {
                    image_points,
                    image: d.image,
                    viewport,
                }),
            );
        }
        Some(Fault::TokenLeak) => {
            if let Some(Action::Type { text }) = actions
                .iter_mut()
                .find(|a| matches!(a, Action::Type { .. }))
            {
                text.push_str(LEAKED_TOKEN);
            }
            Some(Probe::LeakedToken)
        }
        Some(Fault::IframeNoChange) => Some(Probe::IframeChange),
        Some(Fault::CaptureBeforeTooltip) => Some(Probe::TooltipCapture),
        _ => None,
    };
    for a in &mut actions {
        scale_point(a, d.image, viewport);
    }
    Offered {
        reply: actions
            .iter()
            .map(Action::to_string)
            .collect::<Vec<_>>()
            .join("\n"),
        format: ActionFormat::Faultline,
        space: CoordinateSpace::Image,
        image: viewport,
        plan,
        reply_witness,
        probe,
    }
}

/// Moves a pointer action's point from `image` pixels to `viewport` pixels (to 1/100 px).
fn scale_point(a: &mut Action, image: Size, viewport: Size) {
    let round = |v: f64| (v * 100.0).round() / 100.0;
    match a {
        Action::Click { x, y }
        | Action::DoubleClick { x, y }
        | Action::RightClick { x, y }
        | Action::Hover { x, y } => {
            let p = faultline_tasks::geometry::Point::new(*x, *y).scale(image, viewport);
            (*x, *y) = (round(p.x), round(p.y));
        }
        _ => {}
    }
}

/// The probe's witness, when the ledger shows the harness met the probe's situation
/// (and, for a defect probe, showed the defect). `captures` are the page-clock intervals
/// the harness reported.
pub fn probe_witness(
    probe: &Probe,
    fault: Fault,
    ledger: &Ledger,
    captures: &[(f64, f64)],
) -> Option<Witness> {
    match probe {
        Probe::LeakedToken => {
            let e = ledger
                .events
                .iter()
                .find(|e| e.data.to_string().contains(LEAKED_TOKEN))?;
            Some(Witness::new(
                fault.id(),
                format!(
                    "the page received the leaked token in a `{}` event: the harness's parser did not strip it",
                    e.kind
                ),
                json!({ "event": e.kind, "data": e.data }),
            ))
        }
        Probe::Unscaled {
            image_points,
            image,
            viewport,
        } => {
            if image == viewport {
                return None;
            }
            ledger.of_kind("click").find_map(|e| {
                let (x, y) = (e.data["x"].as_f64()?, e.data["y"].as_f64()?);
                let &(ix, iy) = image_points
                    .iter()
                    .find(|(ix, iy)| (x - ix).abs() <= LANDED_PX && (y - iy).abs() <= LANDED_PX)?;
                let intended =
                    faultline_tasks::geometry::Point::new(ix, iy).scale(*image, *viewport);
                Some(Witness::new(
                    fault.id(),
                    format!(
                        "the click landed at ({x}, {y}), the image point itself; scaled to the viewport it is ({:.1}, {:.1}): the harness's executor did not scale",
                        intended.x, intended.y
                    ),
                    json!({
                        "image_point": [ix, iy],
                        "intended": [intended.x, intended.y],
                        "landed": [x, y],
                        "image": image,
                        "viewport": viewport,
                    }),
                ))
            })
        }
        Probe::IframeChange => {
            let e = ledger.last_of_kind("row_selected")?;
            Some(Witness::new(
                fault.id(),
                format!(
                    "the click went into the iframe and selected {}: the harness's verifier is tested on a change it must not call \"no change\"",
                    e.data["row"]
                ),
                json!({ "row_selected": e.data }),
            ))
        }
        Probe::TooltipCapture => {
            let &(begin, end) = captures.last()?;
            let shown = ledger
                .of_kind("tooltip_shown")
                .filter_map(|e| e.data["at_ms"].as_f64())
                .fold(None, |first: Option<f64>, t| {
                    Some(first.map_or(t, |f| f.min(t)))
                });
            let late = match shown {
                Some(t) => t > begin,
                None => true,
            };
            late.then(|| {
                Witness::new(
                    fault.id(),
                    match shown {
                        Some(t) => format!(
                            "the harness's last capture began at {begin:.0} ms, before the tooltip appeared at {t:.0} ms (page clock)"
                        ),
                        None => format!(
                            "the harness's last capture began at {begin:.0} ms and no tooltip had appeared"
                        ),
                    },
                    json!({ "capture": [begin, end], "tooltip_shown_ms": shown }),
                )
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use faultline_tasks::{Decision, TaskKind};

    fn spec(task: TaskKind, fault: Option<Fault>) -> TrialSpec {
        let config = crate::config::resolve(
            &crate::config::load_text(None).unwrap(),
            &crate::config::Overrides {
                layouts: Some(1),
                ..Default::default()
            },
        )
        .unwrap();
        let (set, _) = crate::experiment::decisions::preload(&config)
            .unwrap()
            .expect("the committed decisions cover the default run");
        let specs = crate::experiment::detection::specs(&config, &set);
        specs
            .into_iter()
            .find(|s| s.task() == task && s.fault() == fault)
            .unwrap_or_else(|| panic!("no {task} item with {fault:?}"))
    }

    fn decision(s: &TrialSpec) -> &Decision {
        s.decision()
    }

    const VIEWPORT: Size = Size {
        width: 1200,
        height: 800,
    };

    #[test]
    fn a_working_item_is_handed_in_viewport_pixels_and_names_no_fault() {
        let s = spec(TaskKind::Grid, None);
        let o = offer(&s, VIEWPORT);
        assert_eq!(o.image, VIEWPORT);
        assert!(o.probe.is_none() && o.plan.is_none());
        let p = parse_reply(&o.reply).unwrap()[0].point().unwrap();
        let recorded = decision(&s).actions[0].point().unwrap();
        assert!((p.x - recorded.x * 4.0 / 3.0).abs() < 0.01, "{}", o.reply);
        assert!((p.y - recorded.y * 4.0 / 3.0).abs() < 0.01, "{}", o.reply);
    }

    #[test]
    fn the_execute_probe_is_handed_in_image_pixels() {
        let s = spec(TaskKind::Grid, Some(Fault::UnscaledCoordinates));
        let o = offer(&s, VIEWPORT);
        assert_eq!(o.image, decision(&s).image);
        assert_eq!(o.reply, decision(&s).reply);
        assert!(matches!(o.probe, Some(Probe::Unscaled { .. })));
    }

    #[test]
    fn the_parse_probe_leaks_the_token_into_the_typed_text_only() {
        let s = spec(TaskKind::Search, Some(Fault::TokenLeak));
        let o = offer(&s, VIEWPORT);
        assert!(o.reply.contains(LEAKED_TOKEN), "{}", o.reply);
        let clean = o.reply.replace(LEAKED_TOKEN, "");
        assert_eq!(
            parse_reply(&clean).unwrap(),
            decision(&s).actions,
            "stripping the token gives back the recorded actions"
        );
    }

    #[test]
    fn an_unscaled_click_is_told_from_a_scaled_one_by_the_ledger() {
        let probe = Probe::Unscaled {
            image_points: vec![(96.0, 397.0)],
            image: Size {
                width: 900,
                height: 600,
            },
            viewport: VIEWPORT,
        };
        let ledger = |x: f64, y: f64| Ledger {
            scope: "t".into(),
            events: vec![faultline_sites::LedgerEvent {
                seq: 0,
                server_ms: 1.0,
                kind: "click".into(),
                page_ms: Some(1.0),
                data: json!({ "x": x, "y": y }),
            }],
        };
        let w = probe_witness(
            &probe,
            Fault::UnscaledCoordinates,
            &ledger(96.0, 397.0),
            &[],
        );
        assert!(w.is_some(), "landed on the image point: fired");
        let w = probe_witness(
            &probe,
            Fault::UnscaledCoordinates,
            &ledger(128.0, 529.0),
            &[],
        );
        assert!(w.is_none(), "landed on the scaled point: not fired");
    }
}
