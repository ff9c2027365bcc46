use super::*;
use crate::evidence::{Control, Evidence, FrameSnapshot, Observation, PageState};
use crate::{Judgement, Verdict, VerificationPolicy};
use faultline_tasks::{Instruction, Size, TaskKind};

fn obs(text: &str, png: Vec<u8>) -> Observation {
    Observation {
        png,
        size: Size::new(4, 4),
        text: text.into(),
    }
}

fn png(color: [u8; 3], changed: u32) -> Vec<u8> {
    let mut img = image::RgbImage::from_pixel(100, 100, image::Rgb([255, 255, 255]));
    for i in 0..changed {
        img.put_pixel(i % 100, i / 100, image::Rgb(color));
    }
    let mut out = Vec::new();
    img.write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png)
        .unwrap();
    out
}

fn frame(top: bool, digest: &str, selected: &[&str], controls: Vec<Control>) -> FrameSnapshot {
    FrameSnapshot {
        url: if top {
            "http://x/top".into()
        } else {
            "http://x/f".into()
        },
        is_top: top,
        dom_digest: digest.into(),
        text: String::new(),
        controls,
        selected: selected.iter().map(|s| s.to_string()).collect(),
        focus: String::new(),
        scroll: Vec::new(),
        selection: String::new(),
    }
}

struct Case {
    instruction: Instruction,
    message: String,
    before: Observation,
    after: Observation,
    before_state: PageState,
    after_state: PageState,
}

impl Case {
    fn new(task: TaskKind, text: &str) -> Case {
        let state = PageState {
            url: "http://x/top".into(),
            frames: vec![frame(true, "a", &[], vec![])],
        };
        Case {
            instruction: Instruction {
                task,
                text: text.into(),
            },
            message: "Clicked at (1, 2).".into(),
            before: obs("", png([0, 0, 0], 0)),
            after: obs("", png([0, 0, 0], 0)),
            before_state: state.clone(),
            after_state: state,
        }
    }
    fn judge(&self, p: &dyn VerificationPolicy) -> Judgement {
        p.judge(&Evidence {
            instruction: &self.instruction,
            actions: &[],
            tool_message: &self.message,
            before: &self.before,
            after: &self.after,
            before_state: &self.before_state,
            after_state: &self.after_state,
        })
        .expect("a built-in policy always judges")
    }
}

#[test]
fn unverified_believes_the_message() {
    let mut c = Case::new(TaskKind::Grid, "Click the button \"Item 3\".");
    assert_eq!(c.judge(&UnverifiedPolicy).verdict, Verdict::Success);
    c.message = "No change detected.".into();
    assert_eq!(c.judge(&UnverifiedPolicy).verdict, Verdict::NoChange);
    c.message = "Error: element not found".into();
    assert_eq!(c.judge(&UnverifiedPolicy).verdict, Verdict::Fail);
    c.message =
        "Typed \"a\". Pressed Enter. Error: the page did not finish loading within 4.0 s.".into();
    assert_eq!(c.judge(&UnverifiedPolicy).verdict, Verdict::Fail);
}

#[test]
fn state_sees_focus_scroll_and_selection_that_generic_does_not() {
    let mut c = Case::new(TaskKind::Grid, "Click the button \"Item 3\".");
    assert_eq!(c.judge(&GenericPolicy).verdict, Verdict::NoChange);
    assert_eq!(c.judge(&StatePolicy).verdict, Verdict::NoChange);
    // Focus only.
    c.after_state.frames[0].focus = "input#name".into();
    assert_eq!(c.judge(&GenericPolicy).verdict, Verdict::NoChange);
    let j = c.judge(&StatePolicy);
    assert_eq!(j.verdict, Verdict::Success);
    assert!(j.message.contains("input#name"), "{}", j.message);
    c.after_state.frames[0].focus.clear();
    // Scroll only.
    c.after_state.frames[0].scroll = vec![crate::ScrollOffset {
        target: "window".into(),
        x: 0,
        y: 400,
    }];
    assert_eq!(c.judge(&GenericPolicy).verdict, Verdict::NoChange);
    assert_eq!(c.judge(&StatePolicy).verdict, Verdict::Success);
    c.after_state.frames[0].scroll.clear();
    // Selection only.
    c.after_state.frames[0].selection = "harbour".into();
    assert_eq!(c.judge(&GenericPolicy).verdict, Verdict::NoChange);
    assert_eq!(c.judge(&StatePolicy).verdict, Verdict::Success);
    c.after_state.frames[0].selection.clear();
    // In a child frame too, which generic never looks at.
    c.before_state.frames.push(frame(false, "f", &[], vec![]));
    c.after_state.frames.push(frame(false, "f", &[], vec![]));
    c.after_state.frames[1].focus = "input#q".into();
    assert_eq!(c.judge(&StatePolicy).verdict, Verdict::Success);
    c.after_state.frames[1].focus.clear();
    assert_eq!(c.judge(&StatePolicy).verdict, Verdict::NoChange);
    // A DOM change is a success for both, with generic's message.
    c.after_state.frames[0].dom_digest = "b".into();
    assert_eq!(c.judge(&StatePolicy), c.judge(&GenericPolicy));
}

#[test]
fn generic_ignores_child_frames() {
    let mut c = Case::new(
        TaskKind::Frame,
        "Select the row \"Order 7\" in the orders table.",
    );
    c.before_state.frames.push(frame(false, "f1", &[], vec![]));
    c.after_state
        .frames
        .push(frame(false, "f2", &["Order 7"], vec![]));
    assert_eq!(c.judge(&GenericPolicy).verdict, Verdict::NoChange);
    // ...which the outcome policy does not.
    assert_eq!(c.judge(&OutcomePolicy).verdict, Verdict::Success);
    c.after_state.frames[0].dom_digest = "b".into();
    assert_eq!(c.judge(&GenericPolicy).verdict, Verdict::Success);
}

