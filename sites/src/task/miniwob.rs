//! The MiniWoB++ tasks' pages: the vendored MiniWoB++ files, served as they ship, with
//! faultline's script around each task page; the truth is MiniWoB's own reward.
//!
//! # The page
//!
//! `/s/{scope}/miniwob_<task>` serves the vendored `miniwob/<task>.html` with its `../core/`
//! and `../common/` links pointing at `/miniwob/...` (the vendored files, byte for byte),
//! the shared ledger script, the armed fault's page changes, and a harness script that
//! makes the page hygienic and starts the episode:
//!
//! - **Hygiene.** MiniWoB's HUD ("Last reward: ...", a countdown that rewrites the DOM
//!   every second, the episode counter), its click canvas (which draws every click and
//!   stamps `data-tampered` on the clicked element) and its black START cover (which
//!   returns after every episode) are never created: their `core` functions are replaced
//!   before the page's `onload` runs. An idle page and a click on blank space therefore
//!   change nothing, and no reward text ever reaches the page's DOM, so no observation or
//!   snapshot a policy sees can hold it.
//! - **Episode.** As the official environment does: raise `core.EPISODE_MAX_TIME` (so no
//!   timeout ends the episode; scoring uses the raw reward), `Math.seedrandom(seed)`,
//!   `core.setDataMode('train')`, `core.startEpisodeReal()`. The seed is passed as the
//!   string `"<u64>\0"`, the key seedrandom derives from a number (a bare digit string
//!   would be a repeating key).
//! - **Reward.** `core.endEpisode` keeps MiniWoB's bookkeeping (only the first terminal
//!   event counts; `WOB_RAW_REWARD_GLOBAL`, `WOB_REWARD_GLOBAL` with its time penalty,
//!   `WOB_DONE_GLOBAL`, `WOB_REWARD_REASON`, `WOB_EPISODE_ID`) without the display, and
//!   posts those values as one `miniwob_reward` event to the scope's ledger: the answer
//!   key reaches scoring through the same channel and barrier as every other page's.
//!
//! # Truth
//!
//! `done && raw == 1` is a success; `done && raw < 1` a failure (terminal: MiniWoB's
//! episode is over); no terminal event is an open episode, not achieved. The raw reward
//! is written into the truth's detail.

use super::{js_string, SiteTask};
use crate::anomalies;
use crate::app::AppState;
use crate::ledger::Ledger;
use crate::truth::Truth;
use axum::extract::Path;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use faultline_faults::site::PageMod;
use faultline_tasks::layout::MiniwobLayout;
use faultline_tasks::{Layout, MiniwobTask};

