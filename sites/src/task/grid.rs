//! The grid task's page: numbered buttons positioned by a per-layout stylesheet, with a
//! click handler served as a separate script (both are resources a fault can refuse or
//! delay).

use super::{js_string, SiteTask};
use crate::anomalies;
use crate::app::{AppState, LayoutQuery};
use crate::ledger::Ledger;
use crate::pages::{esc, layout_query, shell};
use crate::truth::Truth;
use axum::extract::Query;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use faultline_faults::site::PageMod;
use faultline_tasks::layout::{GridLayout, LayoutSpec};
use faultline_tasks::{Layout, TaskKind};

impl SiteTask for GridLayout {
    const EVENTS: &'static [&'static str] = &["selected"];

    fn page(&self, scope: &str, layout: &Layout, mods: &[PageMod]) -> String {
        grid_page(scope, layout, self, mods)
    }

    /// `/s/{scope}/static/grid.js` and `grid.css?layout=I&seed=S`.
    fn routes() -> Router<AppState> {
        Router::new()
            .route("/s/{scope}/static/grid.js", get(grid_js))
            .route("/s/{scope}/static/grid.css", get(grid_css_route))
    }

    /// Identity, not label: the page reports which item its handler selected.
    fn validate(&self, ledger: &Ledger) -> Truth {
        let g = self;
        let decoy = if ledger.last_of_kind("decoy_opened").is_some() {
            "; a decoy page was opened"
        } else {
            ""
        };
        // Identity, not label: the page reports which item its handler selected.
        match ledger.last_of_kind("selected") {
            Some(e) => {
                let id = e.data["id"].as_str().unwrap_or_default();
                if id == g.target {
                    Truth::yes(format!("clicked {id}"))
                } else {
                    Truth::no(format!("clicked {id}, expected {}{decoy}", g.target))
                }
            }
            None => match ledger.last_of_kind("click") {
                None => Truth::no(format!("no click reached the page{decoy}")),
                Some(e) => {
                    let (x, y) = (e.data["x"].as_f64(), e.data["y"].as_f64());
                    match e.data["target"].as_str() {
                        None => Truth::no(format!(
                            "clicked blank space at ({}, {}), expected {}{decoy}",
                            x.unwrap_or(f64::NAN),
                            y.unwrap_or(f64::NAN),
                            g.target
                        )),
                        Some(t) => Truth::no(format!(
                            "clicked {t}, which selected nothing; expected {}{decoy}",
                            g.target
                        )),
                    }
                }
            },
        }
    }

    /// The button whose text is the target (on a clean page, the items [`grid_page`]
    /// writes are its only buttons).
    fn locate_js(&self) -> Option<String> {
        let target = js_string(&self.target);
        Some(format!(
            "(() => {{ const b = Array.from(document.querySelectorAll('button')).find((e) => e.textContent.trim() === {target});
               if (!b) return null; const r = b.getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; }})()"
        ))
    }
}

/// The grid's click handler, served from `/s/{scope}/static/grid.js` (a resource the
/// script-blocking fault can refuse).
pub(super) const GRID_JS: &str = r#"(function () {
  document.addEventListener('click', function (e) {
    var b = e.target.closest ? e.target.closest('button.item') : null;
    if (!b || b.disabled) return;
    document.querySelectorAll('button.item[aria-pressed="true"]').forEach(function (o) { o.setAttribute('aria-pressed', 'false'); });
    b.setAttribute('aria-pressed', 'true');
    __fl.send('selected', { id: b.dataset.id, label: b.textContent });
  });
})();
"#;

/// The grid's stylesheet: every item's box (served from `/s/{scope}/static/grid.css`).
fn grid_css(g: &GridLayout) -> String {
    let mut out = String::from(
        ".item { position: absolute; box-sizing: border-box; margin: 0; border: 1px solid #8a8a8a; border-radius: 4px; background: #fff; font-size: 15px; }\n.item[aria-pressed=\"true\"] { background: #1f5fbf; color: #fff; border-color: #123f80; }\n.item:disabled { color: #999; background: #eee; border-color: #ccc; }\n",
    );
    for (i, it) in g.items.iter().enumerate() {
        out.push_str(&format!(
            "#it-{i} {{ left: {}px; top: {}px; width: {}px; height: {}px; }}\n",
            it.rect.x, it.rect.y, it.rect.width, it.rect.height
        ));
    }
    out
}

