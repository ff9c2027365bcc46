//! What every fixture page shares: the page shell, the ledger script, escaping, the page
//! changes a fault adds ([`Extras`]), and the pages that belong to no task (errors, the
//! sign-in page an expired session leads to, the decoy, the index). Each task's own
//! page lives with the task, in `crate::task`.
//!
//! Pages are plain HTML with absolutely positioned controls (so a layout's rectangles are
//! exactly where the browser draws them) and a small shared script, `/static/ledger.js`,
//! that reports what happens to the server-side ledger. Values that only scoring should
//! know (the chart's numbers) live in script data, never in visible text, until the page
//! itself shows them.

use faultline_tasks::Layout;

/// The shared page script. Every page event goes through `send`, which counts requests
/// in flight so the harness can wait for the ledger to be complete (`__faultline_flush`)
/// before scoring reads it. Every click is logged with what it hit (capture phase, before
/// any page handler can stop it), and uncaught errors are logged too. Capture instants
/// and answers are not page events: the harness records those itself, through the ledger
/// key, so a page cannot forge them. `witness` is the fault layer's channel: injected
/// scripts report there when their change met the agent's action (the server keeps it
/// only for scopes a fault is armed on).
pub const LEDGER_JS: &str = r#"(function () {
  var meta = document.querySelector('meta[name="fl-scope"]');
  var scope = meta ? meta.content : 'none';
  var pending = 0;
  function post(path, body) {
    pending++;
    return fetch('/s/' + scope + path, {
      method: 'POST',
      keepalive: true,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body)
    }).catch(function () {}).finally(function () { pending--; });
  }
  function send(kind, data) { return post('/event', { kind: kind, page_ms: performance.now(), data: data || {} }); }
  function witness(kind, data) { return post('/witness', { kind: kind, page_ms: performance.now(), data: data || {} }); }
  window.__fl = { send: send, witness: witness, scope: scope, pending: function () { return pending; } };
  function describe(t) {
    var el = t && t.closest ? t.closest('[data-id],[aria-label],button,a,li') : null;
    if (!el) return null;
    return (el.dataset && el.dataset.id) || el.getAttribute('aria-label') || (el.textContent || '').trim().slice(0, 80);
  }
  document.addEventListener('click', function (e) {
    send('click', { target: describe(e.target), tag: e.target && e.target.tagName ? e.target.tagName : null, x: e.clientX, y: e.clientY });
  }, true);
  window.addEventListener('error', function (e) { send('page_error', { message: String(e.message) }); });
  // Harness instrumentation: a navigation away from this document has begun (a form
  // submit, a link), so "loaded" must mean the next document, not this one.
  window.addEventListener('beforeunload', function () { window.__faultline_leaving = performance.now(); });
  // A form submit schedules its navigation for later; the submit event itself fires
  // synchronously with the key or click that caused it, so mark the leaving there too,
  // or a busy machine can observe the old page as if nothing had happened.
  document.addEventListener('submit', function () { window.__faultline_leaving = performance.now(); }, true);
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

/// Markup, styles and scripts a page gains from its page changes (rendered by
/// [`crate::fault::extras`]).
#[derive(Debug, Clone, Default)]
pub struct Extras {
    /// CSS appended to the page's own `<style>`.
    pub style: String,
    /// Markup appended to the `<head>`.
    pub head: String,
    /// Markup appended to the `<body>`, after the page's own.
    pub body: String,
    /// Runs after the page's own script.
    pub script: String,
}

pub(crate) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

pub(crate) fn shell(
    scope: &str,
    title: &str,
    style: &str,
    body: &str,
    script: &str,
    x: &Extras,
) -> String {
    format!(
        r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="fl-scope" content="{scope}">
<title>{title}</title>
<style>
html, body {{ margin: 0; padding: 0; font: 16px/1.3 "Liberation Sans", Arial, sans-serif; background: #fafafa; color: #222; }}
h1 {{ position: absolute; left: 40px; top: 24px; margin: 0; font-size: 26px; }}
{style}
{xstyle}
</style>
<script src="/static/ledger.js"></script>
{xhead}
</head><body>
{body}
{xbody}
<script>
{script}
</script>
{xscript}
</body></html>
"#,
        title = esc(title),
        xstyle = x.style,
        xhead = x.head,
        xbody = x.body,
        xscript = if x.script.is_empty() {
            String::new()
        } else {
            format!("<script>\n{}\n</script>", x.script)
        },
    )
}

pub(crate) fn layout_query(layout: &Layout) -> String {
    format!("layout={}&seed={}", layout.index, layout.seed)
}

/// An HTTP error page, as a server or a proxy would send it.
pub fn error_page(status: u16, reason: &str, detail: &str) -> String {
    format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{status} {reason}</title></head><body style=\"font: 16px Arial, sans-serif; margin: 40px\"><h1>{status} {reason}</h1><p>{}</p><hr><p>faultline fixture server</p></body></html>",
        esc(detail)
    )
}

/// The sign-in page a session-expired redirect leads to.
pub fn login_page(scope: &str) -> String {
    let body = format!(
        r#"<h1>Sign in</h1>
<p style="position:absolute; left:40px; top:80px; margin:0">Your session has expired. Please sign in again.</p>
<form action="/s/{scope}/login" method="get" style="position:absolute; left:40px; top:120px">
<label>Email <input name="email" type="email"></label> <label>Password <input name="password" type="password"></label> <button type="submit">Sign in</button>
</form>"#
    );
    shell(scope, "Sign in", "", &body, "", &Extras::default())
}

/// The page a decoy popup's button leads to.
pub fn decoy_page(scope: &str) -> String {
    let body = "<h1>Congratulations!</h1>\n<p style=\"position:absolute; left:40px; top:80px; margin:0\">Your reward is being prepared. Enter your card details to claim it.</p>";
    shell(scope, "Claim your reward", "", body, "", &Extras::default())
}

/// The index of fixture pages. Links are root-relative: the page names no host, so nothing
/// a request sends (its `Host` header, say) is reflected into it.
pub fn index_page(links: &[(String, String)]) -> String {
    let items: String = links
        .iter()
        .map(|(label, path)| format!("<li><a href=\"{}\">{}</a></li>", esc(path), esc(label)))
        .collect();
    format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>faultline fixture sites</title></head><body><h1>faultline fixture sites</h1><ul>{items}</ul></body></html>"
    )
}