/// The vendored MiniWoB++ files (`sites/vendor/miniwob/`), by path under `/miniwob/`.
pub(crate) const FILES: &[(&str, &[u8])] = &[
    (
        "common/special/navigate-tree/images/ajax-loader.gif",
        include_bytes!("../../vendor/miniwob/common/special/navigate-tree/images/ajax-loader.gif"),
    ),
    (
        "common/special/navigate-tree/images/file.gif",
        include_bytes!("../../vendor/miniwob/common/special/navigate-tree/images/file.gif"),
    ),
    (
        "common/special/navigate-tree/images/folder-closed.gif",
        include_bytes!(
            "../../vendor/miniwob/common/special/navigate-tree/images/folder-closed.gif"
        ),
    ),
    (
        "common/special/navigate-tree/images/folder.gif",
        include_bytes!("../../vendor/miniwob/common/special/navigate-tree/images/folder.gif"),
    ),
    (
        "common/special/navigate-tree/images/minus.gif",
        include_bytes!("../../vendor/miniwob/common/special/navigate-tree/images/minus.gif"),
    ),
    (
        "common/special/navigate-tree/images/plus.gif",
        include_bytes!("../../vendor/miniwob/common/special/navigate-tree/images/plus.gif"),
    ),
    (
        "common/special/navigate-tree/images/treeview-black-line.gif",
        include_bytes!(
            "../../vendor/miniwob/common/special/navigate-tree/images/treeview-black-line.gif"
        ),
    ),
    (
        "common/special/navigate-tree/images/treeview-black.gif",
        include_bytes!(
            "../../vendor/miniwob/common/special/navigate-tree/images/treeview-black.gif"
        ),
    ),
    (
        "common/special/navigate-tree/images/treeview-default-line.gif",
        include_bytes!(
            "../../vendor/miniwob/common/special/navigate-tree/images/treeview-default-line.gif"
        ),
    ),
    (
        "common/special/navigate-tree/images/treeview-default.gif",
        include_bytes!(
            "../../vendor/miniwob/common/special/navigate-tree/images/treeview-default.gif"
        ),
    ),
    (
        "common/special/navigate-tree/images/treeview-famfamfam-line.gif",
        include_bytes!(
            "../../vendor/miniwob/common/special/navigate-tree/images/treeview-famfamfam-line.gif"
        ),
    ),
    (
        "common/special/navigate-tree/images/treeview-famfamfam.gif",
        include_bytes!(
            "../../vendor/miniwob/common/special/navigate-tree/images/treeview-famfamfam.gif"
        ),
    ),
    (
        "common/special/navigate-tree/images/treeview-gray-line.gif",
        include_bytes!(
            "../../vendor/miniwob/common/special/navigate-tree/images/treeview-gray-line.gif"
        ),
    ),
    (
        "common/special/navigate-tree/images/treeview-gray.gif",
        include_bytes!(
            "../../vendor/miniwob/common/special/navigate-tree/images/treeview-gray.gif"
        ),
    ),
    (
        "common/special/navigate-tree/images/treeview-red-line.gif",
        include_bytes!(
            "../../vendor/miniwob/common/special/navigate-tree/images/treeview-red-line.gif"
        ),
    ),
    (
        "common/special/navigate-tree/images/treeview-red.gif",
        include_bytes!("../../vendor/miniwob/common/special/navigate-tree/images/treeview-red.gif"),
    ),
    (
        "common/special/navigate-tree/jquery.treeview.css",
        include_bytes!("../../vendor/miniwob/common/special/navigate-tree/jquery.treeview.css"),
    ),
    (
        "common/special/navigate-tree/jquery.treeview.min.js",
        include_bytes!("../../vendor/miniwob/common/special/navigate-tree/jquery.treeview.min.js"),
    ),
    (
        "common/special/search-engine/jquery.twbsPagination.min.js",
        include_bytes!(
            "../../vendor/miniwob/common/special/search-engine/jquery.twbsPagination.min.js"
        ),
    ),
    (
        "common/ui_utils.js",
        include_bytes!("../../vendor/miniwob/common/ui_utils.js"),
    ),
    (
        "core/core.css",
        include_bytes!("../../vendor/miniwob/core/core.css"),
    ),
    (
        "core/core.js",
        include_bytes!("../../vendor/miniwob/core/core.js"),
    ),
    (
        "core/d3.v3.min.js",
        include_bytes!("../../vendor/miniwob/core/d3.v3.min.js"),
    ),
    (
        "core/jquery-ui-hacks.js",
        include_bytes!("../../vendor/miniwob/core/jquery-ui-hacks.js"),
    ),
    (
        "core/jquery-ui/external/jquery/jquery.js",
        include_bytes!("../../vendor/miniwob/core/jquery-ui/external/jquery/jquery.js"),
    ),
    (
        "core/jquery-ui/images/ui-icons_444444_256x240.png",
        include_bytes!("../../vendor/miniwob/core/jquery-ui/images/ui-icons_444444_256x240.png"),
    ),
    (
        "core/jquery-ui/images/ui-icons_555555_256x240.png",
        include_bytes!("../../vendor/miniwob/core/jquery-ui/images/ui-icons_555555_256x240.png"),
    ),
    (
        "core/jquery-ui/images/ui-icons_777620_256x240.png",
        include_bytes!("../../vendor/miniwob/core/jquery-ui/images/ui-icons_777620_256x240.png"),
    ),
    (
        "core/jquery-ui/images/ui-icons_777777_256x240.png",
        include_bytes!("../../vendor/miniwob/core/jquery-ui/images/ui-icons_777777_256x240.png"),
    ),
    (
        "core/jquery-ui/images/ui-icons_cc0000_256x240.png",
        include_bytes!("../../vendor/miniwob/core/jquery-ui/images/ui-icons_cc0000_256x240.png"),
    ),
    (
        "core/jquery-ui/images/ui-icons_ffffff_256x240.png",
        include_bytes!("../../vendor/miniwob/core/jquery-ui/images/ui-icons_ffffff_256x240.png"),
    ),
    (
        "core/jquery-ui/jquery-ui.min.css",
        include_bytes!("../../vendor/miniwob/core/jquery-ui/jquery-ui.min.css"),
    ),
    (
        "core/jquery-ui/jquery-ui.min.js",
        include_bytes!("../../vendor/miniwob/core/jquery-ui/jquery-ui.min.js"),
    ),
    (
        "miniwob/choose-list.html",
        include_bytes!("../../vendor/miniwob/miniwob/choose-list.html"),
    ),
    (
        "miniwob/click-button.html",
        include_bytes!("../../vendor/miniwob/miniwob/click-button.html"),
    ),
    (
        "miniwob/click-checkboxes.html",
        include_bytes!("../../vendor/miniwob/miniwob/click-checkboxes.html"),
    ),
    (
        "miniwob/click-collapsible.html",
        include_bytes!("../../vendor/miniwob/miniwob/click-collapsible.html"),
    ),
    (
        "miniwob/click-dialog.html",
        include_bytes!("../../vendor/miniwob/miniwob/click-dialog.html"),
    ),
    (
        "miniwob/click-link.html",
        include_bytes!("../../vendor/miniwob/miniwob/click-link.html"),
    ),
    (
        "miniwob/click-tab.html",
        include_bytes!("../../vendor/miniwob/miniwob/click-tab.html"),
    ),
    (
        "miniwob/click-widget.html",
        include_bytes!("../../vendor/miniwob/miniwob/click-widget.html"),
    ),
    (
        "miniwob/enter-text.html",
        include_bytes!("../../vendor/miniwob/miniwob/enter-text.html"),
    ),
    (
        "miniwob/focus-text.html",
        include_bytes!("../../vendor/miniwob/miniwob/focus-text.html"),
    ),
    (
        "miniwob/login-user-popup.html",
        include_bytes!("../../vendor/miniwob/miniwob/login-user-popup.html"),
    ),
    (
        "miniwob/login-user.html",
        include_bytes!("../../vendor/miniwob/miniwob/login-user.html"),
    ),
    (
        "miniwob/navigate-tree.html",
        include_bytes!("../../vendor/miniwob/miniwob/navigate-tree.html"),
    ),
    (
        "miniwob/search-engine.html",
        include_bytes!("../../vendor/miniwob/miniwob/search-engine.html"),
    ),
    (
        "miniwob/use-autocomplete.html",
        include_bytes!("../../vendor/miniwob/miniwob/use-autocomplete.html"),
    ),
];

