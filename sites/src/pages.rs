//! The fixture pages, rendered from a layout.
//!
//! Pages are plain HTML with absolutely positioned controls (so a layout's rectangles are
//! exactly where the browser draws them) and a small shared script, `/static/ledger.js`,
//! that reports what happens to the server-side ledger. Values that only scoring should
//! know (the chart's numbers) live in script data, never in visible text, until the page
//! itself shows them.

use faultline_tasks::layout::{ChartLayout, FrameLayout, GridLayout, SearchLayout};
use faultline_tasks::Layout;

/// The shared page script. Every page event goes through `send`, which counts requests
/// in flight so the harness can wait for the ledger to be complete (`__faultline_flush`)
/// before scoring reads it. Capture instants and answers are not page events: the
/// harness records those itself, through the ledger key, so a page cannot forge them.
pub const LEDGER_JS: &str = r#"(function () {
  var meta = document.querySelector('meta[name="fl-scope"]');
  var scope = meta ? meta.content : 'none';
  var pending = 0;
  function send(kind, data) {
    pending++;
    return fetch('/s/' + scope + '/event', {
      method: 'POST',
      keepalive: true,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ kind: kind, page_ms: performance.now(), data: data || {} })
    }).catch(function () {}).finally(function () { pending--; });
  }
  window.__fl = { send: send, pending: function () { return pending; } };
  // Harness instrumentation: a navigation away from this document has begun (a form
  // submit, a link), so "loaded" must mean the next document, not this one.
  window.addEventListener('beforeunload', function () { window.__faultline_leaving = performance.now(); });
  function frames() {
    var out = [window];
    document.querySelectorAll('iframe').forEach(function (f) { out.push(f.contentWindow); });
    return out;
  }
  // Harness instrumentation: resolves once every ledger request of this page and its
  // frames has been answered.
  window.__faultline_flush = function () {
    return new Promise(function (resolve) {
      (function check() {
        var n = 0;
        frames().forEach(function (w) { try { n += w.__fl ? w.__fl.pending() : 0; } catch (e) {} });
        if (n === 0) { resolve(true); } else { setTimeout(check, 5); }
      })();
    });
  };
})();
"#;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn shell(scope: &str, title: &str, style: &str, body: &str, script: &str) -> String {
    format!(
        r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="fl-scope" content="{scope}">
<title>{title}</title>
<style>
html, body {{ margin: 0; padding: 0; font: 16px/1.3 "Liberation Sans", Arial, sans-serif; background: #fafafa; color: #222; }}
h1 {{ position: absolute; left: 40px; top: 24px; margin: 0; font-size: 26px; }}
{style}
</style>
<script src="/static/ledger.js"></script>
</head><body>
{body}
<script>
{script}
</script>
</body></html>
"#,
        title = esc(title)
    )
}

fn layout_query(layout: &Layout) -> String {
    format!("layout={}&seed={}", layout.index, layout.seed)
}

pub fn search_page(scope: &str, layout: &Layout, s: &SearchLayout) -> String {
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
    shell(scope, "Record search", "", &body, script)
}

pub fn search_results(scope: &str, layout: &Layout, query: &str, results: &[String]) -> String {
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
<div style="position:absolute; left:40px; top:150px">
<h2 style="font-size:20px; margin:0 0 8px">Results for &ldquo;{q}&rdquo;: {n}</h2>
{list}
</div>"#,
        q = esc(query),
        n = results.len(),
        index = layout.index,
        seed = layout.seed,
    );
    shell(scope, "Search results", "", &body, "")
}

pub fn grid_page(scope: &str, g: &GridLayout) -> String {
    let buttons: String = g
        .items
        .iter()
        .map(|it| {
            format!(
                r#"<button class="item" aria-pressed="false" style="left:{}px; top:{}px; width:{}px; height:{}px">{}</button>"#,
                it.rect.x,
                it.rect.y,
                it.rect.width,
                it.rect.height,
                esc(&it.label)
            )
        })
        .collect::<Vec<_>>()
        .join("\n");
    let body = format!("<h1>Item board</h1>\n<div id=\"board\">\n{buttons}\n</div>");
    let style = r#".item { position: absolute; box-sizing: border-box; margin: 0; border: 1px solid #8a8a8a; border-radius: 4px; background: #fff; font-size: 15px; }
.item[aria-pressed="true"] { background: #1f5fbf; color: #fff; border-color: #123f80; }"#;
    let script = r#"document.addEventListener('click', function (e) {
  var b = e.target.closest ? e.target.closest('button.item') : null;
  if (b) {
    document.querySelectorAll('button.item[aria-pressed="true"]').forEach(function (o) { o.setAttribute('aria-pressed', 'false'); });
    b.setAttribute('aria-pressed', 'true');
  }
  __fl.send('click', { target: b ? b.textContent : null, x: e.clientX, y: e.clientY });
});"#;
    shell(scope, "Item board", style, &body, script)
}

