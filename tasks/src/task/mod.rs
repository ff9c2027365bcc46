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
//! | outcome check | the outcome policy's judgement of the task's [`Expectation`], from what a harness can observe | `policies/src/builtin.rs`, one function per task named after it (`search_field_text`, `grid_selected_item`, ...), chosen by expectation in `OutcomePolicy::judge` |
//!
//! The truth and the oracle live with the page because they read what the page records
//! and how it is drawn; the expectation lives here, away from the page, because a
//! verification policy may know the instruction and nothing else (it has no dependency
//! on the fixture sites, so it cannot reach a page's ledger or its markup).
//!
//! [`TaskKind`] is the list of tasks. Every place that turns a kind into its pieces is an
//! exhaustive `match` ([`TaskKind::expectation`] and the layout dispatch here, the page,
//! route and truth dispatch in the fixture sites), so a new variant does not compile
//! until each piece exists, and a test in each crate walks [`TaskKind::ALL`] and checks
//! that every piece answers.
//!
//! # Adding a task
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
//! 4. `policies/src/builtin.rs`: the outcome policy's check for a new expectation, a
//!    function named after the task, and its arm in `OutcomePolicy::judge`.
//! 5. The oracle's reply (what it types, clicks or answers around the located point),
//!    in the harness's oracle recorder (`harness/src/experiment/record.rs`), and the
//!    faults that apply to the task in the fault catalogue (`faults/src/catalogue.rs`,
//!    each entry's task list).
//! 6. Nothing in the analysis: it orders tasks by [`TaskKind::rank`] (the place in
//!    [`TaskKind::ALL`]).
//! 7. Record the oracle's decisions for the committed set (`tasks/decisions/<task>.jsonl`)
//!    and run the task-homes test, which fails while a piece is missing.

mod chart;
mod form;
mod frame;
mod grid;
mod miniwob;
mod search;
mod select;

pub use chart::{ChartLayout, ChartMark};
pub use form::FormLayout;
pub use frame::{FrameLayout, OrderRow};
pub use grid::{unscaled_point, GridItem, GridLayout, UnscaledLanding};
pub use miniwob::{
    MiniwobChooseList, MiniwobClickButton, MiniwobClickCheckboxes, MiniwobClickCollapsible,
    MiniwobClickDialog, MiniwobClickLink, MiniwobClickTab, MiniwobClickWidget, MiniwobEnterText,
    MiniwobFocusText, MiniwobLoginUser, MiniwobLoginUserPopup, MiniwobNavigateTree,
    MiniwobSearchEngine, MiniwobUseAutocomplete, MINIWOB_AREA,
};
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

