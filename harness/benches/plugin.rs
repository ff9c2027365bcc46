//! The per-judgement overhead of the plugin protocol: the same evidence judged by the
//! built-in `generic` policy in process, and by the example verifier
//! (`examples/plugins/verify_changed.py`, the same rule over every frame) through its
//! long-lived process: two 900x600 PNG screenshots written to files, the evidence
//! serialized to one JSON line, the answer read back. The difference is what an external
//! verifier adds to every (trial, policy).

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{criterion_group, criterion_main, Criterion};
use faultline::plugin::policy::{pool, ExternalPolicy};
use faultline::plugin::PluginSpec;
use faultline_policies::{
    Control, Evidence, FrameSnapshot, GenericPolicy, Observation, PageState, VerificationPolicy,
};
use faultline_tasks::{Action, Instruction, Size, TaskKind};

fn png(shade: u8) -> Vec<u8> {
    let img = image::RgbImage::from_fn(900, 600, |x, y| {
        image::Rgb([shade, (x % 256) as u8, (y % 256) as u8])
    });
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png).unwrap();
    out.into_inner()
}

fn frame(url: &str, top: bool, digest: &str) -> FrameSnapshot {
    FrameSnapshot {
        url: url.into(),
        is_top: top,
        dom_digest: digest.into(),
        text: "Order 1\nOrder 2\nOrder 3\n".repeat(10),
        controls: vec![Control {
            tag: "input".into(),
            kind: "text".into(),
            name: "q".into(),
            label: "Search".into(),
            value: String::new(),
            checked: false,
        }],
        selected: vec!["Order 7".into()],
        focus: String::new(),
        scroll: Vec::new(),
        selection: String::new(),
    }
}

fn bench(c: &mut Criterion) {
    let instruction = Instruction {
        task: TaskKind::Frame,
        text: "Select the row \"Order 7\" in the orders table.".into(),
    };
    let obs = |shade| Observation {
        png: png(shade),
        size: Size::new(900, 600),
        text: "Orders\nOrder 7".into(),
    };
    let (before, after) = (obs(10), obs(12));
    let url = "http://127.0.0.1:1/s/scope/frame?layout=0&seed=1";
    let before_state = PageState {
        url: url.into(),
        frames: vec![frame(url, true, "a"), frame("about:srcdoc", false, "b")],
    };
    let after_state = PageState {
        url: url.into(),
        frames: vec![frame(url, true, "a"), frame("about:srcdoc", false, "c")],
    };
    let actions = [Action::Click { x: 300.0, y: 200.0 }];
    let ev = Evidence {
        instruction: &instruction,
        actions: &actions,
        tool_message: "Clicked at (300, 200).",
        before: &before,
        after: &after,
        before_state: &before_state,
        after_state: &after_state,
    };
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/plugins/verify_changed.py");
    let viewport = Size::new(1200, 800);
    let external = ExternalPolicy::new(
        pool(
            PluginSpec {
                name: "changed".into(),
                command: vec!["python3".into(), script.display().to_string()],
                timeout_ms: 10_000,
            },
            viewport,
        ),
        viewport,
    );
    // Start the process outside the measurement: it lives for the whole run.
    external.judge(&ev).expect("the example verifier answers");
    let mut g = c.benchmark_group("judgement");
    g.bench_function("generic (built-in)", |b| {
        b.iter(|| black_box(GenericPolicy.judge(black_box(&ev)).unwrap()))
    });
    g.bench_function("verify_changed.py (plugin protocol)", |b| {
        b.iter(|| black_box(external.judge(black_box(&ev)).unwrap()))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
