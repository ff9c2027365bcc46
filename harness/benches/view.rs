//! The trace viewer at catalogue scale: a synthetic run of 1,000 trials and 400 episodes
//! (1,200 steps, about 3,600 screenshots), its view generated cold (every thumbnail made)
//! and warm (thumbnails cached by content), then its run page opened from disk in the
//! Chromium faultline drives, timed from navigation to the first rendered list by the
//! page's own clock. The target is under a second; this prints, it does not assert.
//!
//! Under `cargo test` (no `--bench` argument) it runs a tenth of the size, once, as a
//! smoke test of the same path.

use anyhow::Result;
use faultline::engine::browser::{find_chromium, BrowserHandle};
use faultline_analysis::db::manifest::RecoveryDesign;
use faultline_analysis::db::Manifest;
use faultline_tasks::Size;
use rusqlite::{params, Connection};
use std::path::Path;
use std::time::{Duration, Instant};

const TASKS: [&str; 4] = ["search", "grid", "frame", "chart"];
const POLICIES: [&str; 4] = ["unverified", "generic", "pixel", "outcome"];
const VERDICTS: [&str; 3] = ["success", "no_change", "fail"];

/// A 900x600 screenshot that differs with `n` (so thumbnails cannot be shared).
fn png(path: &Path, n: u32) {
    let mut img = image::RgbImage::from_pixel(900, 600, image::Rgb([250, 250, 250]));
    let (x0, y0) = (40 + (n * 37) % 700, 60 + (n * 53) % 450);
    for y in y0..y0 + 80 {
        for x in x0..x0 + 150 {
            img.put_pixel(x, y, image::Rgb([(n % 200) as u8, 90, 200]));
        }
    }
    img.save(path).unwrap();
}

/// A catalogue fault for the synthetic fault number `f` (1 and up): its id, stage and
/// layer, as a real run stores them.
fn fault(f: u32) -> (String, String, String) {
    let all = faultline_faults::Fault::ALL;
    let fault = all[f as usize % all.len()];
    (
        fault.id().to_string(),
        fault.stage().to_string(),
        fault.layer().to_string(),
    )
}

fn synthetic_run(dir: &Path, layouts: u32) -> Result<()> {
    std::fs::create_dir_all(dir.join("shots"))?;
    drop(faultline_analysis::db::ResultsDb::open(
        &dir.join("results.sqlite"),
    )?);
    let mut db = Connection::open(dir.join("results.sqlite"))?;
    let tx = db.transaction()?;
    // The typed record, so this synthetic run cannot drift from what a real run stores.
    let faults: Vec<faultline_faults::Fault> = faultline_faults::Fault::ALL.to_vec();
    let manifest = Manifest {
        chromium_version: "synthetic".into(),
        config_as_passed: None,
        config_resolved: serde_json::json!({
            "image": {"width": 900, "height": 600},
            "viewport": {"width": 1200, "height": 800},
        }),
        decisions: "synthetic".into(),
        decisions_sha256: None,
        faultline_version: env!("CARGO_PKG_VERSION").into(),
        faults: faults.clone(),
        git_commit: "unknown".into(),
        layouts: 10,
        merged_shards: None,
        policies: POLICIES.iter().map(|p| p.to_string()).collect(),
        recovery: Some(RecoveryDesign {
            agents: vec!["oracle".into()],
            budget: 3,
            deterministic: Vec::new(),
            faults,
            layouts: 10,
            max_steps: 4,
            policies: POLICIES.iter().map(|p| p.to_string()).collect(),
            runs: 1,
        }),
        root_seed: 1,
        settle: None,
        shard: None,
        tasks: TASKS
            .iter()
            .map(|t| t.parse().map_err(anyhow::Error::msg))
            .collect::<Result<_>>()?,
    };
    tx.execute(
        "INSERT INTO meta (key, value) VALUES ('manifest', ?1), ('policies', ?2)",
        params![
            serde_json::to_string_pretty(&manifest)?,
            serde_json::to_string(&POLICIES)?
        ],
    )?;
    png(&dir.join("shots/shared.png"), 0);
    let mut n = 1;
    for task in TASKS {
        for layout in 0..layouts {
            for f in 0..25u32 {
                let (id, stage, layer) = fault(f);
                let fault = (f > 0).then_some(id);
                let key = format!(
                    "detection/{task}/{layout:03}/{}",
                    fault.as_deref().unwrap_or("working")
                );
                let after = format!("shots/t{n}.after.png");
                png(&dir.join(&after), n);
                n += 1;
                let truth = f % 3 != 0;
                tx.execute(
                    "INSERT INTO trials (trial_key, experiment, task, layout_index, layout_seed, trial_seed, condition, fault, stage, fired, witness, decision_source, reply, actions, executed, tool_message, observation_text, before_png, after_png, evidence, truth_achieved, truth_detail, ledger, duration_ms, layer, not_fired_reason)
                     VALUES (?1, 'detection', ?2, ?3, '1', '2', ?4, ?5, ?6, ?7, ?8, 'oracle', 'click(100, 200)', '[{\"kind\":\"click\",\"x\":100.0,\"y\":200.0}]', '[{\"action\":{\"kind\":\"click\",\"x\":100.0,\"y\":200.0},\"viewport_point\":{\"x\":133.3,\"y\":266.7},\"message\":\"Clicked.\"}]', 'Clicked.', 'page text', 'shots/shared.png', ?9, '{}', ?10, 'detail', '{}', 700.0, ?11, NULL)",
                    params![
                        key,
                        task,
                        layout,
                        if fault.is_some() { "faulty" } else { "working" },
                        fault,
                        fault.as_ref().map(|_| stage.clone()),
                        fault.as_ref().map(|_| f % 7 != 0),
                        fault.as_ref().map(|f| format!("{{\"fault\":\"{f}\",\"summary\":\"s\"}}")),
                        after,
                        truth,
                        fault.as_ref().map(|_| layer.clone()),
                    ],
                )?;
                for (i, p) in POLICIES.iter().enumerate() {
                    tx.execute(
                        "INSERT INTO verdicts (trial_key, policy, verdict, message) VALUES (?1, ?2, ?3, 'message')",
                        params![key, p, VERDICTS[(i + f as usize + layout as usize) % 3]],
                    )?;
                }
            }
        }
    }
    for task in TASKS {
        for f in 1..6u32 {
            let (id, stage, layer) = fault(f);
            for p in POLICIES {
                for layout in 0..layouts.div_ceil(2) {
                    let key = format!("recovery/{task}/{id}/{p}/trusting/r0/{layout:03}");
                    let stem = format!("shots/e{n}");
                    png(&dir.join(format!("{stem}.before.png")), 0);
                    tx.execute(
                        "INSERT INTO episodes (episode_key, task, fault, stage, layer, policy, agent, run, layout_index, layout_seed, episode_seed, fired, success, truth_detail, browser_actions, steps, stop_reason, detected_at_first_step, first_verdict, error, model_calls, prompt_tokens, completion_tokens, ledger, duration_ms)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'trusting', 0, ?7, '1', '2', 1, ?8, 'detail', 2, 3, 'stopped', ?9, 'fail', NULL, 0, NULL, NULL, '{}', 3000.0)",
                        params![key, task, id, stage, layer, p, layout, layout % 2 == 0, layout % 3 == 0],
                    )?;
                    for step in 0..3u32 {
                        let shot = format!("{stem}.s{step}.png");
                        if step == 2 {
                            png(&dir.join(&shot), n);
                        } else {
                            std::fs::copy(dir.join("shots/shared.png"), dir.join(&shot))?;
                        }
                        tx.execute(
                            "INSERT INTO episode_steps (episode_key, step, source, reply, parse_error, actions, executed, browser_actions, tool_message, verdict, policy_message, observation_text, screenshot, witness, truth_achieved, truth_detail, ledger_events, usage)
                             VALUES (?1, ?2, ?3, 'click(100, 200)', NULL, '[]', '[]', 1, 'Clicked.', 'fail', 'm', 'text', ?4, NULL, 0, 'detail', '[]', NULL)",
                            params![key, step, if step == 0 { "decision" } else { "agent" }, shot],
                        )?;
                    }
                    n += 1;
                }
            }
        }
    }
    tx.commit()?;
    Ok(())
}

