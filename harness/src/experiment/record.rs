//! Recording decisions with the deterministic oracle.
//!
//! The oracle plays a perfect model: on a clean page it finds the target named in the
//! instruction through CDP (the element's box as the browser laid it out), converts its
//! centre to image coordinates, and writes a model-style reply. For the chart it hovers,
//! waits for the tooltip and reads the value from the observation text, exactly as a
//! model would read it from the screenshot. For the form it types the note and clicks
//! Save; for the select it opens the menu and moves to the option with the arrow keys; for the quiet task it clicks the field, turns the wheel until the section is mid-screen, or double-clicks the word. Each decision is then replayed on a fresh
//! clean page and kept only if the ledger confirms it succeeded.

use crate::engine::session::Session;
use crate::engine::trial::run_trial;
use crate::engine::Engine;
use anyhow::{anyhow, bail, Context, Result};
use faultline_tasks::{Decision, Layout, Point, TaskKind};

/// Finds the target's centre (viewport coordinates) on the live page.
async fn locate(page: &crate::engine::browser::TrialPage, layout: &Layout) -> Result<Point> {
    // The locate script lives with the page whose markup it reads.
    let js = faultline_sites::locate_script(layout)
        .ok_or_else(|| anyhow!("the {} task has no point to locate", layout.task))?;
    let v = page.eval(&js).await?;
    let arr = v
        .as_array()
        .filter(|a| a.len() == 2)
        .ok_or_else(|| anyhow!("target {} not found on the page", layout.target()))?;
    Ok(Point::new(
        arr[0].as_f64().unwrap_or(f64::NAN),
        arr[1].as_f64().unwrap_or(f64::NAN),
    ))
}

/// Writes the oracle's reply for one layout.
async fn oracle_reply(env: &Engine, layout: &Layout) -> Result<String> {
    if layout.task == TaskKind::Search {
        return Ok(format!(
            "type({})\npress(\"Enter\")",
            serde_json::to_string(layout.target())?
        ));
    }
    let image = faultline_tasks::layout::IMAGE;
    // A scratch session: its ledger is released unread when it ends.
    let mut session = Session::open(env, layout, None, image).await?;
    if let Some(js) = faultline_sites::plan_script(layout) {
        return miniwob_reply(&mut session, &js, env, image).await;
    }
    let centre = locate(&session.rt().page, layout).await?;
    let p = centre.scale(env.viewport, image);
    let (x, y) = (p.x.round(), p.y.round());
    match layout.task {
        TaskKind::Grid | TaskKind::Frame => Ok(format!("click({x}, {y})")),
        TaskKind::Form => Ok(format!(
            "type({})\nclick({x}, {y})",
            serde_json::to_string(layout.target())?
        )),
        TaskKind::Select => {
            // Open the menu, move from the current option to the target, commit.
            let faultline_tasks::layout::LayoutSpec::Select(s) = &layout.spec else {
                unreachable!("select layouts are select specs")
            };
            let (from, to) = (s.initial as i64, s.target_index() as i64);
            let key = if to > from { "ArrowDown" } else { "ArrowUp" };
            let mut lines = vec![format!("click({x}, {y})")];
            lines.extend((0..(to - from).abs()).map(|_| format!("press(\"{key}\")")));
            lines.push("press(\"Enter\")".into());
            Ok(lines.join("\n"))
        }
        TaskKind::Chart => {
            // Hover like a model would and read the tooltip from the observation.
            let hover = format!("hover({x}, {y})");
            let step = session
                .rt()
                .step(&hover, faultline_tasks::ActionFormat::Faultline, None)
                .await?
                .map_err(|e| anyhow!("oracle reply did not parse: {e}"))?;
            let needle = format!("{}: ", layout.target());
            let value: String = step
                .after
                .text
                .split(&needle)
                .nth(1)
                .map(|rest| rest.chars().take_while(|c| c.is_ascii_digit()).collect())
                .filter(|v: &String| !v.is_empty())
                .ok_or_else(|| anyhow!("the tooltip for {} never appeared", layout.target()))?;
            Ok(format!("{hover}\nanswer(\"{value}\")"))
        }
        TaskKind::Quiet => {
            let faultline_tasks::layout::LayoutSpec::Quiet(q) = &layout.spec else {
                unreachable!("quiet layouts are quiet specs")
            };
            Ok(match q.effect {
                faultline_tasks::layout::QuietEffect::Focus => format!("click({x}, {y})"),
                // The wheel turns in viewport pixels: bring the heading to the middle.
                faultline_tasks::layout::QuietEffect::Scroll => format!(
                    "scroll(0, {})",
                    (centre.y - f64::from(env.viewport.height) / 2.0).round()
                ),
                faultline_tasks::layout::QuietEffect::Select => format!("double_click({x}, {y})"),
            })
        }
        TaskKind::Search => unreachable!("handled above"),
        TaskKind::Miniwob(_) => {
            unreachable!("MiniWoB++ tasks follow their plan above")
        }
    }
}