/// The ledger event the page sends when MiniWoB ends the episode.
const REWARD_EVENT: &str = "miniwob_reward";

/// The vendored file at `path`, if it is one.
pub(crate) fn file(path: &str) -> Option<&'static [u8]> {
    FILES.iter().find(|(p, _)| *p == path).map(|(_, b)| *b)
}

/// `GET /miniwob/{*path}`: a vendored file as it ships.
async fn vendored(Path(path): Path<String>) -> Response {
    let Some(bytes) = file(&path) else {
        return (StatusCode::NOT_FOUND, "no such MiniWoB++ file").into_response();
    };
    let kind = match path.rsplit('.').next() {
        Some("js") => "application/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("png") => "image/png",
        Some("gif") => "image/gif",
        Some("html") => "text/html; charset=utf-8",
        _ => "application/octet-stream",
    };
    ([(header::CONTENT_TYPE, kind)], bytes).into_response()
}

/// The harness script: hygiene, the seeded episode start and the reward's way to the
/// ledger (see the module docs). `{SEED}` is replaced by the seed's JS string literal.
const HARNESS_JS: &str = r#"(function () {
  // Hygiene: no HUD, no countdown, no click canvas (nor its data-tampered stamps), no
  // START cover. Nothing of these ever enters the document.
  var noop = function () {};
  core.createDisplay = noop;
  core.reloadDisplay = noop;
  core.updateDisplay = noop;
  core.hideDisplay = noop;
  core.countdownTimer = noop;
  core.clearTimer = noop;
  core.canvasClear = noop;
  core.canvasDrawClick = noop;
  core.canvasDrawElementClick = noop;
  core.cover_div = { style: {} };
  // The reward: MiniWoB's bookkeeping without the display; only the first terminal
  // event of the episode counts. It goes to the ledger, never into the page.
  core.endEpisode = function (reward, time_proportional, reason) {
    if (core.EP_TIMER === null) { return; }
    clearTimeout(core.EP_TIMER);
    core.EP_TIMER = null;
    WOB_RAW_REWARD_GLOBAL = reward;
    WOB_REWARD_REASON = reason;
    if (time_proportional) {
      reward = reward * Math.max(0, 1.0 - (new Date().getTime() - core.ept0) / core.EPISODE_MAX_TIME);
    }
    WOB_REWARD_GLOBAL = reward;
    WOB_DONE_GLOBAL = true;
    WOB_EPISODE_ID++;
    __fl.send('miniwob_reward', {
      done: WOB_DONE_GLOBAL, raw: WOB_RAW_REWARD_GLOBAL, reward: WOB_REWARD_GLOBAL,
      reason: WOB_REWARD_REASON == null ? null : String(WOB_REWARD_REASON), episode: WOB_EPISODE_ID
    });
  };
  // One seeded episode, started by the page's own onload; no second START after it ends.
  var started = false;
  core.startEpisode = function () {
    if (started) { return; }
    started = true;
    core.EPISODE_MAX_TIME = 24 * 3600 * 1000;
    Math.seedrandom({SEED});
    core.setDataMode('train');
    core.startEpisodeReal();
  };
})();
"#;