fn main() -> Result<()> {
    // `cargo bench` passes `--bench`; `cargo test` runs a small smoke version.
    let full = std::env::args().any(|a| a == "--bench");
    let (layouts, loads) = if full { (10, 5) } else { (1, 1) };
    let tmp = tempfile::tempdir()?;
    let run = tmp.path().join("run");
    let t = Instant::now();
    synthetic_run(&run, layouts)?;
    println!(
        "synthetic run ({} trials, {} episodes): built in {:.1} s",
        TASKS.len() as u32 * layouts * 25,
        TASKS.len() as u32 * 5 * POLICIES.len() as u32 * layouts.div_ceil(2),
        t.elapsed().as_secs_f64()
    );
    let view = run.join("view");
    let t = Instant::now();
    let s = faultline_viewer::generate(&run, &view)?;
    println!(
        "view generated cold: {:.2} s ({} trials, {} episodes, {} thumbnails made)",
        t.elapsed().as_secs_f64(),
        s.trials,
        s.episodes,
        s.thumbs_made
    );
    let t = Instant::now();
    faultline_viewer::generate(&run, &view)?;
    println!("view regenerated warm: {:.2} s", t.elapsed().as_secs_f64());
    let index = std::fs::metadata(view.join("data/index.js"))?.len();
    println!("data/index.js: {:.0} KiB", index as f64 / 1024.0);

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async {
        let browser = BrowserHandle::launch(&find_chromium(None)?).await?;
        let pool = browser.page_pool(
            Size {
                width: 1280,
                height: 900,
            },
            faultline::engine::browser::PoolSize::fixed(1),
            faultline::engine::browser::SiteOrigins::blank(),
            faultline::engine::browser::Isolation::FreshContext,
        );
        let url = format!(
            "file://{}/index.html",
            std::fs::canonicalize(&view)?.display()
        );
        let mut times = Vec::new();
        for _ in 0..loads {
            let page = pool.take().await?;
            page.goto(&url).await?;
            let deadline = Instant::now() + Duration::from_secs(20);
            let ready = loop {
                let v = page.eval("document.documentElement.dataset.readyMs || ''").await?;
                if let Some(ms) = v.as_str().and_then(|s| s.parse::<f64>().ok()) {
                    break ms;
                }
                anyhow::ensure!(Instant::now() < deadline, "the run page never rendered");
                tokio::time::sleep(Duration::from_millis(20)).await;
            };
            times.push(ready);
            page.close().await;
        }
        drop(pool);
        browser.close().await;
        times.sort_by(f64::total_cmp);
        println!(
            "run page (index loaded, list rendered) from navigation: median {:.0} ms, max {:.0} ms over {} loads (target < 1000 ms)",
            times[times.len() / 2],
            times[times.len() - 1],
            times.len()
        );
        Ok::<_, anyhow::Error>(())
    })?;
    Ok(())
}
