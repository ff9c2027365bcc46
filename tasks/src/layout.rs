//! Seeded layouts: the same task rendered in many arrangements.
//!
//! A layout is a pure function of `(task, index, seed)`. The seed drives a ChaCha RNG
//! (positions, spacing, values, names, delays); the index only decides, for the grid,
//! which *kind* of miss the unscaled-coordinates fault produces, so that every run of
//! N layouts has both kinds in equal share (half land on another item, half on blank
//! space) instead of whatever a coin flip gives. Each task draws its own arrangement
//! ([`crate::task::Task::generate`], one file per task under `tasks/src/task/`).
//!
//! All coordinates are CSS pixels in a [`VIEWPORT`]-sized page.

use crate::geometry::Rect;
use crate::instruction::Instruction;
use crate::seed;
use serde::{Deserialize, Serialize};

pub use crate::geometry::{IMAGE, MAX_IMAGE_SIDE, VIEWPORT};
pub use crate::task::{
    unscaled_point, ChartLayout, ChartMark, FormLayout, FrameLayout, GridItem, GridLayout,
    LayoutSpec, MiniwobLayout, MiniwobTask, OrderRow, QuietEffect, QuietItem, QuietLayout,
    SearchLayout, SelectLayout, TaskKind, UnscaledLanding,
};

/// The most layouts a run draws per task (a config's `layouts` is at most this), so a
/// layout index is below it.
pub const MAX_LAYOUTS: u32 = 10_000;

/// A task rendered in one seeded arrangement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Layout {
    /// The task this is an arrangement of.
    pub task: TaskKind,
    /// The layout's index within the task.
    pub index: u32,
    /// The seed the arrangement was drawn from.
    pub seed: u64,
    /// The task-specific arrangement: positions, labels and the target.
    pub spec: LayoutSpec,
}

impl Layout {
    /// Generates layout `index` of `task` from its layout seed.
    pub fn generate(task: TaskKind, index: u32, seed: u64) -> Layout {
        let mut rng = seed::rng(seed);
        let spec = task.generate(&mut rng, index);
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
        self.spec.target()
    }

    /// The box of the thing the instruction names, in viewport coordinates.
    pub fn target_rect(&self) -> Option<Rect> {
        self.spec.target_rect()
    }
}

impl Instruction {
    /// The instruction of `layout`, in its task's words.
    pub fn for_layout(layout: &Layout) -> Instruction {
        Instruction {
            task: layout.task,
            text: layout.spec.instruction(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Every task answers for every piece this crate holds: a layout of its kind, an
    /// instruction that quotes its target, an expectation about that target read back
    /// from the text, and a target box.
    #[test]
    fn every_task_has_every_piece() {
        for task in TaskKind::ALL {
            assert_eq!(task.name().parse::<TaskKind>().unwrap(), task);
            for index in 0..4 {
                let layout = Layout::generate(task, index, 5 + u64::from(index));
                assert_eq!(layout.spec.kind(), task);
                let target = layout.target();
                assert!(!target.is_empty(), "{task}: empty target");
                let instruction = layout.instruction();
                assert_eq!(instruction.task, task);
                assert!(
                    instruction.text.contains(&format!("\"{target}\"")),
                    "{task}: the instruction must quote the target: {}",
                    instruction.text
                );
                let e = instruction.expectation().unwrap();
                assert_eq!(e.named(), target, "{task}");
                assert!(layout.spec.target_rect().is_some(), "{task}: no target box");
            }
        }
    }

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
                    LayoutSpec::Quiet(q) => {
                        prop_assert!(q.items.iter().any(|i| i.label == q.target));
                        match q.effect {
                            QuietEffect::Scroll => prop_assert!(q.target_item().rect.y > 900.0),
                            QuietEffect::Focus | QuietEffect::Select => {
                                prop_assert!(within_viewport(&q.target_item().rect));
                            }
                        }
                    }
                    LayoutSpec::Miniwob(_) => {
                        prop_assert!(l.target_rect().is_some_and(|r| within_viewport(&r)));
                    }
                }
            }
        }
    }
}