pub fn frame_page(scope: &str, layout: &Layout, f: &FrameLayout) -> String {
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
    let script = r#"document.addEventListener('click', function (e) {
  __fl.send('click', { target: null, frame: 'top', x: e.clientX, y: e.clientY });
});"#;
    shell(scope, "Order desk", "", &body, script)
}

pub fn frame_orders(scope: &str, f: &FrameLayout) -> String {
    let rows: String = f
        .rows
        .iter()
        .map(|r| {
            format!(
                r#"<tr aria-label="{l}" aria-selected="false"><td>{l}</td><td>{c}</td><td class="num">${d}.{m:02}</td></tr>"#,
                l = esc(&r.label),
                c = esc(&r.customer),
                d = r.total_cents / 100,
                m = r.total_cents % 100
            )
        })
        .collect::<Vec<_>>()
        .join("\n");
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
    let body = format!(
        "<table><thead><tr><th>Order</th><th>Customer</th><th class=\"num\">Total</th></tr></thead>\n<tbody>\n{rows}\n</tbody></table>"
    );
    let script = r#"document.addEventListener('click', function (e) {
  var row = e.target.closest ? e.target.closest('tbody tr') : null;
  if (row) {
    document.querySelectorAll('tbody tr[aria-selected="true"]').forEach(function (o) { o.setAttribute('aria-selected', 'false'); });
    row.setAttribute('aria-selected', 'true');
    __fl.send('row_selected', { row: row.getAttribute('aria-label'), x: e.clientX, y: e.clientY });
  } else {
    __fl.send('click', { target: null, frame: 'orders', x: e.clientX, y: e.clientY });
  }
});"#;
    // The frame's own document: the table starts at the frame's top-left corner.
    shell(scope, "Orders", &style, &body, script)
}

pub fn chart_page(scope: &str, c: &ChartLayout) -> String {
    let p = &c.plot;
    let bars: String = c
        .marks
        .iter()
        .enumerate()
        .map(|(i, m)| {
            format!(
                r#"<div class="bar" data-i="{i}" style="left:{x}px; top:{y}px; width:{w}px; height:{h}px"></div>
<span class="axis" style="left:{x}px; top:{ay}px; width:{w}px">{l}</span>"#,
                x = m.rect.x,
                y = m.rect.y,
                w = m.rect.width,
                h = m.rect.height,
                ay = p.y + p.height + 6.0,
                l = esc(&m.label)
            )
        })
        .collect::<Vec<_>>()
        .join("\n");
    let body = format!(
        r#"<h1>Monthly sales</h1>
<div class="plot" style="left:{x}px; top:{y}px; width:{w}px; height:{h}px"></div>
{bars}
<div id="tip" role="tooltip" hidden></div>"#,
        x = p.x,
        y = p.y,
        w = p.width,
        h = p.height,
    );
    let style = r#".plot { position: absolute; box-sizing: border-box; border-left: 2px solid #444; border-bottom: 2px solid #444; }
.bar { position: absolute; background: #7aa6d8; }
.bar.hot { background: #f0a030; }
.axis { position: absolute; text-align: center; font-size: 14px; }
#tip { position: absolute; padding: 6px 10px; background: #222; color: #fff; border-radius: 4px; font-size: 15px; white-space: nowrap; }"#;
    let data: Vec<String> = c
        .marks
        .iter()
        .map(|m| format!("[\"{}\",{}]", m.label, m.value))
        .collect();
    let script = format!(
        r#"var marks = [{data}];
var delay = {delay};
var tip = document.getElementById('tip');
var timer = null;
document.querySelectorAll('.bar').forEach(function (bar) {{
  var m = marks[Number(bar.dataset.i)];
  bar.addEventListener('mouseenter', function () {{
    bar.classList.add('hot');
    clearTimeout(timer);
    timer = setTimeout(function () {{
      var r = bar.getBoundingClientRect();
      tip.textContent = m[0] + ': ' + m[1];
      tip.style.left = (r.left) + 'px';
      tip.style.top = Math.max(0, r.top - 40) + 'px';
      tip.hidden = false;
      var now = performance.now();
      tip.dataset.shownAt = String(now);
      __fl.send('tooltip_shown', {{ label: m[0], value: m[1], at_ms: now }});
    }}, delay);
  }});
  bar.addEventListener('mouseleave', function () {{
    bar.classList.remove('hot');
    clearTimeout(timer);
    if (!tip.hidden) {{ tip.hidden = true; __fl.send('tooltip_hidden', {{ label: m[0], at_ms: performance.now() }}); }}
  }});
}});"#,
        data = data.join(","),
        delay = c.tooltip_delay_ms
    );
    shell(scope, "Monthly sales", style, &body, &script)
}

pub fn index_page(base: &str, links: &[(String, String)]) -> String {
    let items: String = links
        .iter()
        .map(|(label, path)| format!("<li><a href=\"{base}{path}\">{}</a></li>", esc(label)))
        .collect();
    format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>faultline fixture sites</title></head><body><h1>faultline fixture sites</h1><ul>{items}</ul></body></html>"
    )
}
