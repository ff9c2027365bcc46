//! Trajectory files: other agents' recorded replies, one per line, imported as decisions.
//!
//! One JSON object per line (blank lines are skipped):
//!
//! ```text
//! {"layout_index": 0, "image": [960, 640], "reply": {"action": "left_click", "coordinate": [77, 318]}}
//! {"layout_index": 1, "reply": "Thought: ...\nAction: click(start_box='(560,456)')", "space": "normalized_1000"}
//! ```
//!
//! | field | meaning |
//! |---|---|
//! | `layout_index` | which layout of the task (under the root seed) the reply was made on: 0 to 9999 ([`MAX_LAYOUTS`] per task) |
//! | `image` | `[width, height]` of the screenshot the model was sent, each 1 to [`MAX_IMAGE_SIDE`] (16384); optional when the importer is given a default (`--image WxH`) |
//! | `space` | optional: `image` or `normalized_1000`, for the formats that come in both (UI-TARS, Qwen); else the format's default |
//! | `reply` | the format's native payload: a JSON object or array for `anthropic`, `openai` and `qwen` tool calls (a string holding the JSON also works), a string for `browsergym`, `uitars`, `faultline` and Qwen's `<tool_call>` text |
//!
//! Every line is validated, the reply within the bounds every format shares (points'
//! coordinates at most [`crate::action::MAX_COORDINATE`], texts at most
//! [`crate::action::MAX_TEXT_CHARS`] characters); the first problem is reported as
//! `file:line: field: expected ...`. Each becomes a [`Decision`] whose `reply` is the raw payload (JSON
//! payloads as compact JSON text), whose `actions` are the converted ones, and whose
//! source is `import:<format>`; it replays like any other decision.

use super::{ActionFormat, CoordinateSpace};
use crate::decision::{Decision, DecisionError, DecisionSet};
use crate::geometry::Size;
use crate::layout::{Layout, TaskKind, MAX_IMAGE_SIDE, MAX_LAYOUTS, VIEWPORT};
use serde_json::Value;

/// What an import applies to every line of a trajectory file.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ImportOptions {
    /// The action format every line's reply is written in.
    pub format: ActionFormat,
    /// The task every line was recorded on.
    pub task: TaskKind,
    /// The root seed the imported decisions are stored under.
    pub root_seed: u64,
    /// The screenshot size for lines that do not give their own.
    pub image: Option<Size>,
    /// The coordinate space for lines that do not give their own (else the format's).
    pub space: Option<CoordinateSpace>,
}

const FIELDS: &[&str] = &["layout_index", "image", "space", "reply"];

/// Converts a trajectory file's text into decisions; `file` names it in errors.
pub fn import(file: &str, text: &str, opts: &ImportOptions) -> Result<DecisionSet, DecisionError> {
    let mut set = DecisionSet::default();
    for (i, line) in text.lines().enumerate() {
        let err = |reason: String| DecisionError {
            file: file.to_string(),
            line: i + 1,
            reason,
        };
        if line.trim().is_empty() {
            continue;
        }
        let d = import_line(line, opts).map_err(err)?;
        if set
            .decisions
            .iter()
            .any(|p| p.layout_index == d.layout_index)
        {
            return Err(err(format!(
                "layout_index: expected each layout once, found {} again",
                d.layout_index
            )));
        }
        set.decisions.push(d);
    }
    if set.decisions.is_empty() {
        return Err(DecisionError {
            file: file.to_string(),
            line: 0,
            reason: "expected at least one trajectory line, found none".into(),
        });
    }
    Ok(set)
}

