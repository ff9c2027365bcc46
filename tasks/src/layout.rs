//! Seeded layouts: the same task rendered in many arrangements.
//!
//! A layout is a pure function of `(task, index, seed)`. The seed drives a ChaCha RNG
//! (positions, spacing, values, names, delays); the index only decides, for the grid,
//! which *kind* of miss the unscaled-coordinates fault produces, so that every run of
//! N layouts has both kinds in equal share (half land on another item, half on blank
//! space) instead of whatever a coin flip gives.
//!
//! All coordinates are CSS pixels in a [`VIEWPORT`]-sized page.

use crate::geometry::{Point, Rect, Size};
use crate::instruction::Instruction;
use crate::seed;
use rand::seq::SliceRandom;
use rand::Rng;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The viewport every page is laid out for.
pub const VIEWPORT: Size = Size::new(1200, 800);
/// The screenshot size a model sees (a 3/4 downscale of the viewport).
pub const IMAGE: Size = Size::new(900, 600);

/// The tasks: the four reference tasks of the design brief, and two more that the
/// anomaly catalogue needs (a form whose server writes through an idempotency key, and a
/// native `<select>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskKind {
    Search,
    Grid,
    Frame,
    Chart,
    Form,
    Select,
}

impl TaskKind {
    pub const ALL: [TaskKind; 6] = [
        TaskKind::Search,
        TaskKind::Grid,
        TaskKind::Frame,
        TaskKind::Chart,
        TaskKind::Form,
        TaskKind::Select,
    ];

    /// The four reference tasks of the default experiment.
    pub const REFERENCE: [TaskKind; 4] = [
        TaskKind::Search,
        TaskKind::Grid,
        TaskKind::Frame,
        TaskKind::Chart,
    ];

    pub fn name(self) -> &'static str {
        match self {
            TaskKind::Search => "search",
            TaskKind::Grid => "grid",
            TaskKind::Frame => "frame",
            TaskKind::Chart => "chart",
            TaskKind::Form => "form",
            TaskKind::Select => "select",
        }
    }

    /// Position in report order.
    pub fn rank(self) -> usize {
        TaskKind::ALL
            .iter()
            .position(|t| *t == self)
            .expect("every task is in ALL")
    }
}

impl fmt::Display for TaskKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for TaskKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        TaskKind::ALL
            .into_iter()
            .find(|t| t.name() == s)
            .ok_or_else(|| {
                format!("unknown task `{s}` (expected one of: search, grid, frame, chart, form, select)")
            })
    }
}

/// A search form over a catalogue of records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchLayout {
    /// The search field's box.
    pub field: Rect,
    /// Every record the server knows.
    pub records: Vec<String>,
    /// The record the instruction names.
    pub target: String,
}

/// One button of the grid.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GridItem {
    pub label: String,
    pub rect: Rect,
}

/// Where the unscaled (3/4) point of the grid target lands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnscaledLanding {
    OtherItem,
    Blank,
}

/// Numbered buttons at seeded positions, with holes and gaps of blank space.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GridLayout {
    pub items: Vec<GridItem>,
    pub target: String,
    /// What the target's unscaled point hits (checked at generation time).
    pub unscaled_landing: UnscaledLanding,
}

/// One row of the orders table inside the iframe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OrderRow {
    pub label: String,
    pub customer: String,
    pub total_cents: u32,
}

/// An orders table inside a same-origin iframe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrameLayout {
    /// The iframe's box in the top document.
    pub frame: Rect,
    /// Height of a table row inside the frame.
    pub row_height: f64,
    /// Height of the table header inside the frame.
    pub header_height: f64,
    pub rows: Vec<OrderRow>,
    pub target: String,
}

impl FrameLayout {
    /// The box of row `i` in top-document coordinates (the frame has no border or
    /// padding and the table starts at its top-left corner).
    pub fn row_rect(&self, i: usize) -> Rect {
        Rect::new(
            self.frame.x,
            self.frame.y + self.header_height + self.row_height * i as f64,
            self.frame.width,
            self.row_height,
        )
    }
}

/// One bar of the chart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChartMark {
    pub label: String,
    pub value: u32,
    pub rect: Rect,
}

