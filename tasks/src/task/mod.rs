//! What a task is, and where each of its pieces lives.
//!
//! A task is one thing an agent is asked to do on one kind of page, rendered in many
//! seeded arrangements. In the spirit of BrowserGym's `setup` / `validate` / `cheat`, a
//! task is made of these pieces, and each crate holds the pieces it is about, one file
//! per task:
//!
//! | piece | what it is | where |
//! |---|---|---|
//! | layout (setup) | the seeded arrangement: positions, values, the target | `tasks/src/task/<task>.rs`, [`Task::generate`] |
//! | instruction | the public sentence the agent gets; it quotes the target | `tasks/src/task/<task>.rs`, [`Task::instruction`] |
//! | expectation | what the quoted name must mean after the action, read from the text | `tasks/src/task/<task>.rs`, [`Task::expectation`] |
//! | target box | where the thing to act on is drawn (page-side faults aim at it) | `tasks/src/task/<task>.rs`, [`Task::target_rect`] |
//! | page and routes | the markup, its script, the task's extra URLs | `sites/src/task/<task>.rs`, `SiteTask::page` and `SiteTask::routes` |
//! | truth (validate) | the ledger's verdict: did the intended outcome happen? | `sites/src/task/<task>.rs`, `SiteTask::validate` |
//! | oracle (cheat) | the script that finds the target on the live page | `sites/src/task/<task>.rs`, `SiteTask::locate_js`, next to the markup whose selectors it reads |
//! | outcome check | the outcome policy's judgement of the task's [`Expectation`], from what a harness can observe | `policies/src/builtin/outcome.rs` (the suite's in `miniwob.rs` beside it), one function per task named after it (`search_field_text`, `grid_selected_item`, ..., `miniwob_click_tab`), chosen by expectation in `OutcomePolicy::judge` (and, for the suite, by [`MiniwobTask`]) |
//!
//! The truth and the oracle live with the page because they read what the page records
//! and how it is drawn; the expectation lives here, away from the page, because a
//! verification policy may know the instruction and nothing else (it has no dependency
//! on the fixture sites, so it cannot reach a page's ledger or its markup).
//!
//! The MiniWoB++ suite is one family of tasks, [`TaskKind::Miniwob`]: its members are
//! listed once, in [`MiniwobTask`] (`tasks/src/task/miniwob.rs`), and share one layout
//! ([`MiniwobLayout`]: the episode seed), one instruction, one expectation, one target box,
//! one page and one truth (MiniWoB's own reward). What differs per suite task is its
//! vendored page, its oracle plan (`sites/src/task/miniwob.rs`) and its outcome check.
//!
//! [`TaskKind`] is the list of tasks. Every place that turns a kind into its pieces is an
//! exhaustive `match` ([`TaskKind::expectation`] and the layout dispatch here, the page,
//! route and truth dispatch in the fixture sites), so a new variant does not compile
//! until each piece exists, and a test in each crate walks [`TaskKind::ALL`] and checks
//! that every piece answers.
//!
//! # Adding a task
//!
//! A MiniWoB++ task: see the next section. One of faultline's own tasks:
//!
//! 1. `tasks/src/task/<task>.rs`: the layout struct, its generator, the instruction
//!    (quoting the target), the expectation and the target box; implement [`Task`]. If
//!    no [`Expectation`] variant says what the instruction asks, add one in
//!    `tasks/src/expectation.rs`.
//! 2. `tasks/src/task/mod.rs`: the [`TaskKind`] variant (its name, its place in
//!    [`TaskKind::ALL`], which is also report order), the [`LayoutSpec`] variant, and an
//!    arm in each dispatch `match` the compiler points at.
//! 3. `sites/src/task/<task>.rs`: the page, any extra routes, the truth and the oracle's
//!    locate script; implement `SiteTask`, and add the arms in `sites/src/task/mod.rs`.
//!    A new page event kind goes into the task's `EVENTS`.
//! 4. `policies/src/builtin/outcome.rs`: the outcome policy's check for a new expectation, a
//!    function named after the task, and its arm in `OutcomePolicy::judge`.
//! 5. The oracle's reply (what it types, clicks or answers around the located point),
//!    in the harness's oracle recorder (`harness/src/experiment/record.rs`), and the
//!    faults that apply to the task in the fault catalogue (`faults/src/catalogue/table/`,
//!    each entry's task list).
//! 6. Nothing in the analysis: it orders tasks by [`TaskKind::rank`] (the place in
//!    [`TaskKind::ALL`]).
//! 7. Record the oracle's decisions for the committed set (`tasks/decisions/<task>.jsonl`,
//!    listed in `embedded_default` in `tasks/src/decision.rs`), add the stored name to the
//!    pinned-names test below, and run the task-homes test, which fails while a piece is
//!    missing.
//!
//! # Adding a MiniWoB++ task
//!
//! Everything else of a suite task is the family's. Walked once with a throwaway task
//! (`click-test`): 11 edits in 9 files (the page, its manifest line and `FILES` entry,
//! the `miniwob_tasks!` line, the pinned name, the plan arm, the outcome function and its
//! arm, the decisions file, its `embedded_default` entry, the config line); the compiler
//! points at the plan and the outcome check, the pinned-names test at the stored name.
//! A task whose outcome check cannot say Success on a clean page also needs its arm in
//! the allowed verdicts of `harness/tests/miniwob.rs`.
//!
//! 1. Vendor the page as it ships: `sites/vendor/miniwob/miniwob/<name>.html` (and any
//!    `core/` or `common/` file it loads that is not vendored yet), its line in
//!    `sites/vendor/miniwob/MANIFEST.sha256`, and its entry in `FILES` in
//!    `sites/src/task/miniwob.rs`.
//! 2. `tasks/src/task/miniwob.rs`: its line in `miniwob_tasks!`: the variant, the
//!    MiniWoB++ name, the stored kind name (`miniwob_<name>`, with underscores) and the
//!    properties the fault catalogue selects suite tasks by ([`MiniwobTask::types_text`],
//!    [`MiniwobTask::plan_waits`]). Its place in the list is its report order. Every fault
//!    whose task list takes the whole suite, or the suite tasks with one of those
//!    properties, now applies to it: nothing to edit in the catalogue.
//! 3. `tasks/src/task/mod.rs`: its stored name in the pinned-names test, which fails
//!    until the name is listed there.
//! 4. `sites/src/task/miniwob.rs`: its plan, an arm of `plan` (the compiler points at it).
//! 5. `policies/src/builtin/miniwob.rs`: its outcome check, a function `miniwob_<name>`, and its
//!    arm in `miniwob_query_holds` (the compiler points at it).
//! 6. Record its decisions (`faultline record`, into
//!    `tasks/decisions/miniwob_<name>.jsonl`), list the file in `embedded_default`
//!    (`tasks/src/decision.rs`) and the task in `harness/configs/miniwob.toml`, then run
//!    `cargo test -p faultline --test miniwob --test task_homes`.

