//! Recorded decisions: what a model replied on a clean page, stored as JSONL.
//!
//! One JSON object per line. Loading validates every line and reports the first problem
//! as `file:line: field: what was expected`, so a hand-edited file fails loudly instead of
//! silently replaying something else.
//!
//! Schema 2 adds `format` (the language of `reply`, [`ActionFormat`]) and `space` (the
//! [`CoordinateSpace`] of the points in `actions`). A decision in faultline's own grammar
//! in image space is still written as schema 1, without those two fields, so files
//! recorded before schema 2 load, replay and re-record byte for byte; schema-1 lines
//! read as `faultline` and `image`.

use crate::action::{parse_reply, Action};
use crate::formats::{self, ActionFormat, CoordinateSpace};
use crate::geometry::{Size, MAX_IMAGE_SIDE};
use crate::layout::{Layout, TaskKind};
use crate::seed;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The decision file format version (the newest; schema 1 still loads).
pub const DECISION_SCHEMA: u32 = 2;

/// The schema a decision is written in: 1 when it needs nothing schema 2 added.
pub fn schema_for(format: ActionFormat, space: CoordinateSpace) -> u32 {
    if format == ActionFormat::Faultline && space == CoordinateSpace::Image {
        1
    } else {
        DECISION_SCHEMA
    }
}

fn is_faultline(f: &ActionFormat) -> bool {
    *f == ActionFormat::Faultline
}

fn is_image(s: &CoordinateSpace) -> bool {
    *s == CoordinateSpace::Image
}

/// One recorded reply and everything needed to replay it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Decision {
    /// The decision file format version this line is written in (1 or 2; see [`schema_for`]).
    pub schema: u32,
    /// The task the reply was recorded for.
    pub task: TaskKind,
    /// The root seed of the run that recorded it.
    pub root_seed: u64,
    /// The layout's index within the task.
    pub layout_index: u32,
    /// The layout's own seed; with `task` and `layout_index` it regenerates the page.
    pub layout_seed: u64,
    /// The instruction the model was given.
    pub instruction: String,
    /// The language `reply` is written in (schema 2; `faultline` when absent).
    #[serde(default, skip_serializing_if = "is_faultline")]
    pub format: ActionFormat,
    /// The raw reply text, exactly as the model wrote it (for JSON formats, the JSON).
    pub reply: String,
    /// The actions parsed from `reply` by the clean parser of `format`.
    pub actions: Vec<Action>,
    /// The screenshot size the model saw.
    pub image: Size,
    /// The space of the points in `actions` (schema 2; `image` when absent): the pixels
    /// of `image`, or a 0–1000 grid over it.
    #[serde(default, skip_serializing_if = "is_image")]
    pub space: CoordinateSpace,
    /// The viewport the screenshot was taken of.
    pub viewport: Size,
    /// Who made the decision: `oracle`, `model:<name>` or `import:<format>`.
    pub source: String,
}

impl Decision {
    /// A decision for `layout` under `root_seed` from a raw reply: parsed with the clean
    /// parser and validated, or the reason it cannot be one.
    pub fn from_reply(
        root_seed: u64,
        layout: &Layout,
        reply: String,
        image: Size,
        viewport: Size,
        source: &str,
    ) -> Result<Decision, String> {
        Decision::import(
            root_seed,
            layout,
            ActionFormat::Faultline,
            reply,
            None,
            image,
            viewport,
            source,
        )
    }

    /// A decision from a raw reply in any [`ActionFormat`], converted by that format's
    /// parser; `space` overrides the format's default space (for the formats that come
    /// in both conventions).
    #[allow(clippy::too_many_arguments)]
    pub fn import(
        root_seed: u64,
        layout: &Layout,
        format: ActionFormat,
        reply: String,
        space: Option<CoordinateSpace>,
        image: Size,
        viewport: Size,
        source: &str,
    ) -> Result<Decision, String> {
        let actions = match format {
            ActionFormat::Faultline => parse_reply(&reply).map_err(|e| e.to_string())?,
            _ => {
                formats::parse(format, &reply)
                    .map_err(|e| e.within("reply").to_string())?
                    .actions
            }
        };
        let space = space.unwrap_or(format.default_space());
        let decision = Decision {
            schema: schema_for(format, space),
            task: layout.task,
            root_seed,
            layout_index: layout.index,
            layout_seed: layout.seed,
            instruction: layout.instruction().text,
            format,
            reply,
            actions,
            image,
            space,
            viewport,
            source: source.to_string(),
        };
        decision.validate()?;
        Ok(decision)
    }

