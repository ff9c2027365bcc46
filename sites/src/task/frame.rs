//! The frame task's page: an orders table inside a same-origin iframe, whose document
//! the server renders at its own URL.

use super::{js_string, SiteTask};
use crate::anomalies;
use crate::app::{scope_or_400, AppState, LayoutQuery};
use crate::ledger::Ledger;
use crate::pages::{esc, layout_query, shell, Extras};
use crate::truth::Truth;
use axum::extract::{Path, Query, State};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use faultline_faults::site::PageMod;
use faultline_tasks::layout::{FrameLayout, LayoutSpec, OrderRow};
use faultline_tasks::{Layout, TaskKind};

impl SiteTask for FrameLayout {
    const EVENTS: &'static [&'static str] = &["row_selected"];

    fn page(&self, scope: &str, layout: &Layout, mods: &[PageMod]) -> String {
        frame_page(scope, layout, self, mods)
    }

    /// `/s/{scope}/frame/orders?layout=I&seed=S`: the frame's document.
    fn routes() -> Router<AppState> {
        Router::new().route("/s/{scope}/frame/orders", get(orders))
    }

    /// The row the frame's handler selected last must be the target.
    fn validate(&self, ledger: &Ledger) -> Truth {
        let f = self;
        match ledger.last_of_kind("row_selected") {
            None => {
                let clicks = ledger.of_kind("click").count();
                Truth::no(format!(
                    "no row was selected ({clicks} click(s) hit no row), expected {}",
                    f.target
                ))
            }
            Some(e) => {
                let row = e.data["row"].as_str().unwrap_or_default();
                if row == f.target {
                    Truth::yes(format!("selected {row}"))
                } else {
                    Truth::no(format!("selected {row}, expected {}", f.target))
                }
            }
        }
    }

    /// The row whose `aria-label` is the target, inside the first iframe (as
    /// [`frame_page`] and [`order_row`] write them), in top-document coordinates.
    fn locate_js(&self) -> Option<String> {
        let target = js_string(&self.target);
        Some(format!(
            "(() => {{ const f = document.querySelector('iframe'); if (!f) return null; const fr = f.getBoundingClientRect();
               const row = Array.from(f.contentDocument.querySelectorAll('tr')).find((e) => e.getAttribute('aria-label') === {target});
               if (!row) return null; const r = row.getBoundingClientRect();
               return [fr.left + r.left + r.width / 2, fr.top + r.top + r.height / 2]; }})()"
        ))
    }
}

fn frame_page(scope: &str, layout: &Layout, f: &FrameLayout, mods: &[PageMod]) -> String {
    let body = format!(
        r#"<h1>Order desk</h1>
<p style="position:absolute; left:40px; top:70px; margin:0">Orders are listed in the embedded table.</p>
<iframe id="orders" title="Orders" src="/s/{scope}/frame/orders?{q}" style="position:absolute; left:{x}px; top:{y}px; width:{w}px; height:{h}px; border:0; background:#fff"></iframe>"#,
        q = layout_query(layout),
        x = f.frame.x,
        y = f.frame.y,
        w = f.frame.width,
        h = f.frame.height,
    );
    // Page changes that belong inside the frame are rendered by `frame_orders`.
    let x = anomalies::extras(layout, mods);
    shell(scope, "Order desk", "", &body, "", &x)
}

