//! The coordinate-space family on real grid pages in a real Chromium, over many seeds so
//! every drawn variant runs: a fired misread leaves the witness the catalogue promises
//! (the space the model saw, its point there, the intended and dispatched points and what
//! each met) and the ledger says the target was not selected; a misread whose point still
//! meets the intended button is stored as not fired, and the ledger says the target was
//! selected. The dispatched point is the one the conversion module computes for the
//! trial's seed, so the page and the golden arithmetic agree.

mod common;

use faultline::engine::trial::run_trial;
use faultline_faults::{Fault, FaultPlan, Misread};
use faultline_tasks::decision::embedded_default;
use faultline_tasks::layout::{IMAGE, VIEWPORT};
use faultline_tasks::seed::DEFAULT_ROOT_SEED;
use faultline_tasks::{Point, TaskKind};
use std::collections::BTreeMap;

const FAMILY: [Fault; 4] = Misread::FAMILY;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_misread_fires_with_its_witness_and_ledger_or_is_stored_as_not_fired() {
    let h = common::harness().await;
    let set = embedded_default().unwrap();
    // (fault, variant) -> (fired, not fired)
    let mut seen: BTreeMap<(Fault, String), (usize, usize)> = BTreeMap::new();
    let mut failures = Vec::new();
    for fault in FAMILY {
        for seed in 0..8u64 {
            let index = (seed % 4) as u32;
            let d = set.find(TaskKind::Grid, DEFAULT_ROOT_SEED, index).unwrap();
            let plan = FaultPlan::new(fault, seed);
            let misread = plan.misread(IMAGE, VIEWPORT).expect("a family fault");
            let variant = serde_json::to_value(misread).unwrap().to_string();
            let r = run_trial(&h.env, d, Some(plan)).await.unwrap();
            let at = format!("{fault} seed {seed} layout {index} ({variant})");
            let counts = seen.entry((fault, variant)).or_default();
            let Some(w) = &r.witness else {
                counts.1 += 1;
                if !r.truth.achieved {
                    failures.push(format!(
                        "{at}: not fired, yet the target was not selected: {}",
                        r.truth.detail
                    ));
                }
                continue;
            };
            counts.0 += 1;
            assert_eq!(w.fault, fault.id(), "{at}");
            if r.truth.achieved {
                failures.push(format!(
                    "{at}: fired, yet the ledger says the target was selected: {w:?}"
                ));
            }
            let point = |k: &str| -> Point {
                serde_json::from_value(w.get(k).unwrap_or_else(|| panic!("{at}: no {k}")).clone())
                    .unwrap()
            };
            let (intended, model, executed) =
                (point("intended"), point("model_point"), point("executed"));
            assert_eq!(
                misread.executed(model, VIEWPORT),
                executed,
                "{at}: the page got another point than the conversion gives"
            );
            assert_eq!(
                misread.model_point(intended, VIEWPORT, point("image_point")),
                model,
                "{at}"
            );
            assert_eq!(w.str("seen"), Some(misread.seen().as_str()), "{at}");
            // The intended point met the target button; the dispatched one met something
            // else (another item, the board, or nothing outside the viewport).
            let met = w.get("intended_element").unwrap();
            assert_eq!(met["tag"], "button", "{at}: {met}");
            let landed = w.get("landed_on").unwrap();
            assert_ne!(landed, met, "{at}");
        }
    }
    h.shutdown().await;
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    for fault in FAMILY {
        let fired: usize = seen
            .iter()
            .filter(|((f, _), _)| *f == fault)
            .map(|(_, (fired, _))| fired)
            .sum();
        assert!(fired > 0, "{fault} never fired on the grid: {seen:?}");
    }
    let variants = |f: Fault| seen.keys().filter(|(g, _)| *g == f).count();
    // Eight seeds draw more than one variant of each seeded family member.
    for fault in [
        Fault::ProviderDownscale,
        Fault::DeviceScaleMismatch,
        Fault::WindowOffset,
    ] {
        assert!(variants(fault) >= 2, "{fault}: {seen:?}");
    }
}