    /// Regenerates the page layout the reply was recorded on.
    pub fn layout(&self) -> Layout {
        Layout::generate(self.task, self.layout_index, self.layout_seed)
    }

    /// Checks the invariants a loaded decision must satisfy.
    pub fn validate(&self) -> Result<(), String> {
        if !(1..=DECISION_SCHEMA).contains(&self.schema) {
            return Err(format!(
                "schema: expected 1 or {DECISION_SCHEMA}, found {}",
                self.schema
            ));
        }
        if self.schema == 1 && schema_for(self.format, self.space) != 1 {
            return Err(format!(
                "schema: expected {DECISION_SCHEMA} for a decision with a format or space (schema 1 has neither), found 1"
            ));
        }
        if !self.format.allows(self.space) {
            return Err(format!(
                "space: expected {} for the {} format, found {}",
                self.format.default_space(),
                self.format,
                self.space
            ));
        }
        let expected_seed = seed::layout_seed(self.root_seed, self.task.name(), self.layout_index);
        if self.layout_seed != expected_seed {
            return Err(format!(
                "layout_seed: expected {expected_seed} (derived from root_seed {} and layout_index {}), found {}",
                self.root_seed, self.layout_index, self.layout_seed
            ));
        }
        let instruction = self.layout().instruction().text;
        if self.instruction != instruction {
            return Err(format!(
                "instruction: expected {instruction:?} for this layout, found {:?}",
                self.instruction
            ));
        }
        for (name, size) in [("image", self.image), ("viewport", self.viewport)] {
            if size.width == 0 || size.height == 0 {
                return Err(format!("{name}: expected a non-zero size, found {size}"));
            }
        }
        if self.image.width > MAX_IMAGE_SIDE || self.image.height > MAX_IMAGE_SIDE {
            return Err(format!(
                "image: expected a screenshot size of at most {MAX_IMAGE_SIDE} pixels a side, found {}",
                self.image
            ));
        }
        let parsed = match self.format {
            ActionFormat::Faultline => parse_reply(&self.reply).map_err(|e| e.to_string()),
            f => formats::parse(f, &self.reply)
                .map(|c| c.actions)
                .map_err(|e| e.to_string()),
        };
        match parsed {
            Ok(parsed) if parsed == self.actions => {}
            Ok(parsed) => {
                return Err(format!(
                    "actions: expected the actions parsed from `reply` ({}), found ({})",
                    render(&parsed),
                    render(&self.actions)
                ))
            }
            Err(e) => return Err(format!("reply: {e}")),
        }
        if self.source.is_empty() {
            return Err(
                "source: expected `oracle`, `model:<name>` or `import:<format>`, found an empty string".into(),
            );
        }
        Ok(())
    }

    /// A stable identifier: task and layout index.
    pub fn key(&self) -> String {
        format!("{}/{:03}", self.task, self.layout_index)
    }
}

fn render(actions: &[Action]) -> String {
    actions
        .iter()
        .map(|a| a.to_string())
        .collect::<Vec<_>>()
        .join("; ")
}

/// A decision file problem, located by file and line.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{file}:{line}: {reason}")]
pub struct DecisionError {
    /// The file the problem is in.
    pub file: String,
    /// The 1-based line (0 when the file could not be read at all).
    pub line: usize,
    /// What is wrong.
    pub reason: String,
}

/// Decisions loaded from one or more JSONL files.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DecisionSet {
    /// The decisions, in file order; at most one per task, root seed and layout index.
    pub decisions: Vec<Decision>,
}