/// A bar chart whose tooltip appears after a hover delay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChartLayout {
    pub plot: Rect,
    pub marks: Vec<ChartMark>,
    pub target: String,
    pub tooltip_delay_ms: u32,
}

impl ChartLayout {
    pub fn target_mark(&self) -> &ChartMark {
        self.marks
            .iter()
            .find(|m| m.label == self.target)
            .expect("generated chart contains its target")
    }
}

/// A notes form: a text field, a Save button that writes through the server with an
/// idempotency key, and the list of notes already saved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FormLayout {
    pub field: Rect,
    pub save: Rect,
    /// Notes saved before the task starts (never the target).
    pub existing: Vec<String>,
    /// The note to save.
    pub target: String,
}

/// A native `<select>` whose choice the page applies to an order summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SelectLayout {
    pub control: Rect,
    pub options: Vec<String>,
    /// Index of the option selected when the page loads.
    pub initial: usize,
    /// The option to choose (never the initial one).
    pub target: String,
}

impl SelectLayout {
    pub fn target_index(&self) -> usize {
        self.options
            .iter()
            .position(|o| *o == self.target)
            .expect("generated select contains its target")
    }
}

/// The per-task part of a layout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "task", rename_all = "snake_case")]
pub enum LayoutSpec {
    Search(SearchLayout),
    Grid(GridLayout),
    Frame(FrameLayout),
    Chart(ChartLayout),
    Form(FormLayout),
    Select(SelectLayout),
}

/// A task rendered in one seeded arrangement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Layout {
    pub task: TaskKind,
    pub index: u32,
    pub seed: u64,
    pub spec: LayoutSpec,
}

impl Layout {
    /// Generates layout `index` of `task` from its layout seed.
    pub fn generate(task: TaskKind, index: u32, seed: u64) -> Layout {
        let mut rng = seed::rng(seed);
        let spec = match task {
            TaskKind::Search => LayoutSpec::Search(gen_search(&mut rng)),
            TaskKind::Grid => LayoutSpec::Grid(gen_grid(&mut rng, index)),
            TaskKind::Frame => LayoutSpec::Frame(gen_frame(&mut rng)),
            TaskKind::Chart => LayoutSpec::Chart(gen_chart(&mut rng)),
            TaskKind::Form => LayoutSpec::Form(gen_form(&mut rng)),
            TaskKind::Select => LayoutSpec::Select(gen_select(&mut rng)),
        };
        Layout {
            task,
            index,
            seed,
            spec,
        }
    }

    /// Layout `index` of `task` under a root seed.
    pub fn for_root(root: u64, task: TaskKind, index: u32) -> Layout {
        Layout::generate(task, index, seed::layout_seed(root, task.name(), index))
    }

    /// The public instruction for this layout.
    pub fn instruction(&self) -> Instruction {
        Instruction::for_layout(self)
    }

    /// The name of the thing the instruction asks for.
    pub fn target(&self) -> &str {
        match &self.spec {
            LayoutSpec::Search(s) => &s.target,
            LayoutSpec::Grid(g) => &g.target,
            LayoutSpec::Frame(f) => &f.target,
            LayoutSpec::Chart(c) => &c.target,
            LayoutSpec::Form(f) => &f.target,
            LayoutSpec::Select(s) => &s.target,
        }
    }
}

type Rng8 = rand_chacha::ChaCha8Rng;

fn gen_search(rng: &mut Rng8) -> SearchLayout {
    // Near-miss names make "exact record" meaningful: Record-10 vs Record-100.
    let mut numbers: Vec<u32> = Vec::new();
    while numbers.len() < 24 {
        let n = rng.random_range(1..=999u32);
        if !numbers.contains(&n) {
            numbers.push(n);
        }
    }
    let target_n = numbers[rng.random_range(0..numbers.len())];
    for near in [target_n * 10, target_n * 10 + 1] {
        if near <= 9999 && !numbers.contains(&near) {
            numbers.push(near);
        }
    }
    numbers.sort_unstable();
    let records = numbers.iter().map(|n| format!("Record-{n}")).collect();
    let width = f64::from(rng.random_range(260..=520u32));
    let field = Rect::new(
        f64::from(rng.random_range(40..=1200 - 40 - 140 - width as u32)),
        f64::from(rng.random_range(120..=520u32)),
        width,
        f64::from(rng.random_range(32..=44u32)),
    );
    SearchLayout {
        field,
        records,
        target: format!("Record-{target_n}"),
    }
}

