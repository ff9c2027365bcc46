//! The form task's page: a notes form whose Save button writes through the server with
//! an idempotency key, and the write itself.

use super::SiteTask;
use crate::anomalies;
use crate::app::{bad_request, scope_or_400, AppState};
use crate::ledger::Ledger;
use crate::pages::{esc, shell};
use crate::truth::Truth;
use axum::extract::{Path, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use faultline_faults::site::PageMod;
use faultline_tasks::layout::FormLayout;
use faultline_tasks::Layout;
use serde::Deserialize;

impl SiteTask for FormLayout {
    /// The page sends no events of its own: the server records every write.
    const EVENTS: &'static [&'static str] = &[];

    fn page(&self, scope: &str, layout: &Layout, mods: &[PageMod]) -> String {
        form_page(scope, layout, self, mods)
    }

    /// `POST /s/{scope}/form/save` (the idempotent write) and `/s/{scope}/static/save.png`.
    fn routes() -> Router<AppState> {
        Router::new()
            .route("/s/{scope}/form/save", post(form_save))
            .route("/s/{scope}/static/save.png", get(save_png))
    }

    /// Exactly one committed write, of the target.
    fn validate(&self, ledger: &Ledger) -> Truth {
        let f = self;
        let committed: Vec<&str> = ledger
            .of_kind("write")
            .filter(|e| e.data["committed"] == true)
            .filter_map(|e| e.data["text"].as_str())
            .collect();
        let mine = committed.iter().filter(|t| **t == f.target).count();
        let keys: Vec<&str> = ledger
            .of_kind("write")
            .filter_map(|e| e.data["key"].as_str())
            .collect();
        match (mine, committed.len()) {
            (1, 1) => Truth::yes(format!("saved {:?} once", f.target)),
            (0, 0) => Truth::no(format!(
                "no write was committed ({} request(s) reached the server)",
                keys.len()
            )),
            (0, _) => Truth::no(format!("saved {:?}, expected {:?}", committed[0], f.target)),
            (n, _) => Truth::no(format!(
                "saved {:?} {n} times (idempotency keys {})",
                f.target,
                keys.join(", ")
            )),
        }
    }

    /// The Save button (`#save`, as [`form_page`] writes it).
    fn locate_js(&self) -> Option<String> {
        Some("(() => { const b = document.getElementById('save'); if (!b) return null; const r = b.getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; })()".to_string())
    }
}

/// The Save icon (16x16 PNG).
pub(super) const SAVE_PNG: &[u8] = include_bytes!("../../assets/save.png");