impl DecisionSet {
    /// Parses JSONL text; `file` names it in errors.
    pub fn parse(file: &str, text: &str) -> Result<DecisionSet, DecisionError> {
        let mut decisions: Vec<Decision> = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let err = |reason: String| DecisionError {
                file: file.to_string(),
                line: i + 1,
                reason,
            };
            if line.trim().is_empty() {
                continue;
            }
            let d: Decision = serde_json::from_str(line).map_err(|e| err(json_reason(&e)))?;
            d.validate().map_err(err)?;
            if let Some(prev) = decisions.iter().find(|p| p.key() == d.key()) {
                return Err(err(format!(
                    "duplicate decision for {} (root seed {}, also on an earlier line)",
                    d.key(),
                    prev.root_seed
                )));
            }
            decisions.push(d);
        }
        Ok(DecisionSet { decisions })
    }

    /// Reads and parses the JSONL file at `path`.
    pub fn load(path: &Path) -> Result<DecisionSet, DecisionError> {
        let text = std::fs::read_to_string(path).map_err(|e| DecisionError {
            file: path.display().to_string(),
            line: 0,
            reason: format!("cannot read: {e}"),
        })?;
        DecisionSet::parse(&path.display().to_string(), &text)
    }

    /// Appends `other`'s decisions (without checking for duplicates).
    pub fn extend(&mut self, other: DecisionSet) {
        self.decisions.extend(other.decisions);
    }

    /// The set as JSONL text, one decision per line.
    pub fn to_jsonl(&self) -> String {
        let mut out = String::new();
        for d in &self.decisions {
            out.push_str(&serde_json::to_string(d).expect("decisions serialize"));
            out.push('\n');
        }
        out
    }

    /// The decisions recorded for `task`.
    pub fn for_task(&self, task: TaskKind) -> impl Iterator<Item = &Decision> {
        self.decisions.iter().filter(move |d| d.task == task)
    }

    /// The decision for `task`'s layout `index` under `root_seed`, if recorded.
    pub fn find(&self, task: TaskKind, root_seed: u64, index: u32) -> Option<&Decision> {
        self.decisions
            .iter()
            .find(|d| d.task == task && d.root_seed == root_seed && d.layout_index == index)
    }
}

/// serde_json's message, without its own " at line 1 column N" suffix (our line numbers
/// are file lines; the column stays useful).
fn json_reason(e: &serde_json::Error) -> String {
    let msg = e.to_string();
    let msg = match msg.rfind(" at line ") {
        Some(pos) => msg[..pos].to_string(),
        None => msg,
    };
    format!("{msg} (column {})", e.column())
}