/// `layout`'s MiniWoB++ page `name` under `scope`, with the page changes in `mods`.
fn miniwob_page(name: &str, seed: u64, scope: &str, layout: &Layout, mods: &[PageMod]) -> String {
    let path = format!("miniwob/{name}.html");
    let original = std::str::from_utf8(file(&path).expect("every MiniWoB task's page is vendored"))
        .expect("MiniWoB pages are UTF-8");
    let body = original
        .split_once('\n')
        .map(|(doctype, rest)| {
            debug_assert!(doctype.eq_ignore_ascii_case("<!DOCTYPE html>"));
            rest
        })
        .unwrap_or(original)
        .replace("\"../core/", "\"/miniwob/core/")
        .replace("\"../common/", "\"/miniwob/common/");
    let x = anomalies::extras(layout, mods);
    let head = format!(
        "<head>\n<meta charset=\"utf-8\">\n<meta name=\"fl-scope\" content=\"{scope}\">\n<script src=\"/static/ledger.js\"></script>"
    );
    let head_end = format!("<style>\n{}\n</style>\n{}\n</head>", x.style, x.head);
    // The seed as seedrandom keys a number: its decimal digits and a NUL.
    let seed_js = js_string(&format!("{seed}\u{0}"));
    let script = HARNESS_JS.replace("{SEED}", &seed_js);
    let xscript = if x.script.is_empty() {
        String::new()
    } else {
        format!("<script>\n{}\n</script>\n", x.script)
    };
    let body_end = format!("{}\n<script>\n{script}</script>\n{xscript}</body>", x.body);
    format!(
        "<!doctype html>\n{}",
        body.replacen("<head>", &head, 1)
            .replacen("</head>", &head_end, 1)
            .replacen("</body>", &body_end, 1)
    )
}

/// MiniWoB's verdict, from the first `miniwob_reward` event.
fn reward_truth(ledger: &Ledger) -> Truth {
    let Some(e) = ledger.events.iter().find(|e| e.kind == REWARD_EVENT) else {
        return Truth::no("open: MiniWoB ended no episode (no terminal event)".into());
    };
    let done = e.data["done"].as_bool().unwrap_or(false);
    let raw = e.data["raw"].as_f64().unwrap_or(f64::NAN);
    let reward = e.data["reward"].as_f64().unwrap_or(f64::NAN);
    let reason = e.data["reason"]
        .as_str()
        .map(|r| format!(", reason: {r}"))
        .unwrap_or_default();
    let words = format!("MiniWoB raw reward {raw} (reward {reward:.3}{reason})");
    if done && raw == 1.0 {
        Truth::yes(words)
    } else if done {
        Truth::no(format!("{words}: terminal failure"))
    } else {
        Truth::no(format!("open: {words} without done"))
    }
}