fn form_page(scope: &str, layout: &Layout, f: &FormLayout, mods: &[PageMod]) -> String {
    let existing: String = f
        .existing
        .iter()
        .map(|n| format!("<li>{}</li>", esc(n)))
        .collect();
    let disabled = mods.iter().any(|m| matches!(m, PageMod::Disabled));
    let body = format!(
        r#"<h1>Notes</h1>
<label for="note" style="position:absolute; left:{x}px; top:{ly}px">New note</label>
<input id="note" name="note" type="text" autofocus autocomplete="off" style="position:absolute; left:{x}px; top:{y}px; width:{w}px; height:{h}px; box-sizing:border-box; font-size:16px; padding:0 8px">
<button id="save" type="button"{dis} style="position:absolute; left:{sx}px; top:{y}px; width:{sw}px; height:{h}px; font-size:15px"><img src="/s/{scope}/static/save.png" alt="" width="16" height="16" style="vertical-align:-3px; margin-right:6px">Save</button>
<p id="status" role="status" style="position:absolute; left:{x}px; top:{sy}px; margin:0; min-height:20px"></p>
<div style="position:absolute; left:40px; top:{ny}px; width:520px">
<h2 style="font-size:19px; margin:0 0 6px">Saved notes</h2>
<ul id="notes" style="margin:0; padding-left:22px">{existing}</ul>
</div>"#,
        x = f.field.x,
        y = f.field.y,
        ly = f.field.y - 22.0,
        w = f.field.width,
        h = f.field.height,
        sx = f.save.x,
        sw = f.save.width,
        sy = f.field.y + f.field.height + 10.0,
        ny = f.field.y + f.field.height + 48.0,
        dis = if disabled { " disabled" } else { "" },
    );
    // The idempotency key lives on the button and is minted once per page load: a second
    // click with the same key is the same write, deduplicated by the server.
    let script = r#"var note = document.getElementById('note');
var save = document.getElementById('save');
var statusLine = document.getElementById('status');
var list = document.getElementById('notes');
function newKey() { return 'k-' + Math.random().toString(36).slice(2) + Date.now().toString(36); }
save.dataset.key = newKey();
note.focus();
function listNote(text) { var li = document.createElement('li'); li.textContent = text; list.appendChild(li); return li; }
save.addEventListener('click', function () {
  var text = note.value.trim();
  if (!text) { statusLine.textContent = 'Type a note first.'; return; }
  statusLine.textContent = 'Saving\u2026';
  fetch('/s/' + __fl.scope + '/form/save', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: text, key: save.dataset.key }) })
    .then(function (r) {
      if (r.status === 401) { location.href = '/s/' + __fl.scope + '/login'; return; }
      return r.json().catch(function () { return {}; }).then(function (j) {
        if (r.ok) { if (!j.duplicate) { listNote(text); } statusLine.textContent = 'Saved.'; }
        else if (r.status === 429) { statusLine.textContent = 'Too many requests: try again in ' + (r.headers.get('Retry-After') || 'a few') + ' s.'; }
        else { statusLine.textContent = 'Could not save the note (error ' + r.status + ').'; }
      });
    })
    .catch(function () { statusLine.textContent = 'Could not reach the server.'; });
});"#;
    let x = anomalies::extras(layout, mods);
    shell(scope, "Notes", "", &body, script, &x)
}

#[derive(Debug, Deserialize)]
struct SaveRequest {
    text: String,
    key: String,
}

/// The notes form's write. The idempotency key makes a repeated request the same write:
/// the ledger records every request, committed or deduplicated, with its key.
async fn form_save(
    State(state): State<AppState>,
    Path(scope): Path<String>,
    Json(req): Json<SaveRequest>,
) -> Response {
    let scope = match scope_or_400(&scope) {
        Ok(s) => s,
        Err(r) => return r.into_response(),
    };
    if req.text.trim().is_empty() || req.key.is_empty() {
        return bad_request("text and key: expected non-empty strings");
    }
    let duplicate = state
        .store
        .any(scope.as_str(), "write", |e| e.data["key"] == req.key);
    if let Err(refused) = state.store.append(
        &scope,
        "write",
        None,
        serde_json::json!({ "text": req.text, "key": req.key, "committed": !duplicate }),
    ) {
        return refused.response();
    }
    Json(serde_json::json!({ "ok": true, "duplicate": duplicate })).into_response()
}

async fn save_png() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "image/png")], SAVE_PNG)
}

#[cfg(test)]
mod tests {
    use crate::task::judge;
    use crate::task::tests::ledger;
    use faultline_tasks::{Layout, TaskKind};
    use serde_json::json;

    #[test]
    fn form_needs_exactly_one_committed_write() {
        let l = Layout::generate(TaskKind::Form, 0, 3);
        let t = l.target().to_string();
        let w = |key: &str, committed: bool| {
            (
                "write",
                json!({"text": t, "key": key, "committed": committed}),
            )
        };
        assert!(judge(&l, &ledger(&[w("a", true)])).achieved);
        assert!(
            judge(&l, &ledger(&[w("a", true), w("a", false)])).achieved,
            "a deduplicated retry is fine"
        );
        let twice = judge(&l, &ledger(&[w("a", true), w("b", true)]));
        assert!(
            !twice.achieved && twice.detail.contains("2 times"),
            "{}",
            twice.detail
        );
        assert!(!judge(&l, &ledger(&[])).achieved);
    }
}
