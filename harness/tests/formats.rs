//! Real fixture server + real Chromium: the example trajectory of every action format
//! imports, and each imported decision replays onto its grid target on a clean page;
//! where the screenshot the model saw was not the viewport (a downscaled image, or a
//! 0–1000 grid), `execute.unscaled_coordinates` fires and the click misses the target.

mod common;

use common::faultline;
use faultline::engine::trial::run_trial;
use faultline_faults::{Fault, FaultPlan};
use faultline_tasks::formats::trajectory::{self, ImportOptions};
use faultline_tasks::layout::{LayoutSpec, VIEWPORT};
use faultline_tasks::seed::DEFAULT_ROOT_SEED;
use faultline_tasks::{ActionFormat, Decision, DecisionSet, Rect, TaskKind};
use std::path::{Path, PathBuf};

const FORMATS: [ActionFormat; 5] = [
    ActionFormat::Anthropic,
    ActionFormat::OpenAi,
    ActionFormat::BrowserGym,
    ActionFormat::UiTars,
    ActionFormat::Qwen,
];

fn example(format: ActionFormat) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/trajectories")
        .join(format!("{format}.jsonl"))
}

fn import(format: ActionFormat) -> DecisionSet {
    let path = example(format);
    let text = std::fs::read_to_string(&path).unwrap();
    trajectory::import(
        &path.display().to_string(),
        &text,
        &ImportOptions {
            format,
            task: TaskKind::Grid,
            root_seed: DEFAULT_ROOT_SEED,
            image: None,
            space: None,
        },
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

/// The target button's rectangle in viewport pixels, from the layout's geometry.
fn target_rect(d: &Decision) -> Rect {
    let layout = d.layout();
    let LayoutSpec::Grid(g) = &layout.spec else {
        panic!("grid decisions have grid layouts")
    };
    g.items
        .iter()
        .find(|it| it.label == g.target)
        .expect("the target is on the page")
        .rect
}

#[test]
fn every_example_converts_onto_its_target_and_the_raw_numbers_miss() {
    for format in FORMATS {
        let set = import(format);
        assert!(!set.decisions.is_empty());
        let mut downscaled = 0;
        for d in &set.decisions {
            assert_eq!(d.format, format);
            assert_eq!(d.source, format!("import:{format}"));
            let p = d.actions.last().unwrap().point().expect("a click");
            let rect = target_rect(d);
            let extent = d.space.extent(d.image);
            let scaled = p.scale(extent, VIEWPORT);
            assert!(
                rect.contains(scaled),
                "{format} {}: {scaled} is outside the target {rect:?}",
                d.key()
            );
            if extent != VIEWPORT {
                downscaled += 1;
                assert!(
                    !rect.contains(p),
                    "{format} {}: the raw point {p} is on the target",
                    d.key()
                );
            }
        }
        assert!(downscaled > 0, "{format}: no case where scaling matters");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn imported_decisions_replay_and_the_unscaled_fault_misses() {
    let h = common::harness().await;
    for format in FORMATS {
        for d in &import(format).decisions {
            let what = format!(
                "{format} {} ({} space, image {})",
                d.key(),
                d.space,
                d.image
            );
            let clean = run_trial(&h.env, d, None).await.unwrap();
            assert!(
                clean.parse_error.is_none(),
                "{what}: {:?}",
                clean.parse_error
            );
            assert!(clean.truth.achieved, "{what}: {}", clean.truth.detail);
            assert!(clean.witness.is_none(), "{what}: no fault, no witness");

            let faulty = run_trial(
                &h.env,
                d,
                Some(FaultPlan::new(Fault::UnscaledCoordinates, 1)),
            )
            .await
            .unwrap();
            if d.space.extent(d.image) == VIEWPORT {
                // Nothing to scale: the fault cannot fire and the click still lands.
                assert!(faulty.witness.is_none(), "{what}");
                assert!(faulty.truth.achieved, "{what}: {}", faulty.truth.detail);
            } else {
                let w = faulty
                    .witness
                    .unwrap_or_else(|| panic!("{what}: the unscaled fault did not fire"));
                assert_eq!(w.fault, Fault::UnscaledCoordinates.id());
                assert!(
                    !faulty.truth.achieved,
                    "{what}: the unscaled click still hit: {}",
                    faulty.truth.detail
                );
            }
        }
    }
    h.shutdown().await;
}

#[test]
fn the_import_command_writes_decisions_and_rejects_bad_lines_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    for format in FORMATS {
        let out = dir.path().join(format!("{format}.jsonl"));
        let (code, stdout, stderr) = faultline(&[
            "import",
            "--format",
            format.name(),
            example(format).to_str().unwrap(),
            "--task",
            "grid",
            "--out",
            out.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{stdout}{stderr}");
        let written = DecisionSet::load(&out).unwrap();
        assert_eq!(written, import(format));
    }

    let bad = dir.path().join("bad.jsonl");
    std::fs::write(
        &bad,
        "{\"layout_index\": 0, \"reply\": {\"action\": \"left_click\", \"coordinate\": [1, 2]}}\n",
    )
    .unwrap();
    let (code, _, stderr) = faultline(&[
        "import",
        "--format",
        "anthropic",
        bad.to_str().unwrap(),
        "--task",
        "grid",
        "--out",
        dir.path().join("never.jsonl").to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{}:1: image: expected [width, height]",
            bad.display()
        )),
        "{stderr}"
    );
    assert!(!dir.path().join("never.jsonl").exists());
    // With a default image size the same line imports.
    let (code, _, stderr) = faultline(&[
        "import",
        "--format",
        "anthropic",
        bad.to_str().unwrap(),
        "--task",
        "grid",
        "--image",
        "960x640",
        "--out",
        dir.path().join("ok.jsonl").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let (code, _, stderr) = faultline(&["import", "--format", "gemini", "x", "--task", "grid"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("--format: unknown action format `gemini`"),
        "{stderr}"
    );
}