/// The point the executor clicks when it forgets to scale image coordinates: the
/// model's image point (rounded, as a model writes integers) used as a viewport point.
pub fn unscaled_point(viewport_target: Point) -> Point {
    let image = viewport_target.scale(VIEWPORT, IMAGE);
    Point::new(image.x.round(), image.y.round())
}

fn gen_grid(rng: &mut Rng8, index: u32) -> GridLayout {
    let wanted = if index.is_multiple_of(2) {
        UnscaledLanding::OtherItem
    } else {
        UnscaledLanding::Blank
    };
    // Draw whole arrangements until one has a target whose unscaled point lands the
    // wanted way; almost every arrangement has several candidates of each kind.
    for _ in 0..10_000 {
        let cols = rng.random_range(4..=8u32);
        let rows = rng.random_range(3..=6u32);
        let w = f64::from(rng.random_range(70..=120u32));
        let h = f64::from(rng.random_range(40..=64u32));
        let gap_x = f64::from(rng.random_range(8..=70u32));
        let gap_y = f64::from(rng.random_range(8..=60u32));
        let total_w = f64::from(cols) * w + f64::from(cols - 1) * gap_x;
        let total_h = f64::from(rows) * h + f64::from(rows - 1) * gap_y;
        if total_w > 1140.0 || total_h > 640.0 {
            continue;
        }
        let ox = f64::from(rng.random_range(30..=(1170 - total_w as u32)));
        let oy = f64::from(rng.random_range(110..=(790 - total_h as u32)));
        let mut numbers: Vec<u32> = (1..=cols * rows).collect();
        numbers.shuffle(rng);
        let mut items = Vec::new();
        for r in 0..rows {
            for c in 0..cols {
                let n = numbers[(r * cols + c) as usize];
                // Holes: about one cell in six stays blank.
                if rng.random_range(0..6) == 0 {
                    continue;
                }
                items.push(GridItem {
                    label: format!("Item {n}"),
                    rect: Rect::new(
                        ox + f64::from(c) * (w + gap_x),
                        oy + f64::from(r) * (h + gap_y),
                        w,
                        h,
                    ),
                });
            }
        }
        let mut candidates: Vec<usize> = (0..items.len())
            .filter(|&i| landing(&items, i) == Some(wanted))
            .collect();
        if candidates.is_empty() {
            continue;
        }
        candidates.sort_unstable();
        let t = candidates[rng.random_range(0..candidates.len())];
        return GridLayout {
            target: items[t].label.clone(),
            items,
            unscaled_landing: wanted,
        };
    }
    unreachable!("grid generation always finds a target within 10,000 draws")
}

/// Where the unscaled point of item `t` lands, with a 4 px safety margin so that
/// sub-pixel rounding can never flip the outcome; `None` when it is too close to call
/// or lands on the target itself.
fn landing(items: &[GridItem], t: usize) -> Option<UnscaledLanding> {
    let p = unscaled_point(items[t].rect.center());
    if items[t].rect.clear_of(p, 4.0) {
        if let Some(i) = items.iter().position(|it| it.rect.contains(p)) {
            return (i != t && items[i].rect.contains_with_margin(p, 4.0))
                .then_some(UnscaledLanding::OtherItem);
        }
        if items.iter().all(|it| it.rect.clear_of(p, 4.0)) {
            return Some(UnscaledLanding::Blank);
        }
    }
    None
}

const CUSTOMERS: &[&str] = &[
    "Ada", "Brook", "Chen", "Dana", "Eli", "Farah", "Gus", "Hana", "Ivo", "Jun", "Kai", "Lena",
    "Mo", "Nia", "Otto", "Priya",
];

