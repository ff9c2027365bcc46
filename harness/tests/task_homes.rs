//! Every task has a home, and every piece of it answers: its layout and instruction
//! (tasks), its expectation (read back from the instruction, as the outcome policy reads
//! it), its page, truth and oracle (sites). On a real fixture server and a real Chromium,
//! the oracle finds each task's target on its page, reproduces the committed decision,
//! and the ledger confirms it on a clean page.

mod common;

use faultline::experiment::record::record_oracle;
use faultline_sites::{judge, locate_script, Ledger};
use faultline_tasks::decision::embedded_default;
use faultline_tasks::seed::DEFAULT_ROOT_SEED;
use faultline_tasks::{Layout, TaskKind};

#[test]
fn every_task_has_every_piece() {
    for task in TaskKind::ALL {
        let layout = Layout::for_root(DEFAULT_ROOT_SEED, task, 0);
        assert_eq!(layout.spec.kind(), task);
        let instruction = layout.instruction();
        let expectation = instruction
            .expectation()
            .unwrap_or_else(|e| panic!("{task}: no expectation: {e}"));
        assert_eq!(expectation.named(), layout.target(), "{task}");
        assert!(layout.target_rect().is_some(), "{task}: no target box");
        let empty = Ledger {
            scope: "t".into(),
            events: vec![],
        };
        assert!(
            !judge(&layout, &empty).achieved,
            "{task}: an empty ledger achieved the task"
        );
        // Only the search is done by typing alone: nothing to locate.
        assert_eq!(
            locate_script(&layout).is_some(),
            task != TaskKind::Search,
            "{task}: oracle script"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_oracle_reproduces_the_committed_decisions_and_the_ledger_confirms_them() {
    let h = common::harness().await;
    let committed = embedded_default().unwrap();
    for task in TaskKind::ALL {
        // Layouts 0 and 1: for the grid, the two kinds of unscaled miss; the quiet task
        // takes a third, so each of its effects (focus, scroll, selection) is recorded.
        let indices: &[u32] = if task == TaskKind::Quiet {
            &[0, 1, 2]
        } else {
            &[0, 1]
        };
        for &index in indices {
            // `record_oracle` keeps a decision only if it succeeds on a clean page, per
            // the ledger.
            let d = record_oracle(&h.env, DEFAULT_ROOT_SEED, task, index)
                .await
                .unwrap_or_else(|e| panic!("{task} layout {index}: {e:#}"));
            let c = committed.find(task, DEFAULT_ROOT_SEED, index).unwrap();
            assert_eq!(d, *c, "{task} layout {index}");
        }
    }
    h.shutdown().await;
}
