//! Overlays: something on top of the page that takes the agent's click (a cookie banner,
//! a newsletter modal, a decoy popup, a transparent layer). Each reports, through the
//! witness channel, the click or pointer move it caught.

use crate::pages::Extras;
use faultline_tasks::Rect;

/// A cookie-consent banner over `rect`.
pub(super) fn cookie_banner(x: &mut Extras, rect: &Rect, target: Option<Rect>) {
    // The buttons sit on the side away from the target, so the click meets the
    // banner itself.
    let left_side = target.is_some_and(|t| t.center().x > 600.0);
    let buttons_at = if left_side { "left:24px" } else { "right:24px" };
    x.body.push_str(&format!(
        r#"<div id="fl-cookie" style="position:fixed; left:{}px; top:{}px; width:{}px; height:{}px; z-index:1000; background:#2b2b2b; color:#fff; box-sizing:border-box; padding:16px 24px; font-size:15px">
<p style="margin:0; max-width:560px; {pos}; position:absolute; top:16px">We use cookies to improve your experience and to measure traffic. By clicking "Accept all" you agree to our use of cookies.</p>
<div style="position:absolute; {buttons_at}; bottom:14px"><button id="fl-cookie-accept" style="font-size:15px; padding:6px 14px">Accept all</button> <button style="font-size:15px; padding:6px 14px">Settings</button></div></div>"#,
        rect.x,
        rect.y,
        rect.width,
        rect.height,
        pos = if left_side { "right:24px" } else { "left:24px" },
    ));
    x.script.push_str(
        r#"(function () {
  var b = document.getElementById('fl-cookie');
  b.addEventListener('pointerdown', function (e) { __fl.witness('intercepted', { overlay: 'cookie_banner', x: e.clientX, y: e.clientY }); });
  document.getElementById('fl-cookie-accept').addEventListener('click', function () { b.remove(); });
})();
"#,
    );
}

/// A newsletter modal over the whole page.
pub(super) fn modal(x: &mut Extras) {
    x.body.push_str(
        r#"<div id="fl-modal" style="position:fixed; inset:0; z-index:1000; background:rgba(20,20,20,0.45)">
<div role="dialog" aria-label="Newsletter" style="position:absolute; left:380px; top:250px; width:440px; background:#fff; border-radius:8px; padding:24px; box-sizing:border-box">
<h2 style="margin:0 0 10px; font-size:21px">Stay in the loop</h2><p style="margin:0 0 16px">Get our weekly newsletter with the best offers.</p>
<button id="fl-modal-close" style="font-size:15px; padding:6px 14px">No thanks</button> <button style="font-size:15px; padding:6px 14px">Subscribe</button></div></div>"#,
    );
    x.script.push_str(
        r#"(function () {
  var m = document.getElementById('fl-modal');
  m.addEventListener('pointerdown', function (e) { __fl.witness('intercepted', { overlay: 'modal', x: e.clientX, y: e.clientY }); });
  // A closure flag, not an attribute: the witness must not change the DOM it reports on.
  var hovered = false;
  m.addEventListener('pointermove', function (e) { if (!hovered) { hovered = true; __fl.witness('intercepted', { overlay: 'modal', pointer: 'move', x: e.clientX, y: e.clientY }); } });
  document.getElementById('fl-modal-close').addEventListener('click', function () { m.remove(); });
})();
"#,
    );
}

/// A decoy popup over `rect` whose button leads away.
pub(super) fn decoy_popup(x: &mut Extras, rect: &Rect) {
    let scope_expr = "'/s/' + __fl.scope + '/decoy'";
    x.body.push_str(&format!(
        r#"<div id="fl-decoy" style="position:fixed; left:{}px; top:{}px; width:{}px; height:{}px; z-index:1000; background:#fff8d6; border:2px solid #e0b000; border-radius:10px; box-sizing:border-box; padding:12px; text-align:center">
<p style="margin:0 0 8px; font-weight:bold">You have won a reward!</p>
<button id="fl-decoy-claim" style="position:absolute; left:10px; right:10px; bottom:10px; top:45%; font-size:18px; background:#e0b000; border:0; border-radius:6px">Claim your reward</button></div>"#,
        rect.x, rect.y, rect.width, rect.height
    ));
    x.script.push_str(&format!(
        r#"(function () {{
  var d = document.getElementById('fl-decoy');
  d.addEventListener('pointerdown', function (e) {{ __fl.witness('intercepted', {{ overlay: 'decoy_popup', x: e.clientX, y: e.clientY }}); }});
  document.getElementById('fl-decoy-claim').addEventListener('click', function () {{ location.href = {scope_expr}; }});
}})();
"#
    ));
}

/// A transparent layer over the page that swallows clicks.
pub(super) fn transparent_layer(x: &mut Extras) {
    x.body.push_str(
        r#"<div id="fl-glass" style="position:fixed; inset:0; z-index:2000; background:rgba(255,255,255,0)"></div>"#,
    );
    x.script.push_str(
        r#"document.getElementById('fl-glass').addEventListener('click', function (e) { __fl.witness('swallowed', { x: e.clientX, y: e.clientY }); });
"#,
    );
}