/// The oracle's reply on a MiniWoB++ page: the plan script reads the page's `#query` and
/// the boxes of the elements it names; each click becomes an image-space point. A plan
/// that ends in `["then"]` is carried out on the scratch page and planned again from the
/// page it leaves (at most [`MINIWOB_ROUNDS`] times); the reply is every round's steps.
async fn miniwob_reply(
    session: &mut Session<'_>,
    js: &str,
    env: &Engine,
    image: faultline_tasks::Size,
) -> Result<String> {
    let mut lines = Vec::new();
    for _ in 0..MINIWOB_ROUNDS {
        let plan = session.rt().page.eval(js).await?;
        let steps = plan
            .as_array()
            .ok_or_else(|| anyhow!("the MiniWoB++ page's query or its elements were not found"))?;
        let mut round = Vec::new();
        let mut more = false;
        for step in steps {
            let s = step.as_array().map(Vec::as_slice).unwrap_or_default();
            match s {
                [verb, x, y] if verb == "click" => {
                    let c = Point::new(
                        x.as_f64().unwrap_or(f64::NAN),
                        y.as_f64().unwrap_or(f64::NAN),
                    );
                    let p = c.scale(env.viewport, image);
                    round.push(format!("click({}, {})", p.x.round(), p.y.round()));
                }
                [verb, text] if verb == "type" || verb == "press" => {
                    let text = text.as_str().unwrap_or_default();
                    round.push(format!(
                        "{}({})",
                        verb.as_str().unwrap_or_default(),
                        serde_json::to_string(text)?
                    ));
                }
                [verb, ms] if verb == "wait" => {
                    let ms = ms
                        .as_u64()
                        .ok_or_else(|| anyhow!("the MiniWoB++ plan waits {ms} ms"))?;
                    round.push(format!("wait({ms})"));
                }
                [verb] if verb == "then" => more = true,
                _ => bail!("the MiniWoB++ plan has a step the oracle does not know: {step}"),
            }
        }
        if !more {
            lines.extend(round);
            return Ok(lines.join("\n"));
        }
        let reply = round.join("\n");
        session
            .rt()
            .step(&reply, faultline_tasks::ActionFormat::Faultline, None)
            .await?
            .map_err(|e| anyhow!("the oracle's own reply did not parse: {e}"))?;
        lines.extend(round);
    }
    bail!("the MiniWoB++ plan did not finish in {MINIWOB_ROUNDS} rounds")
}

/// How many times the oracle plans again on a MiniWoB++ page before it gives up.
const MINIWOB_ROUNDS: usize = 16;

/// Records and verifies the oracle decision for one layout.
pub async fn record_oracle(
    env: &Engine,
    root_seed: u64,
    task: TaskKind,
    index: u32,
) -> Result<Decision> {
    let layout = Layout::for_root(root_seed, task, index);
    let reply = oracle_reply(env, &layout)
        .await
        .with_context(|| format!("oracle on {task} layout {index}"))?;
    let decision = Decision::from_reply(
        root_seed,
        &layout,
        reply,
        faultline_tasks::layout::IMAGE,
        env.viewport,
        "oracle",
    )
    .map_err(|e| anyhow!("oracle on {task} layout {index}: {e}"))?;
    // Keep only decisions that succeed on a clean page, per the ledger.
    let check = run_trial(env, &decision, None).await?;
    if !check.truth.achieved {
        bail!(
            "oracle decision for {task} layout {index} failed on the clean page: {}",
            check.truth.detail
        );
    }
    Ok(decision)
}

/// What recording one layout with a model gave.
pub enum Recorded {
    /// The reply parsed and succeeded on a clean page, per the ledger.
    Kept(Decision),
    /// Not kept, and why (the reply, the parse error or the ledger's verdict).
    Rejected(String),
}

/// Records one layout with an agent (a real model through the `openai` agent): the agent
/// sees the clean page's observation and replies; the decision is replayed on a fresh
/// clean page and kept only if the ledger confirms it.
pub async fn record_with_agent(
    env: &Engine,
    agent: &dyn crate::agent::Agent,
    source: &str,
    root_seed: u64,
    task: TaskKind,
    index: u32,
) -> Result<Recorded> {
    let layout = Layout::for_root(root_seed, task, index);
    let image = faultline_tasks::layout::IMAGE;
    let reply = async {
        // A scratch session: its ledger is released unread when it ends.
        let mut session = Session::open(env, &layout, None, image).await?;
        let (observation, _) = session.rt().observe_now().await?;
        let instruction = layout.instruction();
        let view = crate::agent::AgentView {
            instruction: &instruction,
            observation: &observation,
            feedback: None,
            history: &[],
            budget_left: crate::engine::episode::EpisodeLimits::default().budget,
            step: 0,
            image,
            seed: faultline_tasks::seed::derive(
                root_seed,
                &["record", task.name(), &index.to_string()],
            ),
        };
        crate::agent::portable::ask(agent, view, &session.site())
            .await
            .map_err(|e| anyhow!("{task} layout {index}: {e}"))
    }
    .await;
    let reply = reply?;
    let decision = match Decision::import(
        root_seed,
        &layout,
        reply.format,
        reply.text,
        None,
        image,
        env.viewport,
        source,
    ) {
        Ok(d) => d,
        Err(e) => return Ok(Recorded::Rejected(e)),
    };
    let check = run_trial(env, &decision, None).await?;
    Ok(if check.truth.achieved {
        Recorded::Kept(decision)
    } else {
        Recorded::Rejected(format!("failed on a clean page: {}", check.truth.detail))
    })
}