mod chart;
mod form;
mod frame;
mod grid;
mod miniwob;
mod quiet;
mod search;
mod select;

pub use chart::{ChartLayout, ChartMark};
pub use form::FormLayout;
pub use frame::{FrameLayout, OrderRow};
pub use grid::{unscaled_point, GridItem, GridLayout, UnscaledLanding};
pub use miniwob::{MiniwobLayout, MiniwobTask, MINIWOB_AREA};
pub use quiet::{QuietEffect, QuietItem, QuietLayout};
pub use search::SearchLayout;
pub use select::SelectLayout;

use crate::expectation::Expectation;
use crate::geometry::Rect;
use serde::{Deserialize, Serialize};

/// The RNG a layout is drawn from (seeded from the layout seed).
pub type LayoutRng = rand_chacha::ChaCha8Rng;

/// One task: its seeded layout and everything that follows from it without a browser.
///
/// Implemented by each task's layout struct (`SearchLayout`, `GridLayout`, ...). The
/// pieces that need the page (its markup, truth and oracle) are the fixture sites'
/// `SiteTask`, implemented for the same structs.
pub trait Task: Sized {
    /// Which task this is.
    const KIND: TaskKind;

    /// Which task this layout is of ([`Task::KIND`]).
    fn kind(&self) -> TaskKind {
        Self::KIND
    }

    /// Setup: draws layout `index` from the layout's RNG. Only the grid uses the index
    /// (to alternate the kinds of miss of the unscaled-coordinates fault).
    fn generate(rng: &mut LayoutRng, index: u32) -> Self;