/// The committed decisions for the default root seed, embedded in the binary so the
/// default experiment runs from anywhere.
pub fn embedded_default() -> Result<DecisionSet, DecisionError> {
    let mut set = DecisionSet::default();
    for (name, text) in [
        (
            "tasks/decisions/search.jsonl",
            include_str!("../decisions/search.jsonl"),
        ),
        (
            "tasks/decisions/grid.jsonl",
            include_str!("../decisions/grid.jsonl"),
        ),
        (
            "tasks/decisions/frame.jsonl",
            include_str!("../decisions/frame.jsonl"),
        ),
        (
            "tasks/decisions/chart.jsonl",
            include_str!("../decisions/chart.jsonl"),
        ),
        (
            "tasks/decisions/form.jsonl",
            include_str!("../decisions/form.jsonl"),
        ),
        (
            "tasks/decisions/select.jsonl",
            include_str!("../decisions/select.jsonl"),
        ),
        (
            "tasks/decisions/quiet.jsonl",
            include_str!("../decisions/quiet.jsonl"),
        ),
        (
            "tasks/decisions/miniwob_click_tab.jsonl",
            include_str!("../decisions/miniwob_click_tab.jsonl"),
        ),
        (
            "tasks/decisions/miniwob_click_dialog.jsonl",
            include_str!("../decisions/miniwob_click_dialog.jsonl"),
        ),
        (
            "tasks/decisions/miniwob_enter_text.jsonl",
            include_str!("../decisions/miniwob_enter_text.jsonl"),
        ),
        (
            "tasks/decisions/miniwob_login_user.jsonl",
            include_str!("../decisions/miniwob_login_user.jsonl"),
        ),
        (
            "tasks/decisions/miniwob_click_button.jsonl",
            include_str!("../decisions/miniwob_click_button.jsonl"),
        ),
        (
            "tasks/decisions/miniwob_click_link.jsonl",
            include_str!("../decisions/miniwob_click_link.jsonl"),
        ),
        (
            "tasks/decisions/miniwob_click_checkboxes.jsonl",
            include_str!("../decisions/miniwob_click_checkboxes.jsonl"),
        ),
        (
            "tasks/decisions/miniwob_focus_text.jsonl",
            include_str!("../decisions/miniwob_focus_text.jsonl"),
        ),
        (
            "tasks/decisions/miniwob_login_user_popup.jsonl",
            include_str!("../decisions/miniwob_login_user_popup.jsonl"),
        ),
        (
            "tasks/decisions/miniwob_choose_list.jsonl",
            include_str!("../decisions/miniwob_choose_list.jsonl"),
        ),
        (
            "tasks/decisions/miniwob_use_autocomplete.jsonl",
            include_str!("../decisions/miniwob_use_autocomplete.jsonl"),
        ),
        (
            "tasks/decisions/miniwob_navigate_tree.jsonl",
            include_str!("../decisions/miniwob_navigate_tree.jsonl"),
        ),
        (
            "tasks/decisions/miniwob_click_widget.jsonl",
            include_str!("../decisions/miniwob_click_widget.jsonl"),
        ),
        (
            "tasks/decisions/miniwob_search_engine.jsonl",
            include_str!("../decisions/miniwob_search_engine.jsonl"),
        ),
        (
            "tasks/decisions/miniwob_click_collapsible.jsonl",
            include_str!("../decisions/miniwob_click_collapsible.jsonl"),
        ),
    ] {
        set.extend(DecisionSet::parse(name, text)?);
    }
    Ok(set)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::IMAGE;
    use crate::layout::VIEWPORT;

    fn sample() -> Decision {
        let layout = Layout::for_root(1, TaskKind::Grid, 2);
        Decision {
            schema: 1,
            task: TaskKind::Grid,
            root_seed: 1,
            layout_index: 2,
            layout_seed: layout.seed,
            instruction: layout.instruction().text,
            format: ActionFormat::Faultline,
            reply: "click(450, 300)".into(),
            actions: vec![Action::Click { x: 450.0, y: 300.0 }],
            image: IMAGE,
            space: CoordinateSpace::Image,
            viewport: VIEWPORT,
            source: "oracle".into(),
        }
    }

    #[test]
    fn from_reply_parses_and_validates() {
        let layout = Layout::for_root(1, TaskKind::Grid, 2);
        let d = Decision::from_reply(
            1,
            &layout,
            "click(450, 300)".into(),
            IMAGE,
            VIEWPORT,
            "oracle",
        )
        .unwrap();
        assert_eq!(d.actions, vec![Action::Click { x: 450.0, y: 300.0 }]);
        assert_eq!((d.layout_seed, d.source.as_str()), (layout.seed, "oracle"));
        let e =
            Decision::from_reply(1, &layout, "click(450".into(), IMAGE, VIEWPORT, "m").unwrap_err();
        assert!(e.starts_with("reply line 1: missing `)`"), "{e}");
        assert!(Decision::from_reply(1, &layout, "stop()".into(), IMAGE, VIEWPORT, "").is_err());
    }

    #[test]
    fn round_trips_through_jsonl() {
        let set = DecisionSet {
            decisions: vec![sample()],
        };
        let back = DecisionSet::parse("x.jsonl", &set.to_jsonl()).unwrap();
        assert_eq!(back, set);
    }

    #[test]
    fn malformed_lines_name_file_line_and_field() {
        let good = serde_json::to_string(&sample()).unwrap();
        let text = format!("{good}\n{{\"schema\": 1, \"task\": \"grid\"");
        let e = DecisionSet::parse("d.jsonl", &text).unwrap_err();
        assert_eq!((e.file.as_str(), e.line), ("d.jsonl", 2));

        let mut d = sample();
        d.actions = vec![Action::Click { x: 1.0, y: 2.0 }];
        let e = DecisionSet::parse("d.jsonl", &serde_json::to_string(&d).unwrap()).unwrap_err();
        assert_eq!(e.line, 1);
        assert!(e.reason.starts_with("actions:"), "{}", e.reason);

        let mut d = sample();
        d.layout_seed += 1;
        let e = DecisionSet::parse("d.jsonl", &serde_json::to_string(&d).unwrap()).unwrap_err();
        assert!(e.reason.starts_with("layout_seed:"), "{}", e.reason);

        let text = good.replace("\"task\":\"grid\"", "\"task\":\"grdi\"");
        let e = DecisionSet::parse("d.jsonl", &text).unwrap_err();
        assert!(e.reason.contains("unknown variant `grdi`"), "{}", e.reason);

        let text = good.replace("\"source\"", "\"sauce\"");
        let e = DecisionSet::parse("d.jsonl", &text).unwrap_err();
        assert!(e.reason.contains("sauce"), "{}", e.reason);

        let e = DecisionSet::parse("d.jsonl", &format!("{good}\n{good}")).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.reason.contains("duplicate"), "{}", e.reason);
    }

    #[test]
    fn faultline_decisions_keep_the_schema_1_bytes() {
        let d = sample();
        let text = serde_json::to_string(&d).unwrap();
        assert!(text.starts_with("{\"schema\":1,"), "{text}");
        assert!(
            !text.contains("format") && !text.contains("space"),
            "{text}"
        );
        let layout = Layout::for_root(1, TaskKind::Grid, 2);
        let again =
            Decision::from_reply(1, &layout, d.reply.clone(), IMAGE, VIEWPORT, "oracle").unwrap();
        assert_eq!(serde_json::to_string(&again).unwrap(), text);
        // Every committed line re-serialises to itself.
        for line in include_str!("../decisions/grid.jsonl").lines() {
            let d: Decision = serde_json::from_str(line).unwrap();
            assert_eq!(serde_json::to_string(&d).unwrap(), line);
        }
    }

    #[test]
    fn imported_decisions_carry_format_and_space() {
        let layout = Layout::for_root(1, TaskKind::Grid, 2);
        let reply = r#"{"action":"left_click","coordinate":[450,300]}"#.to_string();
        let d = Decision::import(
            1,
            &layout,
            ActionFormat::Anthropic,
            reply,
            None,
            IMAGE,
            VIEWPORT,
            "import:anthropic",
        )
        .unwrap();
        assert_eq!((d.schema, d.space), (2, CoordinateSpace::Image));
        assert_eq!(d.actions, vec![Action::Click { x: 450.0, y: 300.0 }]);
        let text = serde_json::to_string(&d).unwrap();
        assert!(text.contains("\"format\":\"anthropic\""), "{text}");
        let back = DecisionSet::parse("i.jsonl", &text).unwrap();
        assert_eq!(back.decisions, vec![d.clone()]);

        let tars = Decision::import(
            1,
            &layout,
            ActionFormat::UiTars,
            "Action: click(start_box='(500,500)')".into(),
            None,
            IMAGE,
            VIEWPORT,
            "import:uitars",
        )
        .unwrap();
        assert_eq!(tars.space, CoordinateSpace::Normalized1000);
        assert!(serde_json::to_string(&tars)
            .unwrap()
            .contains("\"space\":\"normalized_1000\""));

        // A space the format does not have, and a schema-1 line with a format, are errors.
        let mut bad = d.clone();
        bad.space = CoordinateSpace::Normalized1000;
        assert!(bad.validate().unwrap_err().starts_with("space:"));
        let mut bad = d.clone();
        bad.schema = 1;
        assert!(bad.validate().unwrap_err().starts_with("schema:"));
        let mut bad = d;
        bad.actions = vec![Action::Click { x: 1.0, y: 2.0 }];
        assert!(bad.validate().unwrap_err().starts_with("actions:"));
        let e = Decision::import(
            1,
            &layout,
            ActionFormat::OpenAi,
            "{}".into(),
            None,
            IMAGE,
            VIEWPORT,
            "import:openai",
        )
        .unwrap_err();
        assert!(e.starts_with("reply.type: expected a string"), "{e}");
    }

    #[test]
    fn regression_a_decision_with_an_absurd_image_size_does_not_load() {
        let layout = Layout::for_root(seed::DEFAULT_ROOT_SEED, TaskKind::Grid, 0);
        let mut d = Decision::from_reply(
            seed::DEFAULT_ROOT_SEED,
            &layout,
            "click(1, 2)".into(),
            Size::new(900, 600),
            Size::new(1200, 800),
            "oracle",
        )
        .unwrap();
        d.image = Size::new(MAX_IMAGE_SIDE + 1, 600);
        assert_eq!(
            d.validate().unwrap_err(),
            "image: expected a screenshot size of at most 16384 pixels a side, found 16385x600"
        );
    }

    #[test]
    fn embedded_default_decisions_are_valid() {
        let set = embedded_default().unwrap();
        for d in &set.decisions {
            assert_eq!(d.root_seed, seed::DEFAULT_ROOT_SEED);
        }
    }
}
