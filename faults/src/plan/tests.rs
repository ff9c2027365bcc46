use super::*;
use crate::site::NetworkEffect;
use faultline_tasks::layout::VIEWPORT;

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
        nominal: "Clicked at (1, 2).",
        clicked_into_iframe: into,
        last_click: Some(Point::new(1.0, 2.0)),
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
fn skipped_waits_witness_requires_a_skipped_wait() {
    let p = plan(Fault::CaptureBeforeSettled);
    assert!(p.skips_waits());
    assert!(p.skipped_waits_witness(&[], 120).is_none());
    let met = json!({ "tag": "DIV", "id": "area" });
    let w = p
        .skipped_waits_witness(&[(600, Some(met.clone()))], 120)
        .expect("a skipped wait fired");
    assert_eq!(w.fault, "tool.capture_before_settled");
    assert_eq!(w.data["skipped"][0]["ms"], 600);
    assert_eq!(w.data["skipped"][0]["next_action_met"], met);
    assert_eq!(w.data["settle_skipped_ms"], 120);
    let other = plan(Fault::CaptureBeforeTooltip);
    assert!(!other.skips_waits());
    assert!(other.skipped_waits_witness(&[(600, None)], 120).is_none());
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

#[test]
fn self_report_faults_rewrite_the_decision() {
    let (text, w) =
        plan(Fault::FalseCompletion).on_decision("type(\"Record-10\")\npress(\"Enter\")");
    assert_eq!(text, format!("type(\"Record-10\")\n{FALSE_CLAIM}\nstop()"));
    assert_eq!(w.unwrap().str("dropped"), Some("press(\"Enter\")"));
    // One browser action: nothing to drop, so it does not fire.
    assert!(plan(Fault::FalseCompletion)
        .on_decision("click(1, 2)")
        .1
        .is_none());
    let (text, w) = plan(Fault::DoubleSubmit).on_decision("type(\"a\")\nclick(5, 6)");
    assert_eq!(text, "type(\"a\")\nclick(5, 6)\nclick(5, 6)");
    assert!(w.is_some());
    let (text, w) = plan(Fault::UnobservedValue).on_decision("hover(3, 4)\nanswer(\"57\")");
    assert_eq!((text.as_str(), w.is_some()), ("answer(\"57\")", true));
    // Other faults leave the reply alone.
    assert_eq!(
        plan(Fault::Modal).on_decision("click(1, 2)"),
        ("click(1, 2)".into(), None)
    );
}

#[test]
fn tool_faults_rewrite_messages_only_when_their_condition_holds() {
    let err = "Error: could not dispatch the click at (1, 2): x.";
    let ctx = FeedbackContext {
        honest: err,
        nominal: "Clicked at (1, 2).",
        clicked_into_iframe: false,
        last_click: Some(Point::new(1.0, 2.0)),
    };
    let (m, w) = plan(Fault::ErrorSwallowed).on_feedback(&ctx);
    assert_eq!(
        (m.as_str(), w.unwrap().str("original")),
        ("Clicked at (1, 2).", Some(err))
    );
    let ok = FeedbackContext {
        honest: "Clicked at (1, 2).",
        ..ctx
    };
    assert!(plan(Fault::ErrorSwallowed).on_feedback(&ok).1.is_none());
    let (m, w) = plan(Fault::WrongFeedback).on_feedback(&ok);
    assert!(m.starts_with("Error: no clickable element") && w.is_some());
    assert!(
        plan(Fault::WrongFeedback).on_feedback(&ctx).1.is_none(),
        "an honest error is left alone"
    );
    let p = plan(Fault::ErrorSwallowed);
    assert!(p
        .fails_dispatch(&Action::Click { x: 1.0, y: 2.0 }, None)
        .is_some());
    assert!(p
        .fails_dispatch(&Action::Type { text: "a".into() }, None)
        .is_none());
}

#[test]
fn site_faults_are_seeded_and_cover_the_target() {
    for index in 0..20 {
        let layout = Layout::for_root(1, faultline_tasks::TaskKind::Grid, index);
        let t = target_rect(&layout).unwrap();
        let banner = plan(Fault::CookieBanner).site(&layout).unwrap();
        let PageMod::CookieBanner { rect } = &banner.page[0] else {
            panic!()
        };
        assert!(rect.contains(t.center()), "layout {index}");
        let PageMod::DecoyPopup { rect } = &plan(Fault::DecoyPopup).site(&layout).unwrap().page[0]
        else {
            panic!()
        };
        assert!(rect.contains(t.center()), "layout {index}");
        let PageMod::DuplicateLabel { moved_to } =
            &plan(Fault::DuplicateLabel).site(&layout).unwrap().page[0]
        else {
            panic!()
        };
        assert!(!moved_to.contains(t.center()));
        let Some(BeforeAct::Viewport { width, .. }) =
            plan(Fault::ViewportChanged).before_act(VIEWPORT, &layout)
        else {
            panic!()
        };
        let shift = (f64::from(VIEWPORT.width) - f64::from(width)) / 2.0;
        assert!(
            shift > t.width / 2.0 + 4.0 && width >= 900,
            "layout {index}: width {width}"
        );
    }
    let layout = Layout::for_root(1, faultline_tasks::TaskKind::Form, 0);
    let a = plan(Fault::SlowResponse).site(&layout);
    assert_eq!(
        a,
        plan(Fault::SlowResponse).site(&layout),
        "same seed, same parameters"
    );
    assert_ne!(a, FaultPlan::new(Fault::SlowResponse, 8).site(&layout));
    assert!(plan(Fault::TokenLeak).site(&layout).is_none());
}

/// A fault whose site side holds a request or the page's main thread is one the
/// phases start early (`Fault::waits_out_a_deadline`): a new holding fault that is not
/// marked would silently become a run's tail again.
#[test]
fn every_fault_that_holds_the_page_or_a_request_is_marked_as_waiting_out_a_deadline() {
    let mut holding = std::collections::BTreeSet::new();
    for &fault in Fault::ALL {
        for &task in fault.tasks() {
            let layout = Layout::for_root(1, task, 0);
            let Some(site) = FaultPlan::new(fault, 7).site(&layout) else {
                continue;
            };
            let holds = site
                .network
                .iter()
                .any(|r| matches!(r.effect, NetworkEffect::Hang { .. }))
                || site
                    .page
                    .iter()
                    .any(|m| matches!(m, PageMod::HangAfterClick { .. }));
            if holds {
                assert!(
                    fault.waits_out_a_deadline(),
                    "{fault} holds but is not marked"
                );
                holding.insert(fault);
            }
        }
    }
    assert!(holding.contains(&Fault::MainThreadHang) && holding.contains(&Fault::RequestHangs));
    assert!(!Fault::SlowResponse.waits_out_a_deadline());
}

/// Whether every hook but feedback leaves a trial under `fault` as the working trial has
/// it, for each of its tasks' first layouts and a few seeds and replies.
fn inert_but_for_feedback(fault: Fault) -> bool {
    inert_but_for(fault, Hook::Feedback)
}

/// The one hook a fault that rides on its working trial's page may act at.
#[derive(Clone, Copy, PartialEq)]
enum Hook {
    Feedback,
    HoverSettle,
}

/// Whether every hook but `allowed` leaves a trial under `fault` as the working trial
/// has it, for each of its tasks' first layouts and a few seeds and replies.
fn inert_but_for(fault: Fault, allowed: Hook) -> bool {
    let image = Size::new(900, 600);
    let replies = [
        "click(450, 300)",
        "type(\"Record-10\")\npress(\"Enter\")",
        "hover(120, 80)\nanswer(\"57\")",
        "click(10, 10)\nclick(20, 20)\nstop()",
        "wait(500)\nclick(300, 200)",
    ];
    if fault.draws_parameters() || fault.on_the_protocol() {
        return false;
    }
    for seed in [0, 7, 1234] {
        let plan = FaultPlan::new(fault, seed);
        let flags = plan.misreads_coordinates()
            || plan.crashes_renderer()
            || plan.hangs_page()
            || plan.skips_waits()
            || (allowed != Hook::HoverSettle && plan.skips_hover_settle())
            || (allowed != Hook::Feedback && plan.needs_iframe_hit_test())
            || plan.misread(image, VIEWPORT).is_some();
        if flags {
            return false;
        }
        for &task in fault.tasks() {
            for index in 0..3 {
                let layout = Layout::for_root(1, task, index);
                if plan.site(&layout).is_some() || plan.before_act(VIEWPORT, &layout).is_some() {
                    return false;
                }
            }
        }
        for reply in replies {
            if plan.on_decision(reply) != (reply.to_string(), None) {
                return false;
            }
            let Ok(mut actions) = parse_reply(reply) else {
                continue;
            };
            let parsed = actions.clone();
            if plan.on_parse(&mut actions).is_some() || actions != parsed {
                return false;
            }
            for a in &actions {
                if plan.fails_dispatch(a, Some(Point::new(1.0, 1.0))).is_some() {
                    return false;
                }
            }
        }
        let p = Point::new(450.0, 300.0);
        if plan.on_execute(p, image, VIEWPORT) != (p.scale(image, VIEWPORT), None) {
            return false;
        }
        if allowed != Hook::Feedback {
            for (honest, nominal, into) in [
                ("Clicked at (1, 2).", "Clicked at (1, 2).", true),
                ("Error: timed out.", "Clicked at (1, 2).", false),
            ] {
                let ctx = FeedbackContext {
                    honest,
                    nominal,
                    clicked_into_iframe: into,
                    last_click: Some(Point::new(1.0, 2.0)),
                };
                if plan.on_feedback(&ctx) != (honest.to_string(), None) {
                    return false;
                }
            }
        }
        if allowed != Hook::HoverSettle && plan.capture_witness(0.0, 10.0, None).is_some() {
            return false;
        }
    }
    true
}

/// The detection phase runs a trial whose fault acts only on the capture's timing on its
/// working trial's page (`Fault::acts_only_on_capture_timing`): the early capture is its
/// observation, the working trial's comes after the settle. Sound only while every other
/// hook of the fault leaves the trial alone: among the observe-stage faults, exactly the
/// marked ones must be inert elsewhere.
#[test]
fn faults_marked_as_acting_only_on_capture_timing_leave_every_other_hook_alone() {
    let mut marked = Vec::new();
    for &fault in Fault::ALL {
        if fault.acts_only_on_capture_timing() {
            marked.push(fault);
            assert_eq!(fault.stage(), crate::catalogue::Stage::Observe, "{fault}");
            assert!(!fault.acts_only_on_feedback(), "{fault}");
        }
        if fault.stage() == crate::catalogue::Stage::Observe {
            assert_eq!(
                fault.acts_only_on_capture_timing(),
                inert_but_for(fault, Hook::HoverSettle),
                "{fault}: marked as acting only on capture timing iff every other hook is inert"
            );
        }
        assert_eq!(
            fault.rides_on_working_page(),
            fault.acts_only_on_feedback() || fault.acts_only_on_capture_timing()
        );
    }
    assert_eq!(marked, vec![Fault::CaptureBeforeTooltip]);
    // A fault that skips every wait acts on the actions' timing too: it cannot ride.
    assert!(!inert_but_for(
        Fault::CaptureBeforeSettled,
        Hook::HoverSettle
    ));
}

/// The detection phase runs a trial whose fault acts only on the feedback on its working
/// trial's page (`Fault::acts_only_on_feedback`); that is sound only while every other
/// hook of the fault leaves the trial alone. Among the feedback-stage faults, exactly the
/// marked ones must be inert elsewhere: a marked fault given a page side, or a new
/// feedback-only fault left unmarked, fails here.
#[test]
fn faults_marked_as_acting_only_on_feedback_leave_every_other_hook_alone() {
    let mut marked = Vec::new();
    for &fault in Fault::ALL {
        if fault.acts_only_on_feedback() {
            marked.push(fault);
            assert_eq!(fault.stage(), crate::catalogue::Stage::Feedback, "{fault}");
        }
        if fault.stage() == crate::catalogue::Stage::Feedback {
            assert_eq!(
                fault.acts_only_on_feedback(),
                inert_but_for_feedback(fault),
                "{fault}: marked as acting only on feedback iff every other hook is inert"
            );
        }
    }
    assert_eq!(marked, vec![Fault::IframeNoChange, Fault::WrongFeedback]);
    // The two feedback faults that also act elsewhere: a dropped dispatch, a held request.
    assert!(!inert_but_for_feedback(Fault::ErrorSwallowed));
    assert!(!inert_but_for_feedback(Fault::TimeoutAsSuccess));
}