    /// The name of the thing the instruction asks for.
    fn target(&self) -> &str;

    /// The public instruction text; it quotes [`Task::target`].
    fn instruction(&self) -> String;

    /// What the instruction's quoted name must mean after the action. The outcome policy
    /// reads this back from the instruction's text, so it takes only that name.
    fn expectation(named: String) -> Expectation;

    /// The box of the thing to act on, in viewport coordinates.
    fn target_rect(&self) -> Option<Rect>;

    /// Wraps the layout into the per-task part of a [`crate::Layout`].
    fn into_spec(self) -> LayoutSpec;
}

/// The tasks: the four reference tasks of the design brief, three more that the anomaly
/// catalogue needs (a form whose server writes through an idempotency key, a native
/// `<select>`, and the quiet task, whose correct action only moves the focus, scrolls or
/// selects), and the MiniWoB++ suite, one family of tasks whose pages and answer key
/// come from that external suite.
///
/// Each task has a stable name ([`TaskKind::name`], `Display`, `FromStr`, serde): the
/// seven fixture tasks' own (`search`, ...), and for a suite task the stored name of its
/// [`MiniwobTask`] (`miniwob_click_tab`). [`TaskKind::ALL`] is report order: the fixture
/// tasks, then the suite in [`MiniwobTask::ALL`] order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TaskKind {
    /// Type the exact record name into a search field and submit it.
    Search,
    /// Click one of the numbered buttons of a grid.
    Grid,
    /// Select a row of an orders table inside an iframe.
    Frame,
    /// Hover a bar of a chart and report the value its tooltip shows.
    Chart,
    /// Save a note through a form.
    Form,
    /// Choose an option of a native `<select>`.
    Select,
    /// An action whose only effect leaves the DOM alone: focus a text field, scroll a
    /// section into view or select a word, by layout.
    Quiet,
    /// A MiniWoB++ task: its page and its reward come from the external suite.
    Miniwob(MiniwobTask),
}

impl TaskKind {
    /// The four reference tasks of the default experiment.
    pub const REFERENCE: [TaskKind; 4] = [
        TaskKind::Search,
        TaskKind::Grid,
        TaskKind::Frame,
        TaskKind::Chart,
    ];

    /// faultline's own fixture tasks (the catalogue's), without the external suite.
    pub const FIXTURE: [TaskKind; 7] = [
        TaskKind::Search,
        TaskKind::Grid,
        TaskKind::Frame,
        TaskKind::Chart,
        TaskKind::Form,
        TaskKind::Select,
        TaskKind::Quiet,
    ];

    /// The MiniWoB++ tasks (pages and answer key from the external suite), in
    /// [`MiniwobTask::ALL`] order.
    pub const MINIWOB: [TaskKind; MiniwobTask::ALL.len()] = {
        let mut all = [TaskKind::Search; MiniwobTask::ALL.len()];
        let mut i = 0;
        while i < all.len() {
            all[i] = TaskKind::Miniwob(MiniwobTask::ALL[i]);
            i += 1;
        }
        all
    };

    /// Every task, in report order: [`TaskKind::FIXTURE`], then [`TaskKind::MINIWOB`].
    pub const ALL: [TaskKind; TaskKind::FIXTURE.len() + TaskKind::MINIWOB.len()] = {
        let mut all = [TaskKind::Search; TaskKind::FIXTURE.len() + TaskKind::MINIWOB.len()];
        let mut i = 0;
        while i < all.len() {
            all[i] = if i < TaskKind::FIXTURE.len() {
                TaskKind::FIXTURE[i]
            } else {
                TaskKind::MINIWOB[i - TaskKind::FIXTURE.len()]
            };
            i += 1;
        }
        all
    };

    /// Every task's stable name, in [`TaskKind::ALL`] order.
    const NAMES: [&'static str; TaskKind::ALL.len()] = {
        let mut names = [""; TaskKind::ALL.len()];
        let mut i = 0;
        while i < names.len() {
            names[i] = TaskKind::ALL[i].name();
            i += 1;
        }
        names
    };