crate::named_enum! {
    /// The tasks: the four reference tasks of the design brief, two more that the
    /// anomaly catalogue needs (a form whose server writes through an idempotency key,
    /// and a native `<select>`), and MiniWoB++ tasks whose pages and answer key come
    /// from that external suite.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum TaskKind: "task" {
        /// Type the exact record name into a search field and submit it.
        Search = "search",
        /// Click one of the numbered buttons of a grid.
        Grid = "grid",
        /// Select a row of an orders table inside an iframe.
        Frame = "frame",
        /// Hover a bar of a chart and report the value its tooltip shows.
        Chart = "chart",
        /// Save a note through a form.
        Form = "form",
        /// Choose an option of a native `<select>`.
        Select = "select",
        /// MiniWoB++ `click-tab`: its page and its reward come from the external suite.
        MiniwobClickTab = "miniwob_click_tab",
        /// MiniWoB++ `click-dialog`: its page and its reward come from the external suite.
        MiniwobClickDialog = "miniwob_click_dialog",
        /// MiniWoB++ `enter-text`: its page and its reward come from the external suite.
        MiniwobEnterText = "miniwob_enter_text",
        /// MiniWoB++ `login-user`: its page and its reward come from the external suite.
        MiniwobLoginUser = "miniwob_login_user",
        /// MiniWoB++ `click-button`: its page and its reward come from the external suite.
        MiniwobClickButton = "miniwob_click_button",
        /// MiniWoB++ `click-link`: its page and its reward come from the external suite.
        MiniwobClickLink = "miniwob_click_link",
        /// MiniWoB++ `click-checkboxes`: its page and its reward come from the external suite.
        MiniwobClickCheckboxes = "miniwob_click_checkboxes",
        /// MiniWoB++ `focus-text`: its page and its reward come from the external suite.
        MiniwobFocusText = "miniwob_focus_text",
        /// MiniWoB++ `login-user-popup`: its page and its reward come from the external suite.
        MiniwobLoginUserPopup = "miniwob_login_user_popup",
        /// MiniWoB++ `choose-list`: its page and its reward come from the external suite.
        MiniwobChooseList = "miniwob_choose_list",
        /// MiniWoB++ `use-autocomplete`: its page and its reward come from the external suite.
        MiniwobUseAutocomplete = "miniwob_use_autocomplete",
        /// MiniWoB++ `navigate-tree`: its page and its reward come from the external suite.
        MiniwobNavigateTree = "miniwob_navigate_tree",
        /// MiniWoB++ `click-widget`: its page and its reward come from the external suite.
        MiniwobClickWidget = "miniwob_click_widget",
        /// MiniWoB++ `search-engine`: its page and its reward come from the external suite.
        MiniwobSearchEngine = "miniwob_search_engine",
        /// MiniWoB++ `click-collapsible`: its page and its reward come from the external suite.
        MiniwobClickCollapsible = "miniwob_click_collapsible",
    }
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
    pub const FIXTURE: [TaskKind; 6] = [
        TaskKind::Search,
        TaskKind::Grid,
        TaskKind::Frame,
        TaskKind::Chart,
        TaskKind::Form,
        TaskKind::Select,
    ];

    /// The MiniWoB++ tasks (pages and answer key from the external suite).
    pub const MINIWOB: [TaskKind; 15] = [
        TaskKind::MiniwobClickTab,
        TaskKind::MiniwobClickDialog,
        TaskKind::MiniwobEnterText,
        TaskKind::MiniwobLoginUser,
        TaskKind::MiniwobClickButton,
        TaskKind::MiniwobClickLink,
        TaskKind::MiniwobClickCheckboxes,
        TaskKind::MiniwobFocusText,
        TaskKind::MiniwobLoginUserPopup,
        TaskKind::MiniwobChooseList,
        TaskKind::MiniwobUseAutocomplete,
        TaskKind::MiniwobNavigateTree,
        TaskKind::MiniwobClickWidget,
        TaskKind::MiniwobSearchEngine,
        TaskKind::MiniwobClickCollapsible,
    ];

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
            TaskKind::MiniwobClickTab => MiniwobClickTab::generate(rng, index).into_spec(),
            TaskKind::MiniwobClickDialog => MiniwobClickDialog::generate(rng, index).into_spec(),
            TaskKind::MiniwobEnterText => MiniwobEnterText::generate(rng, index).into_spec(),
            TaskKind::MiniwobLoginUser => MiniwobLoginUser::generate(rng, index).into_spec(),
            TaskKind::MiniwobClickButton => MiniwobClickButton::generate(rng, index).into_spec(),
            TaskKind::MiniwobClickLink => MiniwobClickLink::generate(rng, index).into_spec(),
            TaskKind::MiniwobClickCheckboxes => {
                MiniwobClickCheckboxes::generate(rng, index).into_spec()
            }
            TaskKind::MiniwobFocusText => MiniwobFocusText::generate(rng, index).into_spec(),
            TaskKind::MiniwobLoginUserPopup => {
                MiniwobLoginUserPopup::generate(rng, index).into_spec()
            }
            TaskKind::MiniwobChooseList => MiniwobChooseList::generate(rng, index).into_spec(),
            TaskKind::MiniwobUseAutocomplete => {
                MiniwobUseAutocomplete::generate(rng, index).into_spec()
            }
            TaskKind::MiniwobNavigateTree => MiniwobNavigateTree::generate(rng, index).into_spec(),
            TaskKind::MiniwobClickWidget => MiniwobClickWidget::generate(rng, index).into_spec(),
            TaskKind::MiniwobSearchEngine => MiniwobSearchEngine::generate(rng, index).into_spec(),
            TaskKind::MiniwobClickCollapsible => {
                MiniwobClickCollapsible::generate(rng, index).into_spec()
            }
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
            TaskKind::MiniwobClickTab => MiniwobClickTab::expectation(named),
            TaskKind::MiniwobClickDialog => MiniwobClickDialog::expectation(named),
            TaskKind::MiniwobEnterText => MiniwobEnterText::expectation(named),
            TaskKind::MiniwobLoginUser => MiniwobLoginUser::expectation(named),
            TaskKind::MiniwobClickButton => MiniwobClickButton::expectation(named),
            TaskKind::MiniwobClickLink => MiniwobClickLink::expectation(named),
            TaskKind::MiniwobClickCheckboxes => MiniwobClickCheckboxes::expectation(named),
            TaskKind::MiniwobFocusText => MiniwobFocusText::expectation(named),
            TaskKind::MiniwobLoginUserPopup => MiniwobLoginUserPopup::expectation(named),
            TaskKind::MiniwobChooseList => MiniwobChooseList::expectation(named),
            TaskKind::MiniwobUseAutocomplete => MiniwobUseAutocomplete::expectation(named),
            TaskKind::MiniwobNavigateTree => MiniwobNavigateTree::expectation(named),
            TaskKind::MiniwobClickWidget => MiniwobClickWidget::expectation(named),
            TaskKind::MiniwobSearchEngine => MiniwobSearchEngine::expectation(named),
            TaskKind::MiniwobClickCollapsible => MiniwobClickCollapsible::expectation(named),
        }
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
    /// The MiniWoB++ `click-tab` task's layout (its episode seed).
    MiniwobClickTab(MiniwobClickTab),
    /// The MiniWoB++ `click-dialog` task's layout (its episode seed).
    MiniwobClickDialog(MiniwobClickDialog),
    /// The MiniWoB++ `enter-text` task's layout (its episode seed).
    MiniwobEnterText(MiniwobEnterText),
    /// The MiniWoB++ `login-user` task's layout (its episode seed).
    MiniwobLoginUser(MiniwobLoginUser),
    /// The MiniWoB++ `click-button` task's layout (its episode seed).
    MiniwobClickButton(MiniwobClickButton),
    /// The MiniWoB++ `click-link` task's layout (its episode seed).
    MiniwobClickLink(MiniwobClickLink),
    /// The MiniWoB++ `click-checkboxes` task's layout (its episode seed).
    MiniwobClickCheckboxes(MiniwobClickCheckboxes),
    /// The MiniWoB++ `focus-text` task's layout (its episode seed).
    MiniwobFocusText(MiniwobFocusText),
    /// The MiniWoB++ `login-user-popup` task's layout (its episode seed).
    MiniwobLoginUserPopup(MiniwobLoginUserPopup),
    /// The MiniWoB++ `choose-list` task's layout (its episode seed).
    MiniwobChooseList(MiniwobChooseList),
    /// The MiniWoB++ `use-autocomplete` task's layout (its episode seed).
    MiniwobUseAutocomplete(MiniwobUseAutocomplete),
    /// The MiniWoB++ `navigate-tree` task's layout (its episode seed).
    MiniwobNavigateTree(MiniwobNavigateTree),
    /// The MiniWoB++ `click-widget` task's layout (its episode seed).
    MiniwobClickWidget(MiniwobClickWidget),
    /// The MiniWoB++ `search-engine` task's layout (its episode seed).
    MiniwobSearchEngine(MiniwobSearchEngine),
    /// The MiniWoB++ `click-collapsible` task's layout (its episode seed).
    MiniwobClickCollapsible(MiniwobClickCollapsible),
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
            LayoutSpec::MiniwobClickTab($t) => $body,
            LayoutSpec::MiniwobClickDialog($t) => $body,
            LayoutSpec::MiniwobEnterText($t) => $body,
            LayoutSpec::MiniwobLoginUser($t) => $body,
            LayoutSpec::MiniwobClickButton($t) => $body,
            LayoutSpec::MiniwobClickLink($t) => $body,
            LayoutSpec::MiniwobClickCheckboxes($t) => $body,
            LayoutSpec::MiniwobFocusText($t) => $body,
            LayoutSpec::MiniwobLoginUserPopup($t) => $body,
            LayoutSpec::MiniwobChooseList($t) => $body,
            LayoutSpec::MiniwobUseAutocomplete($t) => $body,
            LayoutSpec::MiniwobNavigateTree($t) => $body,
            LayoutSpec::MiniwobClickWidget($t) => $body,
            LayoutSpec::MiniwobSearchEngine($t) => $body,
            LayoutSpec::MiniwobClickCollapsible($t) => $body,
        }
    };
}

impl LayoutSpec {
    /// The task this layout belongs to.
    pub fn kind(&self) -> TaskKind {
        fn kind_of<T: Task>(_: &T) -> TaskKind {
            T::KIND
        }
        with_task!(self, t => kind_of(t))
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
