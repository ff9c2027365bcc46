//! The search task's page: a search form over a catalogue of records, and the results
//! page the server renders (and records) for a submitted query.

use super::SiteTask;
use crate::anomalies;
use crate::app::{scope_or_400, AppState};
use crate::ledger::Ledger;
use crate::pages::{esc, shell, Extras};
use crate::truth::Truth;
use axum::extract::{Path, Query, State};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use faultline_faults::site::PageMod;
use faultline_tasks::layout::{LayoutSpec, SearchLayout};
use faultline_tasks::{Layout, TaskKind};
use serde::Deserialize;

impl SiteTask for SearchLayout {
    const EVENTS: &'static [&'static str] = &["typed"];

    fn page(&self, scope: &str, layout: &Layout, mods: &[PageMod]) -> String {
        search_page(scope, layout, self, mods)
    }

    /// `/s/{scope}/search/results?q=..&layout=I&seed=S`: the results (records the
    /// submission).
    fn routes() -> Router<AppState> {
        Router::new().route("/s/{scope}/search/results", get(results))
    }

    /// The query the server received must be exactly the target, and its results page
    /// must have reached the browser whole.
    fn validate(&self, ledger: &Ledger) -> Truth {
        let s = self;
        match ledger.last_of_kind("submitted") {
            None => Truth::no("nothing was submitted".into()),
            Some(e) => {
                let q = e.data["query"].as_str().unwrap_or_default();
                // Results count as shown only if their response arrived whole.
                let cut = ledger
                    .events
                    .iter()
                    .any(|t| t.kind == "response_truncated" && t.seq > e.seq);
                if q != s.target {
                    Truth::no(format!("submitted {q:?}, expected {:?}", s.target))
                } else if cut {
                    Truth::no(format!(
                    "submitted {q:?}, but the results page was cut off before its results reached the browser"
                ))
                } else {
                    Truth::yes(format!("submitted {q:?}"))
                }
            }
        }
    }

    /// Typing needs no point: the field has focus when the page loads.
    fn locate_js(&self) -> Option<String> {
        None
    }
}

fn search_page(scope: &str, layout: &Layout, s: &SearchLayout, mods: &[PageMod]) -> String {
    let f = &s.field;
    let body = format!(
        r#"<h1>Record search</h1>
<p style="position:absolute; left:40px; top:70px; margin:0">The catalogue holds {n} records.</p>
<form id="search" action="/s/{scope}/search/results" method="get" autocomplete="off">
<label for="q" style="position:absolute; left:{x}px; top:{ly}px">Search records</label>
<input id="q" name="q" type="text" autofocus style="position:absolute; left:{x}px; top:{y}px; width:{w}px; height:{h}px; box-sizing:border-box; font-size:16px; padding:0 8px">
<input type="hidden" name="layout" value="{index}"><input type="hidden" name="seed" value="{seed}">
<button type="submit" style="position:absolute; left:{bx}px; top:{y}px; width:120px; height:{h}px">Search</button>
</form>"#,
        n = s.records.len(),
        x = f.x,
        y = f.y,
        ly = f.y - 22.0,
        w = f.width,
        h = f.height,
        bx = f.x + f.width + 12.0,
        index = layout.index,
        seed = layout.seed,
    );
    let script = r#"var q = document.getElementById('q');
q.focus();
q.addEventListener('input', function () { __fl.send('typed', { value: q.value }); });"#;
    let x = anomalies::extras(layout, mods);
    shell(scope, "Record search", "", &body, script, &x)
}

fn search_results(scope: &str, layout: &Layout, query: &str, results: &[String]) -> String {
    let items: String = results
        .iter()
        .map(|r| format!("<li>{}</li>", esc(r)))
        .collect();
    let list = if results.is_empty() {
        "<p>No records match.</p>".to_string()
    } else {
        format!("<ul>{items}</ul>")
    };
    let body = format!(
        r#"<h1>Search results</h1>
<form action="/s/{scope}/search/results" method="get" autocomplete="off" style="position:absolute; left:40px; top:80px">
<label for="q">Search records</label>
<input id="q" name="q" type="text" value="{q}" style="width:320px; height:36px; font-size:16px; padding:0 8px">
<input type="hidden" name="layout" value="{index}"><input type="hidden" name="seed" value="{seed}">
<button type="submit" style="height:36px">Search</button>
</form>
{marker} style="position:absolute; left:40px; top:150px">
<h2 style="font-size:20px; margin:0 0 8px">Results for &ldquo;{q}&rdquo;: {n}</h2>
{list}
</div>"#,
        marker = faultline_faults::RESULTS_MARKER,
        q = esc(query),
        n = results.len(),
        index = layout.index,
        seed = layout.seed,
    );
    shell(scope, "Search results", "", &body, "", &Extras::default())
}

#[derive(Debug, Deserialize)]
struct SearchQuery {
    #[serde(default)]
    q: String,
    layout: u32,
    seed: u64,
}

async fn results(
    State(state): State<AppState>,
    Path(scope): Path<String>,
    Query(q): Query<SearchQuery>,
) -> Response {
    let scope = match scope_or_400(&scope) {
        Ok(s) => s,
        Err(r) => return r.into_response(),
    };
    let layout = Layout::generate(TaskKind::Search, q.layout, q.seed);
    let LayoutSpec::Search(s) = &layout.spec else {
        unreachable!("search layouts are search specs")
    };
    let results: Vec<String> = if q.q.is_empty() {
        Vec::new()
    } else {
        s.records
            .iter()
            .filter(|r| r.contains(q.q.as_str()))
            .cloned()
            .collect()
    };
    // The server records the submission itself: the query as it arrived over HTTP.
    if let Err(refused) = state.store.append(
        &scope,
        "submitted",
        None,
        serde_json::json!({ "query": q.q, "results": results }),
    ) {
        return refused.response();
    }
    Html(search_results(scope.as_str(), &layout, &q.q, &results)).into_response()
}

#[cfg(test)]
mod tests {
    use crate::task::judge;
    use crate::task::tests::ledger;
    use faultline_tasks::{Layout, TaskKind};
    use serde_json::json;

    #[test]
    fn search_needs_the_exact_query() {
        let l = Layout::generate(TaskKind::Search, 0, 3);
        let t = l.target().to_string();
        assert!(judge(&l, &ledger(&[("submitted", json!({"query": t}))])).achieved);
        let leaked = format!("{t}<|im_end|>");
        assert!(!judge(&l, &ledger(&[("submitted", json!({"query": leaked}))])).achieved);
        assert!(!judge(&l, &ledger(&[("typed", json!({"value": t}))])).achieved);
    }

    #[test]
    fn search_needs_the_results_delivered() {
        let l = Layout::generate(TaskKind::Search, 0, 3);
        let t = l.target().to_string();
        let cut = ledger(&[
            ("submitted", json!({"query": t})),
            ("response_truncated", json!({"bytes_sent": 10})),
        ]);
        let v = judge(&l, &cut);
        assert!(!v.achieved && v.detail.contains("cut off"), "{}", v.detail);
    }
}