fn gen_frame(rng: &mut Rng8) -> FrameLayout {
    let n_rows = rng.random_range(8..=14usize);
    let row_height = f64::from(rng.random_range(26..=38u32));
    let header_height = 34.0;
    let width = f64::from(rng.random_range(420..=640u32));
    let height =
        header_height + row_height * n_rows as f64 + f64::from(rng.random_range(4..=40u32));
    let frame = Rect::new(
        f64::from(rng.random_range(40..=(1160 - width as u32))),
        f64::from(rng.random_range(110..=(790u32.saturating_sub(height as u32)).max(111))),
        width,
        height,
    );
    let mut numbers: Vec<u32> = Vec::new();
    while numbers.len() < n_rows {
        let n = rng.random_range(1..=99u32);
        if !numbers.contains(&n) {
            numbers.push(n);
        }
    }
    let rows: Vec<OrderRow> = numbers
        .iter()
        .map(|n| OrderRow {
            label: format!("Order {n}"),
            customer: CUSTOMERS[rng.random_range(0..CUSTOMERS.len())].to_string(),
            total_cents: rng.random_range(500..=99_999u32),
        })
        .collect();
    let target = rows[rng.random_range(0..rows.len())].label.clone();
    FrameLayout {
        frame,
        row_height,
        header_height,
        rows,
        target,
    }
}