#[test]
fn pixel_threshold_separates_a_caret_from_a_button() {
    let mut c = Case::new(TaskKind::Grid, "Click the button \"Item 3\".");
    c.after = obs("", png([0, 0, 0], 2));
    assert_eq!(c.judge(&PixelPolicy::default()).verdict, Verdict::NoChange);
    c.after = obs("", png([0, 0, 0], 400));
    assert_eq!(c.judge(&PixelPolicy::default()).verdict, Verdict::Success);
    // Changes below the channel tolerance are noise.
    c.after = obs("", png([250, 250, 250], 400));
    assert_eq!(c.judge(&PixelPolicy::default()).verdict, Verdict::NoChange);
}

#[test]
fn outcome_reads_the_field_back_exactly() {
    let mut c = Case::new(
        TaskKind::Search,
        "Search for the exact record \"Record-10\": type it into the search field and submit.",
    );
    let field = |v: &str| Control {
        tag: "input".into(),
        kind: "text".into(),
        name: "q".into(),
        label: "Search records".into(),
        value: v.into(),
        checked: false,
    };
    c.after_state.url = "http://x/results".into();
    c.after_state.frames[0].controls = vec![field("Record-10<|im_end|>")];
    let j = c.judge(&OutcomePolicy);
    assert_eq!(j.verdict, Verdict::Fail);
    assert!(j.message.contains("<|im_end|>"));
    c.after_state.frames[0].controls = vec![field("Record-10")];
    assert_eq!(c.judge(&OutcomePolicy).verdict, Verdict::Success);
    c.after_state.url = c.before_state.url.clone();
    assert_eq!(c.judge(&OutcomePolicy).verdict, Verdict::NoChange);
}

#[test]
fn outcome_names_the_wrong_item() {
    let mut c = Case::new(TaskKind::Grid, "Click the button \"Item 3\".");
    assert_eq!(c.judge(&OutcomePolicy).verdict, Verdict::NoChange);
    c.after_state.frames[0].selected = vec!["Item 30".into()];
    let j = c.judge(&OutcomePolicy);
    assert_eq!(j.verdict, Verdict::Fail);
    assert!(j.message.contains("Item 30"));
    c.after_state.frames[0].selected = vec!["Item 3".into()];
    assert_eq!(c.judge(&OutcomePolicy).verdict, Verdict::Success);
}

#[test]
fn outcome_needs_the_value_in_the_observation() {
    let mut c = Case::new(
        TaskKind::Chart,
        "Hover the bar for \"Mar\" and report the value its tooltip shows.",
    );
    c.after = obs("Monthly sales\nJan\nFeb\nMar", vec![]);
    assert_eq!(c.judge(&OutcomePolicy).verdict, Verdict::NoChange);
    c.after = obs("Monthly sales\nFeb: 41\nJan\nFeb\nMar", vec![]);
    assert_eq!(c.judge(&OutcomePolicy).verdict, Verdict::Fail);
    c.after = obs("Monthly sales\nMar: 57\nJan\nFeb\nMar", vec![]);
    let j = c.judge(&OutcomePolicy);
    assert_eq!(j.verdict, Verdict::Success);
    assert!(j.message.contains("57"));
}

#[test]
fn outcome_wants_the_note_listed_exactly_once() {
    let mut c = Case::new(
        TaskKind::Form,
        "Save the note \"Buy milk 4\": type it into the note field and press Save once.",
    );
    c.after_state.frames[0].text = "Notes\nPay rent 3".into();
    assert_eq!(c.judge(&OutcomePolicy).verdict, Verdict::NoChange);
    c.after_state.frames[0].text = "Notes\nPay rent 3\nBuy milk 4".into();
    assert_eq!(c.judge(&OutcomePolicy).verdict, Verdict::Success);
    c.after_state.frames[0].text = "Notes\nBuy milk 4\nBuy milk 4".into();
    let j = c.judge(&OutcomePolicy);
    assert_eq!(j.verdict, Verdict::Fail);
    assert!(j.message.contains("2 times"));
}

#[test]
fn outcome_reads_the_menu_back() {
    let mut c = Case::new(
        TaskKind::Select,
        "Choose \"Express\" as the shipping speed.",
    );
    let menu = |v: &str| Control {
        tag: "select".into(),
        kind: "select-one".into(),
        name: "speed".into(),
        label: "Shipping speed".into(),
        value: v.into(),
        checked: false,
    };
    c.before_state.frames[0].controls = vec![menu("Standard")];
    c.after_state.frames[0].controls = vec![menu("Standard")];
    assert_eq!(c.judge(&OutcomePolicy).verdict, Verdict::NoChange);
    c.after_state.frames[0].controls = vec![menu("Pickup")];
    assert_eq!(c.judge(&OutcomePolicy).verdict, Verdict::Fail);
    c.after_state.frames[0].controls = vec![menu("Express")];
    assert_eq!(c.judge(&OutcomePolicy).verdict, Verdict::Success);
}

#[test]
fn registry_rebuilds_policies_by_name() {
    let r = crate::Registry::default();
    for name in crate::BUILTIN {
        assert_eq!(r.build(name).unwrap().name(), name);
    }
    let e = r.build("outcom").err().unwrap();
    assert!(
        e.contains("known: generic, outcome, pixel, state, unverified"),
        "{e}"
    );
}