fn import_line(line: &str, opts: &ImportOptions) -> Result<Decision, String> {
    let value: Value = serde_json::from_str(line).map_err(|e| {
        format!("line: expected one JSON object, found text that is not JSON ({e})")
    })?;
    let Value::Object(o) = value else {
        return Err(format!(
            "line: expected a JSON object with {}, found {}",
            FIELDS.join(", "),
            super::kind(&value)
        ));
    };
    if let Some(k) = o.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return Err(format!(
            "{k}: expected only the fields {}, found `{k}`",
            FIELDS.join(", ")
        ));
    }
    let layout_index = match o.get("layout_index") {
        Some(v) => v
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| *n < MAX_LAYOUTS)
            .ok_or_else(|| {
                format!(
                    "layout_index: expected a whole number from 0 to {} (a run has at most {MAX_LAYOUTS} layouts per task), found {v}",
                    MAX_LAYOUTS - 1
                )
            })?,
        None => return Err("layout_index: expected a whole number, found nothing".into()),
    };
    let image = match o.get("image") {
        Some(v) => size(v).ok_or_else(|| {
            format!("image: expected [width, height], two whole numbers from 1 to {MAX_IMAGE_SIDE}, found {v}")
        })?,
        None => opts.image.ok_or(
            "image: expected [width, height] of the screenshot the model was sent (or a default image size), found nothing",
        )?,
    };
    let space =
        match o.get("space") {
            Some(Value::String(s)) => Some(s.parse::<CoordinateSpace>().map_err(|e| {
                format!("space: expected image or normalized_1000, found `{s}` ({e})")
            })?),
            Some(v) => {
                return Err(format!(
                    "space: expected \"image\" or \"normalized_1000\", found {v}"
                ))
            }
            None => opts.space,
        };
    if let Some(s) = space {
        if !opts.format.allows(s) {
            return Err(format!(
                "space: expected {} for the {} format, found {s}",
                opts.format.default_space(),
                opts.format
            ));
        }
    }
    let reply = match (o.get("reply"), opts.format) {
        (Some(Value::String(s)), _) => s.clone(),
        (Some(v @ (Value::Object(_) | Value::Array(_))), f)
            if f.is_json() || f == ActionFormat::Qwen =>
        {
            serde_json::to_string(v).expect("JSON values serialise")
        }
        (Some(v), f) if f.is_json() || f == ActionFormat::Qwen => {
            return Err(format!(
                "reply: expected the {f} payload as a JSON object or array, found {}",
                super::kind(v)
            ))
        }
        (Some(v), f) => {
            return Err(format!(
                "reply: expected the {f} reply text as a string, found {}",
                super::kind(v)
            ))
        }
        (None, _) => return Err("reply: expected the model's reply, found nothing".into()),
    };
    let layout = Layout::for_root(opts.root_seed, opts.task, layout_index);
    Decision::import(
        opts.root_seed,
        &layout,
        opts.format,
        reply,
        space,
        image,
        VIEWPORT,
        &format!("import:{}", opts.format),
    )
}