const MONTHS: &[&str] = &[
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

fn gen_chart(rng: &mut Rng8) -> ChartLayout {
    let n = rng.random_range(5..=8usize);
    let start = rng.random_range(0..MONTHS.len());
    let bar_w = f64::from(rng.random_range(40..=80u32));
    let gap = f64::from(rng.random_range(16..=48u32));
    let plot_h = f64::from(rng.random_range(260..=360u32));
    let plot_w = n as f64 * (bar_w + gap) + gap;
    let plot = Rect::new(
        f64::from(rng.random_range(60..=(1140 - plot_w as u32))),
        f64::from(rng.random_range(150..=(760 - plot_h as u32))),
        plot_w,
        plot_h,
    );
    let mut values: Vec<u32> = Vec::new();
    while values.len() < n {
        let v = rng.random_range(12..=99u32);
        if !values.contains(&v) {
            values.push(v);
        }
    }
    let marks: Vec<ChartMark> = (0..n)
        .map(|i| {
            let value = values[i];
            let bar_h = (plot_h - 20.0) * f64::from(value) / 100.0;
            ChartMark {
                label: MONTHS[(start + i) % MONTHS.len()].to_string(),
                value,
                rect: Rect::new(
                    plot.x + gap + i as f64 * (bar_w + gap),
                    plot.y + plot_h - bar_h,
                    bar_w,
                    bar_h,
                ),
            }
        })
        .collect();
    let target = marks[rng.random_range(0..n)].label.clone();
    ChartLayout {
        plot,
        marks,
        target,
        tooltip_delay_ms: rng.random_range(600..=900u32),
    }
}

const NOTE_VERBS: &[&str] = &[
    "Buy", "Call", "Email", "Pay", "Renew", "Book", "Order", "Return", "Check", "Print",
];
const NOTE_OBJECTS: &[&str] = &[
    "milk",
    "the plumber",
    "Ada",
    "rent",
    "passport",
    "flights",
    "paper",
    "parcel",
    "tyres",
    "tickets",
    "invoice",
    "lamps",
];

fn gen_form(rng: &mut Rng8) -> FormLayout {
    let note = |rng: &mut Rng8| {
        format!(
            "{} {} {}",
            NOTE_VERBS[rng.random_range(0..NOTE_VERBS.len())],
            NOTE_OBJECTS[rng.random_range(0..NOTE_OBJECTS.len())],
            rng.random_range(2..=99u32)
        )
    };
    let target = note(rng);
    let mut existing = Vec::new();
    let n = rng.random_range(2..=5usize);
    while existing.len() < n {
        let e = note(rng);
        if e != target && !existing.contains(&e) {
            existing.push(e);
        }
    }
    let width = f64::from(rng.random_range(280..=460u32));
    let height = f64::from(rng.random_range(34..=44u32));
    let x = f64::from(rng.random_range(40..=(1200 - 40 - 150 - width as u32)));
    let y = f64::from(rng.random_range(130..=420u32));
    let field = Rect::new(x, y, width, height);
    let save = Rect::new(
        x + width + 14.0,
        y,
        f64::from(rng.random_range(90..=130u32)),
        height,
    );
    FormLayout {
        field,
        save,
        existing,
        target,
    }
}

const SHIPPING: &[&str] = &[
    "Standard",
    "Express",
    "Overnight",
    "Economy",
    "Priority",
    "Same day",
    "Pickup",
    "Freight",
];

fn gen_select(rng: &mut Rng8) -> SelectLayout {
    let mut options: Vec<String> = SHIPPING.iter().map(|s| s.to_string()).collect();
    options.shuffle(rng);
    options.truncate(rng.random_range(4..=7usize));
    let initial = rng.random_range(0..options.len());
    let mut t = rng.random_range(0..options.len() - 1);
    if t >= initial {
        t += 1;
    }
    let width = f64::from(rng.random_range(180..=320u32));
    let control = Rect::new(
        f64::from(rng.random_range(40..=(1200 - 40 - width as u32))),
        f64::from(rng.random_range(140..=460u32)),
        width,
        f64::from(rng.random_range(30..=40u32)),
    );
    SelectLayout {
        control,
        initial,
        target: options[t].clone(),
        options,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn same_seed_same_layout() {
        for task in TaskKind::ALL {
            assert_eq!(Layout::generate(task, 3, 99), Layout::generate(task, 3, 99));
            assert_ne!(
                Layout::generate(task, 3, 99),
                Layout::generate(task, 3, 100)
            );
        }
    }

    #[test]
    fn default_grid_layouts_split_between_other_item_and_blank() {
        let mut other = 0;
        let mut blank = 0;
        for i in 0..40 {
            let l = Layout::for_root(seed::DEFAULT_ROOT_SEED, TaskKind::Grid, i);
            let LayoutSpec::Grid(g) = &l.spec else {
                unreachable!()
            };
            let target = g.items.iter().find(|it| it.label == g.target).unwrap();
            let p = unscaled_point(target.rect.center());
            let hit = g.items.iter().find(|it| it.rect.contains(p));
            match g.unscaled_landing {
                UnscaledLanding::OtherItem => {
                    other += 1;
                    assert!(hit.is_some_and(|h| h.label != g.target), "layout {i}");
                }
                UnscaledLanding::Blank => {
                    blank += 1;
                    assert!(hit.is_none(), "layout {i}");
                }
            }
        }
        assert!(other >= 10 && blank >= 10, "other={other} blank={blank}");
    }

    fn within_viewport(r: &Rect) -> bool {
        r.x >= 0.0
            && r.y >= 0.0
            && r.x + r.width <= f64::from(VIEWPORT.width)
            && r.y + r.height <= f64::from(VIEWPORT.height)
    }

    proptest! {
        #[test]
        fn every_layout_fits_the_viewport_and_names_a_real_target(seed in any::<u64>(), index in 0u32..200) {
            for task in TaskKind::ALL {
                let l = Layout::generate(task, index, seed);
                match &l.spec {
                    LayoutSpec::Search(s) => {
                        prop_assert!(within_viewport(&s.field));
                        prop_assert!(s.records.contains(&s.target));
                    }
                    LayoutSpec::Grid(g) => {
                        prop_assert!(g.items.iter().all(|it| within_viewport(&it.rect)));
                        prop_assert!(g.items.iter().any(|it| it.label == g.target));
                    }
                    LayoutSpec::Frame(f) => {
                        prop_assert!(within_viewport(&f.frame));
                        prop_assert!(f.rows.iter().any(|r| r.label == f.target));
                        let last = f.row_rect(f.rows.len() - 1);
                        prop_assert!(last.y + last.height <= f.frame.y + f.frame.height);
                    }
                    LayoutSpec::Chart(c) => {
                        prop_assert!(within_viewport(&c.plot));
                        prop_assert!(c.marks.iter().all(|m| within_viewport(&m.rect) && m.rect.height >= 8.0));
                        let mut vals: Vec<u32> = c.marks.iter().map(|m| m.value).collect();
                        vals.sort_unstable();
                        vals.dedup();
                        prop_assert_eq!(vals.len(), c.marks.len());
                    }
                    LayoutSpec::Form(f) => {
                        prop_assert!(within_viewport(&f.field) && within_viewport(&f.save));
                        prop_assert!(!f.existing.contains(&f.target));
                        prop_assert!(f.field.x + f.field.width < f.save.x);
                    }
                    LayoutSpec::Select(s) => {
                        prop_assert!(within_viewport(&s.control));
                        prop_assert!(s.options[s.initial] != s.target);
                        prop_assert!(s.options.contains(&s.target));
                    }
                }
            }
        }
    }
}