fn frame_orders(scope: &str, layout: &Layout, f: &FrameLayout, mods: &[PageMod]) -> String {
    let style = format!(
        r#"body {{ background: #fff; }}
table {{ border-collapse: collapse; width: 100%; table-layout: fixed; }}
th, td {{ padding: 0 10px; text-align: left; overflow: hidden; white-space: nowrap; box-sizing: border-box; }}
thead tr {{ height: {hh}px; background: #eee; }}
tbody tr {{ height: {rh}px; border-top: 1px solid #e4e4e4; cursor: pointer; }}
tbody tr[aria-selected="true"] {{ background: #1f5fbf; color: #fff; }}
.num {{ text-align: right; }}"#,
        hh = f.header_height,
        rh = f.row_height
    );
    let script = r#"document.addEventListener('click', function (e) {
  var row = e.target.closest ? e.target.closest('tbody tr') : null;
  if (row) {
    document.querySelectorAll('tbody tr[aria-selected="true"]').forEach(function (o) { o.setAttribute('aria-selected', 'false'); });
    row.setAttribute('aria-selected', 'true');
    __fl.send('row_selected', { row: row.getAttribute('aria-label'), x: e.clientX, y: e.clientY });
  }
});"#;
    let header =
        "<thead><tr><th>Order</th><th>Customer</th><th class=\"num\">Total</th></tr></thead>";
    if let Some(prepended) = mods.iter().find_map(|m| match m {
        PageMod::Virtualized { prepended } => Some(*prepended),
        _ => None,
    }) {
        let (body, vscript) = virtual_orders(layout, f, prepended);
        let x = Extras {
            script: vscript,
            ..Extras::default()
        };
        return shell(
            scope,
            "Orders",
            &style,
            &format!("<table>{header}</table>\n{body}"),
            script,
            &x,
        );
    }
    let rows: String = f.rows.iter().map(order_row).collect::<Vec<_>>().join("\n");
    let body = format!("<table>{header}\n<tbody>\n{rows}\n</tbody></table>");
    // The frame's own document: the table starts at the frame's top-left corner.
    shell(scope, "Orders", &style, &body, script, &Extras::default())
}

fn order_row(r: &OrderRow) -> String {
    format!(
        r#"<tr aria-label="{l}" aria-selected="false"><td>{l}</td><td>{c}</td><td class="num">${d}.{m:02}</td></tr>"#,
        l = esc(&r.label),
        c = esc(&r.customer),
        d = r.total_cents / 100,
        m = r.total_cents % 100
    )
}

/// The virtualized orders list: `prepended` extra rows first, only the rows in view in
/// the DOM. Returns the markup and the script that renders the window.
fn virtual_orders(layout: &Layout, f: &FrameLayout, prepended: u32) -> (String, String) {
    let mut rng =
        faultline_tasks::seed::rng(faultline_tasks::seed::derive(layout.seed, &["virtualized"]));
    let taken: Vec<&str> = f.rows.iter().map(|r| r.label.as_str()).collect();
    let mut extra: Vec<OrderRow> = Vec::new();
    let mut n = 100u32;
    while extra.len() < prepended as usize {
        let label = format!("Order {n}");
        n += 1;
        if taken.contains(&label.as_str()) {
            continue;
        }
        use rand::Rng;
        extra.push(OrderRow {
            label,
            customer: f.rows[rng.random_range(0..f.rows.len())].customer.clone(),
            total_cents: rng.random_range(500..=99_999u32),
        });
    }
    let all: Vec<&OrderRow> = extra.iter().chain(f.rows.iter()).collect();
    let rows_js: Vec<String> = all
        .iter()
        .map(|r| serde_json::to_string(&order_row(r)).expect("string"))
        .collect();
    let height = f.frame.height - f.header_height;
    let body = format!(
        r#"<div id="vp" style="height:{height}px; overflow-y:auto; position:relative"><div id="spacer" style="height:{total}px; position:relative"><table id="win" style="position:absolute; left:0; top:0"><tbody></tbody></table></div></div>"#,
        total = f.row_height * all.len() as f64
    );
    let script = format!(
        r#"(function () {{
  var rows = [{rows}];
  var rh = {rh};
  var vp = document.getElementById('vp');
  var win = document.getElementById('win');
  var selected = null;
  function render() {{
    var first = Math.floor(vp.scrollTop / rh);
    var count = Math.ceil(vp.clientHeight / rh) + 1;
    win.style.top = (first * rh) + 'px';
    win.tBodies[0].innerHTML = rows.slice(first, first + count).join('');
    if (selected) win.querySelectorAll('tr').forEach(function (tr) {{ if (tr.getAttribute('aria-label') === selected) tr.setAttribute('aria-selected', 'true'); }});
  }}
  vp.addEventListener('scroll', render);
  document.addEventListener('click', function (e) {{
    var row = e.target.closest ? e.target.closest('tbody tr') : null;
    if (row) selected = row.getAttribute('aria-label');
    var target = {target};
    var inDom = Array.prototype.some.call(win.querySelectorAll('tr'), function (tr) {{ return tr.getAttribute('aria-label') === target; }});
    if (!inDom) __fl.witness('target_not_rendered', {{ clicked: selected }});
  }}, true);
  render();
}})();
"#,
        rows = rows_js.join(","),
        rh = f.row_height,
        target = serde_json::to_string(&f.target).expect("string"),
    );
    (body, script)
}

async fn orders(
    State(state): State<AppState>,
    Path(scope): Path<String>,
    Query(q): Query<LayoutQuery>,
) -> Response {
    let scope = match scope_or_400(&scope) {
        Ok(s) => s,
        Err(r) => return r.into_response(),
    };
    let layout = Layout::generate(TaskKind::Frame, q.layout, q.seed);
    let LayoutSpec::Frame(f) = &layout.spec else {
        unreachable!("frame layouts are frame specs")
    };
    let mods = state.board.page_mods(scope.as_str());
    Html(frame_orders(scope.as_str(), &layout, f, &mods)).into_response()
}