fn grid_page(scope: &str, layout: &Layout, g: &GridLayout, mods: &[PageMod]) -> String {
    let x = anomalies::extras(layout, mods);
    let items = grid_items(g, mods);
    let buttons: String = items
        .iter()
        .map(|it| {
            format!(
                r#"<button class="item" id="{}" data-id="{}" aria-pressed="false"{}{}>{}</button>"#,
                it.dom_id,
                esc(&it.id),
                if it.disabled { " disabled" } else { "" },
                it.style
                    .as_ref()
                    .map(|s| format!(" style=\"{s}\""))
                    .unwrap_or_default(),
                esc(&it.label)
            )
        })
        .collect::<Vec<_>>()
        .join("\n");
    let css = format!("/s/{scope}/static/grid.css?{}", layout_query(layout));
    let late = mods.iter().any(|m| matches!(m, PageMod::LateStylesheet));
    let link = if late {
        String::new()
    } else {
        format!("<link rel=\"stylesheet\" href=\"{css}\">")
    };
    let body = format!(
        "{link}\n<h1>Item board</h1>\n<div id=\"board\">\n{buttons}\n</div>\n<script src=\"/s/{scope}/static/grid.js\"></script>"
    );
    let style = "#board { position: absolute; left: 0; top: 0; width: 1200px; height: 800px; }";
    let mut x = x;
    if late {
        x.script.push_str(&late_stylesheet_js(&css));
    }
    shell(scope, "Item board", style, &body, "", &x)
}

/// One grid button as rendered.
struct GridButton {
    dom_id: String,
    /// Its identity for the ledger (the original label).
    id: String,
    label: String,
    disabled: bool,
    /// An inline position that overrides the stylesheet's.
    style: Option<String>,
}

/// The grid's buttons after the page changes that edit them.
fn grid_items(g: &GridLayout, mods: &[PageMod]) -> Vec<GridButton> {
    let mut out: Vec<GridButton> = g
        .items
        .iter()
        .enumerate()
        .map(|(i, it)| GridButton {
            dom_id: format!("it-{i}"),
            id: it.label.clone(),
            label: it.label.clone(),
            disabled: false,
            style: None,
        })
        .collect();
    let t = g.items.iter().position(|i| i.label == g.target);
    for m in mods {
        match (m, t) {
            (PageMod::Disabled, Some(t)) => out[t].disabled = true,
            (PageMod::Renamed { label }, Some(t)) => out[t].label = label.clone(),
            (PageMod::DuplicateLabel { moved_to }, Some(t)) => {
                let r = g.items[t].rect;
                out[t].style = Some(format!(
                    "left:{}px; top:{}px; width:{}px; height:{}px",
                    moved_to.x, moved_to.y, moved_to.width, moved_to.height
                ));
                out.push(GridButton {
                    dom_id: "it-promoted".into(),
                    id: format!("{} (promoted)", g.target),
                    label: g.target.clone(),
                    disabled: false,
                    style: Some(format!(
                        "left:{}px; top:{}px; width:{}px; height:{}px",
                        r.x, r.y, r.width, r.height
                    )),
                });
            }
            _ => {}
        }
    }
    out
}

/// Attaches the grid's stylesheet only after the load event, and reports a click that
/// came before it applied (the fault firing).
fn late_stylesheet_js(href: &str) -> String {
    format!(
        r#"(function () {{
  var applied = false;
  document.addEventListener('click', function (e) {{ if (!applied) __fl.witness('click_before_stylesheet', {{ x: e.clientX, y: e.clientY }}); }}, true);
  window.addEventListener('load', function () {{
    var l = document.createElement('link');
    l.rel = 'stylesheet';
    l.href = {href};
    l.onload = function () {{ applied = true; __fl.witness('stylesheet_applied', {{ at_ms: performance.now() }}); }};
    document.head.appendChild(l);
  }});
}})();
"#,
        href = serde_json::to_string(href).expect("string")
    )
}

async fn grid_js() -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "application/javascript; charset=utf-8",
        )],
        GRID_JS,
    )
}

async fn grid_css_route(Query(q): Query<LayoutQuery>) -> Response {
    let layout = Layout::generate(TaskKind::Grid, q.layout, q.seed);
    let LayoutSpec::Grid(g) = &layout.spec else {
        unreachable!("grid layouts are grid specs")
    };
    (
        [(header::CONTENT_TYPE, "text/css; charset=utf-8")],
        grid_css(g),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use crate::task::judge;
    use crate::task::tests::ledger;
    use faultline_tasks::{Layout, TaskKind};
    use serde_json::json;

    #[test]
    fn grid_uses_the_selected_identity_not_the_label() {
        let l = Layout::generate(TaskKind::Grid, 0, 3);
        let t = l.target().to_string();
        let ok = ledger(&[
            ("click", json!({"target": null, "x": 1, "y": 2})),
            ("selected", json!({"id": t, "label": "No. 1"})),
        ]);
        assert!(judge(&l, &ok).achieved);
        let promoted = ledger(&[(
            "selected",
            json!({"id": format!("{t} (promoted)"), "label": t}),
        )]);
        assert!(!judge(&l, &promoted).achieved);
        let blank = ledger(&[("click", json!({"target": null, "x": 1, "y": 2}))]);
        let v = judge(&l, &blank);
        assert!(!v.achieved && v.detail.contains("blank"));
        // A click on a button whose handler never ran selects nothing.
        let dead = ledger(&[("click", json!({"target": t, "x": 1, "y": 2}))]);
        let v = judge(&l, &dead);
        assert!(
            !v.achieved && v.detail.contains("selected nothing"),
            "{}",
            v.detail
        );
    }
}