    /// The stable name (stored, printed and parsed).
    pub const fn name(self) -> &'static str {
        match self {
            TaskKind::Search => "search",
            TaskKind::Grid => "grid",
            TaskKind::Frame => "frame",
            TaskKind::Chart => "chart",
            TaskKind::Form => "form",
            TaskKind::Select => "select",
            TaskKind::Quiet => "quiet",
            TaskKind::Miniwob(t) => t.stored_name(),
        }
    }

    /// The MiniWoB++ task of a suite kind, `None` for faultline's own tasks.
    pub fn miniwob(self) -> Option<MiniwobTask> {
        match self {
            TaskKind::Miniwob(t) => Some(t),
            _ => None,
        }
    }

    /// The MiniWoB++ task name of a MiniWoB++ kind (`click-tab`), `None` for faultline's
    /// own tasks.
    pub fn miniwob_name(self) -> Option<&'static str> {
        self.miniwob().map(MiniwobTask::name)
    }

    /// Position in report order.
    pub fn rank(self) -> usize {
        TaskKind::ALL
            .iter()
            .position(|t| *t == self)
            .expect("every task is in ALL")
    }

    /// Setup: draws this task's layout `index` (see [`Task::generate`]).
    pub(crate) fn generate(self, rng: &mut LayoutRng, index: u32) -> LayoutSpec {
        match self {
            TaskKind::Search => SearchLayout::generate(rng, index).into_spec(),
            TaskKind::Grid => GridLayout::generate(rng, index).into_spec(),
            TaskKind::Frame => FrameLayout::generate(rng, index).into_spec(),
            TaskKind::Chart => ChartLayout::generate(rng, index).into_spec(),
            TaskKind::Form => FormLayout::generate(rng, index).into_spec(),
            TaskKind::Select => SelectLayout::generate(rng, index).into_spec(),
            TaskKind::Quiet => QuietLayout::generate(rng, index).into_spec(),
            TaskKind::Miniwob(t) => LayoutSpec::Miniwob(MiniwobLayout::generate(t, rng)),
        }
    }

    /// What this task's instruction means by the name it quotes (see
    /// [`Task::expectation`]).
    pub fn expectation(self, named: String) -> Expectation {
        match self {
            TaskKind::Search => SearchLayout::expectation(named),
            TaskKind::Grid => GridLayout::expectation(named),
            TaskKind::Frame => FrameLayout::expectation(named),
            TaskKind::Chart => ChartLayout::expectation(named),
            TaskKind::Form => FormLayout::expectation(named),
            TaskKind::Select => SelectLayout::expectation(named),
            TaskKind::Quiet => QuietLayout::expectation(named),
            TaskKind::Miniwob(_) => MiniwobLayout::expectation(named),
        }
    }
}

impl std::fmt::Display for TaskKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for TaskKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        TaskKind::ALL
            .into_iter()
            .find(|t| t.name() == s)
            .ok_or_else(|| {
                format!(
                    "unknown task `{s}` (expected one of: {})",
                    TaskKind::NAMES.join(", ")
                )
            })
    }
}

impl Serialize for TaskKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for TaskKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = std::borrow::Cow::<str>::deserialize(d)?;
        TaskKind::ALL
            .into_iter()
            .find(|t| t.name() == s)
            .ok_or_else(|| serde::de::Error::unknown_variant(&s, &TaskKind::NAMES))
    }
}

/// The per-task part of a layout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "task", rename_all = "snake_case")]
pub enum LayoutSpec {
    /// The search task's layout.
    Search(SearchLayout),
    /// The grid task's layout.
    Grid(GridLayout),
    /// The iframe task's layout.
    Frame(FrameLayout),
    /// The chart task's layout.
    Chart(ChartLayout),
    /// The form task's layout.
    Form(FormLayout),
    /// The select task's layout.
    Select(SelectLayout),
    /// The quiet task's layout.
    Quiet(QuietLayout),
    /// A MiniWoB++ task's layout (which task, and its episode seed). Untagged: it
    /// writes its task kind's stored name under the same `task` tag itself.
    #[serde(untagged)]
    Miniwob(MiniwobLayout),
}

/// Runs `$body` with `$t` bound to the task's layout, whatever the task.
macro_rules! with_task {
    ($spec:expr, $t:ident => $body:expr) => {
        match $spec {
            LayoutSpec::Search($t) => $body,
            LayoutSpec::Grid($t) => $body,
            LayoutSpec::Frame($t) => $body,
            LayoutSpec::Chart($t) => $body,
            LayoutSpec::Form($t) => $body,
            LayoutSpec::Select($t) => $body,
            LayoutSpec::Quiet($t) => $body,
            LayoutSpec::Miniwob($t) => $body,
        }
    };
}