/// The oracle's plan for a MiniWoB task page: a script that evaluates to the steps an
/// ideal agent takes next, read from the page's `#query` and the boxes of its elements:
/// `[["click", x, y], ["type", text], ["press", key], ["wait", ms], ...]` (viewport
/// coordinates), or `null`. A plan that ends in `["then"]` is a first part: the oracle
/// takes those steps on its scratch page and asks the plan again of the page they leave
/// (a menu that opened, a folder that expanded, a popup MiniWoB raised). Waits are steps
/// of the decision, so a replay waits as the oracle did.
fn plan_js(steps: &str) -> String {
    format!(
        "(() => {{ const q = (document.getElementById('query').textContent || '').replace(/\\s+/g, ' ').trim();
  const at = (e) => {{ if (!e) return null; const r = e.getBoundingClientRect(); return (r.width > 0 && r.height > 0) ? ['click', r.left + r.width / 2, r.top + r.height / 2] : null; }};
  const atFirstLine = (e) => {{ if (!e) return null; const r = e.getClientRects()[0]; return (r && r.width > 0 && r.height > 0) ? ['click', r.left + r.width / 2, r.top + r.height / 2] : null; }};
  const shown = (e) => !!e && e.getClientRects().length > 0 && getComputedStyle(e).visibility !== 'hidden';
  const then = ['then'];
  const quoted = (q.match(/\"([^\"]*)\"/g) || []).map((s) => s.slice(1, -1));
  const steps = (() => {{ {steps} }})();
  return (steps && steps.every((s) => s !== null)) ? steps : null; }})()"
    )
}

/// The first click of a plan, as the oracle's locate script (`[x, y]` or `null`).
fn locate_from_plan(plan: &str) -> String {
    format!("(() => {{ const p = {plan}; const c = p && p.find((s) => s[0] === 'click'); return c ? [c[1], c[2]] : null; }})()")
}

/// The site pieces of every MiniWoB++ task: the vendored page, MiniWoB's reward as the
/// truth, and the task's plan ([`plan`]) as the oracle.
impl SiteTask for MiniwobLayout {
    const EVENTS: &'static [&'static str] = &[REWARD_EVENT];

    fn page(&self, scope: &str, layout: &Layout, mods: &[PageMod]) -> String {
        miniwob_page(self.task.name(), self.episode_seed, scope, layout, mods)
    }

    fn routes() -> Router<AppState> {
        Router::new().route("/miniwob/{*path}", get(vendored))
    }

    fn validate(&self, ledger: &Ledger) -> Truth {
        reward_truth(ledger)
    }

    fn locate_js(&self) -> Option<String> {
        Some(locate_from_plan(&task_plan_js(self.task)))
    }
}

/// The oracle's whole plan for a layout of `task` (see [`super::plan_script`]).
pub(super) fn task_plan_js(task: MiniwobTask) -> String {
    plan_js(plan(task))
}

