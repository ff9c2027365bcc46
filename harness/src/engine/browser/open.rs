//! Opening a trial page: its browser context, its target, the watcher of its renderer
//! and its viewport.

use super::page::{Emulation, TrialPage};
use super::pool::SiteOrigins;
use crate::engine::cost::{Span, Stage, StageCosts};
use crate::engine::liveness::{guard, Liveness, Vital, VitalSender};
use anyhow::{anyhow, Result};
use chromiumoxide::cdp::browser_protocol::inspector;
use chromiumoxide::cdp::browser_protocol::target::{
    CreateBrowserContextParams, CreateTargetParams, EventTargetCrashed, EventTargetDestroyed,
};
use chromiumoxide::{Browser, Page};
use faultline_tasks::Size;
use futures::StreamExt;
use std::sync::Arc;
use std::time::Duration;

pub(super) async fn open_trial_page(
    browser: Arc<Browser>,
    alive: &Vital,
    liveness: Liveness,
    viewport: Size,
    origins: &SiteOrigins,
) -> Result<TrialPage> {
    let setup = Span::start(Stage::SetupAhead);
    let call = liveness.call();
    let context = guard(
        "creating a browser context",
        call,
        alive,
        None,
        browser.create_browser_context(CreateBrowserContextParams::default()),
    )
    .await?;
    let params = CreateTargetParams::builder()
        .url(origins.warm_url())
        .browser_context_id(context.clone())
        .build()
        .map_err(|e| anyhow!(e))?;
    let page = guard(
        "opening a page",
        liveness.page(),
        alive,
        None,
        browser.new_page(params),
    )
    .await?;
    // The page's own signal: its renderer crashed, or its target went away.
    let (dead, page_alive) = Vital::new();
    let watcher = watch_page(&browser, &page, dead, alive, call).await?;
    // The drawing region is set once the session knows its image (`Session::open`).
    let emulation = Emulation {
        size: viewport,
        shot: None,
    };
    let mut trial = TrialPage {
        browser,
        context: Some(context),
        page,
        viewport,
        captures: 0,
        browser_alive: alive.clone(),
        alive: page_alive,
        watcher,
        liveness,
        costs: StageCosts::default(),
        reuse: None,
        origin: origins.first().to_owned(),
        frozen: false,
        first_document_script: std::sync::Mutex::new(None),
        emulation: std::sync::Mutex::new(emulation),
    };
    trial.emulate("setting the viewport", emulation).await?;
    setup.end(&mut trial.costs);
    Ok(trial)
}

/// Starts the task that marks a page dead when its renderer crashes
/// (`Inspector.targetCrashed` on the page's session, `Target.targetCrashed` on the
/// browser's) or its target is destroyed while the harness still holds it.
async fn watch_page(
    browser: &Browser,
    page: &Page,
    dead: VitalSender,
    alive: &Vital,
    call: Duration,
) -> Result<tokio::task::JoinHandle<()>> {
    let mut inspector_crash = guard(
        "listening for renderer crashes",
        call,
        alive,
        None,
        page.event_listener::<inspector::EventTargetCrashed>(),
    )
    .await?;
    let mut target_crash = guard(
        "listening for renderer crashes",
        call,
        alive,
        None,
        browser.event_listener::<EventTargetCrashed>(),
    )
    .await?;
    let mut destroyed = guard(
        "listening for closed targets",
        call,
        alive,
        None,
        browser.event_listener::<EventTargetDestroyed>(),
    )
    .await?;
    guard(
        "enabling the Inspector domain",
        call,
        alive,
        None,
        page.execute(inspector::EnableParams::default()),
    )
    .await?;
    let id = page.target_id().clone();
    Ok(tokio::spawn(async move {
        loop {
            tokio::select! {
                Some(_) = inspector_crash.next() => {
                    dead.dead("the renderer crashed (Inspector.targetCrashed)");
                    return;
                }
                Some(ev) = target_crash.next() => if ev.target_id == id {
                    dead.dead(format!("the renderer crashed (Target.targetCrashed: {}, code {})", ev.status, ev.error_code));
                    return;
                },
                Some(ev) = destroyed.next() => if ev.target_id == id {
                    dead.dead("the page's target was destroyed");
                    return;
                },
                else => return,
            }
        }
    }))
}