impl LayoutSpec {
    /// The task this layout belongs to.
    pub fn kind(&self) -> TaskKind {
        with_task!(self, t => t.kind())
    }

    /// See [`Task::target`].
    pub fn target(&self) -> &str {
        with_task!(self, t => t.target())
    }

    /// See [`Task::instruction`].
    pub fn instruction(&self) -> String {
        with_task!(self, t => t.instruction())
    }

    /// See [`Task::target_rect`].
    pub fn target_rect(&self) -> Option<Rect> {
        with_task!(self, t => t.target_rect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every task's stored name, in report order. These names are in configs, recorded
    /// decisions, databases and reports: changing one breaks all of them, so a change
    /// here must be deliberate.
    const STORED: &[&str] = &[
        "search",
        "grid",
        "frame",
        "chart",
        "form",
        "select",
        "quiet",
        "miniwob_click_tab",
        "miniwob_click_dialog",
        "miniwob_enter_text",
        "miniwob_login_user",
        "miniwob_click_button",
        "miniwob_click_link",
        "miniwob_click_checkboxes",
        "miniwob_focus_text",
        "miniwob_login_user_popup",
        "miniwob_choose_list",
        "miniwob_use_autocomplete",
        "miniwob_navigate_tree",
        "miniwob_click_widget",
        "miniwob_search_engine",
        "miniwob_click_collapsible",
    ];

    #[test]
    fn stored_names_are_pinned_and_round_trip() {
        let names: Vec<&str> = TaskKind::ALL.iter().map(|t| t.name()).collect();
        assert_eq!(names, STORED);
        for (task, &name) in TaskKind::ALL.into_iter().zip(STORED) {
            assert_eq!(task.to_string(), name);
            assert_eq!(name.parse::<TaskKind>(), Ok(task));
            let json = serde_json::to_string(&task).unwrap();
            assert_eq!(json, format!("\"{name}\""));
            assert_eq!(serde_json::from_str::<TaskKind>(&json).unwrap(), task);
            // A suite task's MiniWoB++ name is its stored name without the prefix, with
            // dashes.
            if let TaskKind::Miniwob(t) = task {
                let suite = name.strip_prefix("miniwob_").unwrap().replace('_', "-");
                assert_eq!(t.name(), suite);
                assert_eq!(suite.parse::<MiniwobTask>(), Ok(t));
                assert_eq!(task.miniwob_name(), Some(t.name()));
            } else {
                assert_eq!(task.miniwob_name(), None);
            }
        }
        assert_eq!(
            "nope".parse::<TaskKind>().unwrap_err(),
            format!(
                "unknown task `nope` (expected one of: {})",
                STORED.join(", ")
            )
        );
        let err = serde_json::from_str::<TaskKind>("\"nope\"").unwrap_err();
        assert!(
            err.to_string().starts_with("unknown variant `nope`"),
            "{err}"
        );
    }

    #[test]
    fn report_order_is_declaration_order() {
        let mut sorted = TaskKind::ALL;
        sorted.sort();
        assert_eq!(sorted, TaskKind::ALL);
        for (i, t) in TaskKind::ALL.into_iter().enumerate() {
            assert_eq!(t.rank(), i);
        }
        assert_eq!(TaskKind::MINIWOB.len(), MiniwobTask::ALL.len());
    }

    #[test]
    fn layouts_serialize_under_their_stored_name() {
        for task in TaskKind::ALL {
            let spec = task.generate(&mut crate::seed::rng(3), 0);
            let json = serde_json::to_value(&spec).unwrap();
            assert_eq!(json["task"], task.name(), "{json}");
            assert_eq!(serde_json::from_value::<LayoutSpec>(json).unwrap(), spec);
        }
        let spec = TaskKind::Miniwob(MiniwobTask::ClickTab).generate(&mut crate::seed::rng(3), 0);
        let LayoutSpec::Miniwob(m) = &spec else {
            unreachable!()
        };
        assert_eq!(
            serde_json::to_string(&spec).unwrap(),
            format!(
                "{{\"task\":\"miniwob_click_tab\",\"episode_seed\":{}}}",
                m.episode_seed
            )
        );
    }
}