/// Each suite task's plan: the body of [`plan_js`]'s steps function, which reads the
/// page's `#query` (`q`, its `quoted` strings) and returns the next steps.
fn plan(task: MiniwobTask) -> &'static str {
    match task {
        // click-tab: "Click on Tab #2." -> the tab anchor with that text.
        MiniwobTask::ClickTab => "const m = q.match(/Tab #(\\d+)/); if (!m) return null;
     const a = Array.from(document.querySelectorAll('#area ul a')).find((e) => e.textContent.trim() === 'Tab #' + m[1]);
     return [at(a)];",
        // click-dialog: "Close the dialog box by clicking the \"x\"." -> the dialog's close button.
        MiniwobTask::ClickDialog => "return [at(document.querySelector('.ui-dialog .ui-dialog-titlebar-close'))];",
        // enter-text: "Enter \"Name\" into the text field and press Submit."
        MiniwobTask::EnterText => "if (quoted.length < 1) return null;
     return [at(document.getElementById('tt')), ['type', quoted[0]], at(document.getElementById('subbtn'))];",
        // login-user: "Enter the username \"u\" and the password \"p\" into the text fields and press login."
        MiniwobTask::LoginUser => "if (quoted.length < 2) return null;
     return [at(document.getElementById('username')), ['type', quoted[0]],
             at(document.getElementById('password')), ['type', quoted[1]],
             at(document.getElementById('subbtn'))];",

        // click-button: "Click on the \"Okay\" button." -> the first button with that text.
        MiniwobTask::ClickButton => "if (quoted.length < 1) return null;
     const b = Array.from(document.querySelectorAll('#area button')).find((e) => e.textContent === quoted[0]);
     return [at(b)];",
        // click-link: "Click on the link \"word\"." -> the first link span with that text (the
        // box of its first line: a span can wrap).
        MiniwobTask::ClickLink => "if (quoted.length < 1) return null;
     const a = Array.from(document.querySelectorAll('#area .alink')).find((e) => e.textContent === quoted[0]);
     return [atFirstLine(a)];",
        // click-checkboxes: "Select a, b and click Submit." (or "Select nothing ...") -> every
        // named box, then Submit.
        MiniwobTask::ClickCheckboxes => "const m = q.match(/^Select (.*) and click Submit\\.$/); if (!m) return null;
     const want = m[1] === 'nothing' ? [] : m[1].split(', ');
     const steps = [];
     for (const label of document.querySelectorAll('#boxes label')) {
       const box = label.querySelector('input');
       if (want.includes(label.textContent.trim()) !== box.checked) steps.push(at(box));
     }
     steps.push(at(document.getElementById('subbtn')));
     return steps;",
        // focus-text: "Focus into the textbox." -> the box, wherever the seed put it.
        MiniwobTask::FocusText => "return [at(document.getElementById('tt'))];",
        // login-user-popup: login-user, except that focusing a field may raise MiniWoB's
        // session popup (which disables the form); Cancel dismisses it, OK fails the episode.
        // One step at a time, each planned on the page the last one left.
        MiniwobTask::LoginUserPopup => "if (quoted.length < 2) return null;
     const popup = document.getElementById('popup');
     if (shown(popup)) return [at(document.getElementById('popup-cancel')), then];
     const u = document.getElementById('username'), p = document.getElementById('password');
     for (const [field, want] of [[u, quoted[0]], [p, quoted[1]]]) {
       if (field.value === want) continue;
       if (document.activeElement !== field) return [at(field), then];
       return [['type', want], then];
     }
     return [at(document.getElementById('subbtn'))];",
        // choose-list: "Select X from the list and click Submit." -> open the native select,
        // arrow from the current option to X, Enter, Submit.
        MiniwobTask::ChooseList => "const m = q.match(/^Select (.*) from the list and click Submit\\.$/); if (!m) return null;
     const sel = document.getElementById('options'); if (!sel) return null;
     const names = Array.from(sel.options).map((o) => o.textContent);
     const to = names.indexOf(m[1]); if (to < 0) return null;
     const from = sel.selectedIndex;
     const key = to > from ? 'ArrowDown' : 'ArrowUp';
     const steps = [at(sel)];
     for (let i = 0; i < Math.abs(to - from); i++) steps.push(['press', key]);
     steps.push(['press', 'Enter']);
     steps.push(at(document.querySelector('#area button')));
     return steps;",
        // use-autocomplete: "Enter an item that starts with \"f\" (and ends with \"e\")." -> type
        // the start, wait for the menu (jQuery UI's 300 ms delay), pick the matching item,
        // Submit.
        MiniwobTask::UseAutocomplete => "if (quoted.length < 1) return null;
     const [f, e] = [quoted[0], quoted[1]];
     const input = document.getElementById('tags');
     const items = Array.from(document.querySelectorAll('.ui-autocomplete .ui-menu-item')).filter(shown);
     if (items.length === 0) {
       if (input.value !== '') return null;
       return [at(input), ['type', f], ['wait', 600], then];
     }
     const item = items.find((i) => i.textContent.startsWith(f) && (e === undefined || i.textContent.endsWith(e)));
     return [at(item), at(document.getElementById('subbtn'))];",
        // navigate-tree: "... click on the folder or file named \"Name\"." -> open the outermost
        // closed folder above the first item of that name until the item shows, then click it.
        MiniwobTask::NavigateTree => "if (quoted.length < 1) return null;
     const spans = Array.from(document.querySelectorAll('#tree span')).filter((s) => s.textContent === quoted[0]);
     if (spans.length === 0) return null;
     const visible = spans.find(shown);
     if (visible) return [at(visible)];
     const folders = [];
     for (let li = spans[0].parentElement.parentElement.closest('li'); li; li = li.parentElement.closest('li')) folders.unshift(li);
     const closed = folders.find((li) => !shown(li.querySelector(':scope > ul')));
     if (!closed) return null;
     return [at(closed.querySelector(':scope > span')), then];",
        // click-widget: "Click on a \"kind\" widget." -> the first control of that kind.
        MiniwobTask::ClickWidget => "if (quoted.length < 1) return null;
     return [at(document.querySelector('#area [data-type=\"' + quoted[0] + '\"]'))];",
        // search-engine: type the name, click Search (Enter does not search: the button is not
        // in a form), go to the results page that holds the n-th result (3 per page), click it.
        MiniwobTask::SearchEngine => "if (quoted.length < 1) return null;
     const m = q.match(/click the (\\d+)(st|nd|rd|th) search result/); if (!m) return null;
     const n = Number(m[1]);
     const box = document.getElementById('search-text');
     const links = Array.from(document.querySelectorAll('#page-content a.search-title'));
     if (links.length === 0 || box.value !== quoted[0]) {
       if (box.value !== '') return null;
       return [at(box), ['type', quoted[0]], at(document.getElementById('search')), then];
     }
     const hit = links.find((a) => a.getAttribute('data-result') === String(n - 1));
     if (hit) return [at(hit)];
     const page = String(Math.ceil(n / 3));
     const next = Array.from(document.querySelectorAll('#pagination a')).find((a) => a.textContent.trim() === page);
     return [at(next), then];",
        // click-collapsible: "Expand the section below and click submit." -> the header, the
        // accordion's 400 ms animation, then Submit where the animation left it.
        MiniwobTask::ClickCollapsible => "const content = document.querySelector('#area .ui-accordion-content');
     if (!content) return null;
     if (!shown(content)) return [at(document.querySelector('#area h3')), ['wait', 700], then];
     return [at(document.getElementById('subbtn'))];",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::tests::ledger;
    use serde_json::json;
    use sha2::{Digest, Sha256};

    /// Every vendored file matches the manifest's SHA-256, and the manifest lists exactly
    /// the vendored files (plus the licences and notice).
    #[test]
    fn vendored_files_match_the_manifest() {
        let manifest = include_str!("../../vendor/miniwob/MANIFEST.sha256");
        let mut listed = Vec::new();
        for line in manifest.lines() {
            let (hash, path) = line.split_once("  ").expect("sha256sum format");
            listed.push(path);
            let bytes = match path {
                "LICENSE" => include_bytes!("../../vendor/miniwob/LICENSE").as_slice(),
                "NOTICE" => include_bytes!("../../vendor/miniwob/NOTICE").as_slice(),
                "LICENSE-Apache-2.0" => {
                    include_bytes!("../../vendor/miniwob/LICENSE-Apache-2.0").as_slice()
                }
                p => file(p).unwrap_or_else(|| panic!("{p} is listed but not served")),
            };
            assert_eq!(hex::encode(Sha256::digest(bytes)), hash, "{path}");
        }
        for (p, _) in FILES {
            assert!(listed.contains(p), "{p} is served but not in the manifest");
        }
    }

    #[test]
    fn the_reward_decides_and_only_the_first_terminal_event_counts() {
        let ok = json!({"done": true, "raw": 1.0, "reward": 0.93, "reason": null});
        let bad = json!({"done": true, "raw": -1.0, "reward": -1.0, "reason": null});
        assert!(reward_truth(&ledger(&[("miniwob_reward", ok.clone())])).achieved);
        let t = reward_truth(&ledger(&[("miniwob_reward", bad.clone())]));
        assert!(
            !t.achieved && t.detail.contains("raw reward -1"),
            "{}",
            t.detail
        );
        assert!(
            !reward_truth(&ledger(&[("miniwob_reward", bad), ("miniwob_reward", ok)])).achieved
        );
        let partial = json!({"done": true, "raw": 0.5, "reward": 0.4});
        assert!(!reward_truth(&ledger(&[("miniwob_reward", partial)])).achieved);
        let open = reward_truth(&ledger(&[("click", json!({}))]));
        assert!(!open.achieved && open.detail.starts_with("open"));
    }

    #[test]
    fn pages_link_only_vendored_files_and_carry_the_seed_as_a_number_key() {
        for task in faultline_tasks::TaskKind::MINIWOB {
            let layout = Layout::generate(task, 0, 7);
            let html = super::super::page("t", &layout, &[]);
            assert!(!html.contains("../core/") && !html.contains("../common/"));
            for link in html.split("\"/miniwob/").skip(1) {
                let path = link.split('"').next().unwrap();
                assert!(file(path).is_some(), "{task}: {path} is not vendored");
            }
            assert!(
                html.contains("\\u0000\")"),
                "{task}: the seed must end in NUL"
            );
            assert!(!html.contains("Last reward"), "{task}");
        }
    }
}