fn size(v: &Value) -> Option<Size> {
    let a = v.as_array()?;
    let [w, h] = a.as_slice() else {
        return None;
    };
    let side = |v: &Value| {
        v.as_u64()
            .filter(|n| (1..=u64::from(MAX_IMAGE_SIDE)).contains(n))
            .map(|n| n as u32)
    };
    Some(Size::new(side(w)?, side(h)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::action::Action;
    use crate::seed::DEFAULT_ROOT_SEED;

    fn opts(format: ActionFormat) -> ImportOptions {
        ImportOptions {
            format,
            task: TaskKind::Grid,
            root_seed: DEFAULT_ROOT_SEED,
            image: None,
            space: None,
        }
    }

    #[test]
    fn lines_become_decisions_that_load_again() {
        let text = r#"{"layout_index": 0, "image": [960, 640], "reply": {"action": "left_click", "coordinate": [77, 318]}}

{"layout_index": 3, "image": [960, 640], "reply": [{"type": "text", "text": "Clicking."}, {"type": "tool_use", "id": "toolu_1", "name": "computer", "input": {"action": "left_click", "coordinate": [10, 20]}}]}"#;
        let set = import("t.jsonl", text, &opts(ActionFormat::Anthropic)).unwrap();
        assert_eq!(set.decisions.len(), 2);
        let d = &set.decisions[0];
        assert_eq!(d.reply, r#"{"action":"left_click","coordinate":[77,318]}"#);
        assert_eq!(d.actions, vec![Action::Click { x: 77.0, y: 318.0 }]);
        assert_eq!(
            (d.image, d.source.as_str()),
            (Size::new(960, 640), "import:anthropic")
        );
        assert_eq!(
            d.layout_seed,
            Layout::for_root(DEFAULT_ROOT_SEED, TaskKind::Grid, 0).seed
        );
        assert_eq!(DecisionSet::parse("d.jsonl", &set.to_jsonl()).unwrap(), set);
    }

    #[test]
    fn image_and_space_defaults_and_overrides() {
        let mut o = opts(ActionFormat::Qwen);
        o.image = Some(Size::new(1000, 1000));
        let line = r#"{"layout_index": 1, "space": "normalized_1000", "reply": "<tool_call>{\"name\": \"computer_use\", \"arguments\": {\"action\": \"left_click\", \"coordinate\": [500, 500]}}</tool_call>"}"#;
        let d = &import("q.jsonl", line, &o).unwrap().decisions[0];
        assert_eq!(
            (d.space, d.image),
            (CoordinateSpace::Normalized1000, Size::new(1000, 1000))
        );
        let tars = r#"{"layout_index": 2, "image": [1200, 800], "reply": "Action: click(start_box='(5,6)')"}"#;
        let d = &import("u.jsonl", tars, &opts(ActionFormat::UiTars))
            .unwrap()
            .decisions[0];
        assert_eq!(d.space, CoordinateSpace::Normalized1000);
    }

    #[test]
    fn bad_lines_name_file_line_and_field() {
        let e = |format, text: &str| {
            let e = import("t.jsonl", text, &opts(format)).unwrap_err();
            e.to_string()
        };
        let ok = r#"{"layout_index": 0, "image": [960, 640], "reply": "mouse_click(1, 2)"}"#;
        assert_eq!(
            e(ActionFormat::BrowserGym, &format!("{ok}\n{{\"layout_index\": 1, \"reply\": \"mouse_click(1, 2)\"}}")),
            "t.jsonl:2: image: expected [width, height] of the screenshot the model was sent (or a default image size), found nothing"
        );
        assert_eq!(
            e(
                ActionFormat::BrowserGym,
                r#"{"layout_index": 0, "image": [960, 640], "reply": "mouse_click(1, \"x\")"}"#
            ),
            "t.jsonl:1: reply line 1: mouse_click(y): expected a number, found the string \"x\""
        );
        assert!(e(ActionFormat::BrowserGym, &format!("{ok}\n{ok}"))
            .starts_with("t.jsonl:2: layout_index: expected each layout once"));
        assert!(e(
            ActionFormat::BrowserGym,
            r#"{"layout_index": -1, "reply": ""}"#
        )
        .starts_with("t.jsonl:1: layout_index:"));
        assert!(e(
            ActionFormat::BrowserGym,
            r#"{"layout_index": 0, "image": [960, 640], "reply": {}}"#
        )
        .starts_with("t.jsonl:1: reply: expected the browsergym reply text as a string"));
        assert!(e(
            ActionFormat::Anthropic,
            r#"{"layout_index": 0, "image": [0, 640], "reply": {}}"#
        )
        .starts_with("t.jsonl:1: image:"));
        assert!(e(
            ActionFormat::Anthropic,
            r#"{"layout_index": 0, "image": [960, 640], "space": "normalized_1000", "reply": {}}"#
        )
        .starts_with("t.jsonl:1: space: expected image for the anthropic format"));
        assert!(e(
            ActionFormat::Anthropic,
            r#"{"layout_index": 0, "img": [960, 640]}"#
        )
        .starts_with("t.jsonl:1: img: expected only the fields"));
        assert!(e(ActionFormat::OpenAi, r#"{"layout_index": 0, "image": [960, 640], "reply": {"type": "computer_call", "action": {"type": "click", "x": 1}}}"#).starts_with("t.jsonl:1: reply.action.y: expected a number"));
        assert!(e(ActionFormat::OpenAi, "").starts_with("t.jsonl:0: expected at least one"));
    }

    #[test]
    fn regression_absurd_points_layouts_and_image_sizes_name_file_line_and_field() {
        let e = |format, text: &str| {
            import("t.jsonl", text, &opts(format))
                .unwrap_err()
                .to_string()
        };
        let ok = r#"{"layout_index": 0, "image": [960, 640], "reply": {"action": "left_click", "coordinate": [1, 2]}}"#;
        assert_eq!(
            e(
                ActionFormat::Anthropic,
                &format!("{ok}\n{{\"layout_index\": 1, \"image\": [960, 640], \"reply\": {{\"action\": \"left_click\", \"coordinate\": [1e300, 5]}}}}")
            ),
            "t.jsonl:2: reply.coordinate: expected a point with coordinates from 0 to 100000, found (1e300, 5)"
        );
        assert_eq!(
            e(
                ActionFormat::Faultline,
                r#"{"layout_index": 0, "image": [960, 640], "reply": "click(1e300, 5)"}"#
            ),
            "t.jsonl:1: reply line 1: click expects a point with coordinates from 0 to 100000, found (1e300, 5) in `click(1e300, 5)`"
        );
        for index in ["10000", "4294967295"] {
            assert_eq!(
                e(
                    ActionFormat::Anthropic,
                    &format!(r#"{{"layout_index": {index}, "image": [960, 640], "reply": {{}}}}"#)
                ),
                format!("t.jsonl:1: layout_index: expected a whole number from 0 to 9999 (a run has at most 10000 layouts per task), found {index}")
            );
        }
        for (image, found) in [
            ("[16385, 640]", "[16385,640]"),
            ("[960, 4294967295]", "[960,4294967295]"),
            ("[1e300, 640]", "[1e+300,640]"),
        ] {
            assert_eq!(
                e(
                    ActionFormat::Anthropic,
                    &format!(r#"{{"layout_index": 0, "image": {image}, "reply": {{}}}}"#)
                ),
                format!("t.jsonl:1: image: expected [width, height], two whole numbers from 1 to 16384, found {found}")
            );
        }
        let long = "A".repeat(10_001);
        assert_eq!(
            e(
                ActionFormat::BrowserGym,
                &format!(r#"{{"layout_index": 0, "image": [960, 640], "reply": "keyboard_type('{long}')"}}"#)
            ),
            "t.jsonl:1: reply line 1: keyboard_type(text): expected a text of at most 10000 characters, found 10001"
        );
        // At the bounds every line imports.
        let edge = r#"{"layout_index": 9999, "image": [16384, 16384], "reply": {"action": "left_click", "coordinate": [100000, 100000]}}"#;
        assert!(import("t.jsonl", edge, &opts(ActionFormat::Anthropic)).is_ok());
    }
}
