// faultline viewer. Plain JavaScript, no dependencies, works from file:// (data files are
// scripts calling faultlineData(<JSON>), loaded on demand by adding a <script> tag).
"use strict";
(function () {
  const received = {};
  window.faultlineData = function (obj) {
    received[obj.kind + ":" + (obj.id || "")] = obj;
  };
  function load(src, key) {
    return new Promise(function (resolve, reject) {
      const s = document.createElement("script");
      s.src = src;
      s.onload = function () {
        const d = received[key];
        delete received[key];
        s.remove();
        if (d) resolve(d); else reject(new Error("no data in " + src));
      };
      s.onerror = function () { s.remove(); reject(new Error("cannot load " + src)); };
      document.head.appendChild(s);
    });
  }
  const loadIndex = function () { return load("data/index.js", "index:"); };

  // ---- small DOM helpers -------------------------------------------------------------
  function el(tag, attrs) {
    const e = document.createElement(tag);
    if (attrs) for (const k in attrs) {
      const v = attrs[k];
      if (v === null || v === undefined || v === false) continue;
      if (k === "text") e.textContent = v;
      else if (k === "cls") e.className = v;
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? "" : v);
    }
    for (let i = 2; i < arguments.length; i++) add(e, arguments[i]);
    return e;
  }
  function add(e, c) {
    if (c === null || c === undefined || c === false) return;
    if (Array.isArray(c)) { c.forEach(function (x) { add(e, x); }); return; }
    e.appendChild(typeof c === "object" ? c : document.createTextNode(String(c)));
  }
  const SVG = "http://www.w3.org/2000/svg";
  function svg(tag, attrs) {
    const e = document.createElementNS(SVG, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    return e;
  }
  function pre(v) {
    return el("pre", null, typeof v === "string" ? v : JSON.stringify(v, null, 2));
  }
  function pad(n) { return String(n).padStart(3, "0"); }

  // ---- outcomes: always text, colour only as a second cue ------------------------------
  const OUTCOME = {
    caught: ["✓ caught", "good"], missed: ["✗ missed", "bad"],
    false_alarm: ["! false alarm", "bad"], correct: ["✓ correct", "good"],
    not_fired: ["– not fired", "na"], unconfirmed: ["? unconfirmed", "na"]
  };
  const VERDICT = { success: "good", no_change: "warn", fail: "bad", none: "na" };
  function outcomeBadge(o) {
    const d = OUTCOME[o] || [o || "–", "na"];
    return el("span", { cls: "badge " + d[1] }, d[0]);
  }
  function verdictBadge(v) {
    return el("span", { cls: "badge verdict " + (VERDICT[v] || "na") }, v || "not judged");
  }
  function truthBadge(ok, yes, no) {
    return el("span", { cls: "badge " + (ok ? "good" : "bad") }, ok ? "✓ " + (yes || "achieved") : "✗ " + (no || "not achieved"));
  }

  // ---- the URL hash: key=value&... ----------------------------------------------------
  function parseHash() {
    const out = {};
    location.hash.replace(/^#/, "").split("&").forEach(function (part) {
      if (!part) return;
      const i = part.indexOf("=");
      if (i < 0) out[""] = decodeURIComponent(part);
      else out[decodeURIComponent(part.slice(0, i))] = decodeURIComponent(part.slice(i + 1));
    });
    return out;
  }
  function encodeHash(o, order) {
    return order.filter(function (k) { return o[k]; })
      .map(function (k) { return encodeURIComponent(k) + "=" + encodeURIComponent(o[k]); }).join("&");
  }

  // ---- screenshots with the points drawn over them ------------------------------------
  function shot(src, caption, points, size) {
    if (!src) return el("figure", { cls: "shot" }, el("p", { cls: "muted" }, "No screenshot."), el("figcaption", null, caption));
    const w = (size && size.width) || 900, h = (size && size.height) || 600;
    const img = el("img", { src: src, alt: caption, loading: "lazy", width: w, height: h });
    const s = svg("svg", { viewBox: "0 0 " + w + " " + h, "aria-hidden": "true" });
    img.addEventListener("load", function () {
      if (img.naturalWidth) s.setAttribute("viewBox", "0 0 " + img.naturalWidth + " " + img.naturalHeight);
    });
    (points || []).forEach(function (p) {
      const colour = "var(--" + p.role + ")";
      if (p.role === "intended") {
        s.appendChild(svg("circle", { cx: p.x, cy: p.y, r: 15, fill: "none", stroke: colour, "stroke-width": 4 }));
        s.appendChild(svg("path", { d: "M" + (p.x - 22) + " " + p.y + "h44M" + p.x + " " + (p.y - 22) + "v44", stroke: colour, "stroke-width": 2 }));
      } else if (p.role === "parsed") {
        s.appendChild(svg("rect", { x: p.x - 11, y: p.y - 11, width: 22, height: 22, fill: "none", stroke: colour, "stroke-width": 3 }));
      } else {
        s.appendChild(svg("circle", { cx: p.x, cy: p.y, r: 6, fill: colour, stroke: "#fff", "stroke-width": 2 }));
      }
      // Labels go in different directions so coinciding points stay readable: intended
      // above, parsed below, executed further below; to the left near the right edge.
      const left = p.x > w - 220;
      const dy = { intended: -16, parsed: 28, executed: 50 }[p.role] || 28;
      const t = svg("text", { x: p.x + (left ? -18 : 18), y: p.y + dy, fill: colour, "text-anchor": left ? "end" : "start" });
      t.textContent = p.role + " (" + Math.round(p.x) + ", " + Math.round(p.y) + ")";
      s.appendChild(t);
    });
    return el("figure", { cls: "shot" }, el("div", { cls: "shotbox" }, img, s), el("figcaption", null, caption));
  }
  function legend(points) {
    const roles = {};
    (points || []).forEach(function (p) { roles[p.role] = true; });
    const text = {
      intended: "intended point (ring: where the click was meant to land)",
      parsed: "parsed (square: the action as written, image pixels)",
      executed: "executed (dot: where the browser acted)"
    };
    const items = Object.keys(text).filter(function (r) { return roles[r]; })
      .map(function (r) { return el("span", { cls: "l-" + r }, text[r]); });
    return items.length ? el("p", { cls: "legend" }, items) : null;
  }
  function actionsTable(actions, executed, size) {
    const rows = [];
    const n = Math.max((actions || []).length, (executed || []).length);
    for (let i = 0; i < n; i++) {
      const a = (actions || [])[i] || {};
      const e = (executed || [])[i] || {};
      const vp = e.viewport_point;
      const ea = e.action || {};
      rows.push(el("tr", null,
        el("td", { cls: "num" }, i + 1),
        el("td", null, a.kind || ea.kind || "–"),
        el("td", null, describe(a)),
        el("td", null, describe(ea)),
        el("td", { cls: "num" }, vp ? "(" + fmt(vp.x) + ", " + fmt(vp.y) + ")" : "–"),
        el("td", null, e.message || "–")));
    }
    if (!rows.length) return el("p", { cls: "muted" }, "No actions.");
    return el("div", { cls: "scroll" }, el("table", { cls: "data" },
      el("thead", null, el("tr", null, ["#", "kind", "as parsed (image px)", "as executed", "viewport point", "executor message"].map(function (h) { return el("th", { scope: "col" }, h); }))),
      el("tbody", null, rows)));
  }
  function fmt(x) { return Number.isInteger(x) ? String(x) : Number(x).toFixed(1); }
  function describe(a) {
    if (!a || !a.kind) return "–";
    const parts = [];
    if (a.x !== undefined) parts.push("(" + fmt(a.x) + ", " + fmt(a.y) + ")");
    ["text", "key", "answer", "direction", "amount"].forEach(function (k) {
      if (a[k] !== undefined) parts.push(k + " " + JSON.stringify(a[k]));
    });
    return parts.join(" ") || a.kind;
  }
  function facts(pairs) {
    return el("dl", { cls: "facts" }, pairs.filter(function (p) { return p; }).map(function (p) {
      return [el("dt", null, p[0]), el("dd", null, p[1])];
    }));
  }
  function section(title, content, id) {
    return el("section", { id: id }, el("h2", null, title), content);
  }
  function fail(err) {
    const m = document.getElementById("main") || document.body;
    m.textContent = "";
    add(m, el("p", { role: "alert" }, "Could not load this view: " + err.message));
  }
  function navKeys(handlers) {
    document.addEventListener("keydown", function (ev) {
      if (ev.altKey || ev.ctrlKey || ev.metaKey) return;
      const t = ev.target.tagName;
      if (t === "INPUT" || t === "SELECT" || t === "TEXTAREA") return;
      const f = handlers[ev.key];
      if (f) { ev.preventDefault(); f(); }
    });
  }
  function pager(nav, list, i, page, label, extra) {
    nav.textContent = "";
    const prev = i > 0 ? list[i - 1] : null, next = i >= 0 && i < list.length - 1 ? list[i + 1] : null;
    add(nav, [
      prev ? el("a", { href: page + "#" + prev.id + extra, rel: "prev" }, "← previous " + label) : el("span", { cls: "muted" }, "← previous " + label),
      " ", el("span", { cls: "muted" }, (i + 1) + " of " + list.length), " ",
      next ? el("a", { href: page + "#" + next.id + extra, rel: "next" }, "next " + label + " →") : el("span", { cls: "muted" }, "next " + label + " →")
    ]);
    return { prev: prev, next: next };
  }

  // ---- run page ----------------------------------------------------------------------
  const ORDER = ["kind", "task", "fault", "layer", "policy", "verdict", "outcome", "recovered", "stop", "a", "b", "disagree", "sort", "dir"];
  function indexPage() {
    document.querySelectorAll("a[data-nav]").forEach(function (a) {
      a.addEventListener("click", function (ev) {
        ev.preventDefault();
        const t = document.querySelector(a.getAttribute("href"));
        if (t) t.scrollIntoView();
      });
    });
    loadIndex().then(function (idx) {
      const ui = new Browser(idx);
      window.faultlineView = ui;
      ui.readHash();
      ui.render();
      // When the first render finished, in ms since navigation (read by the benchmark).
      document.documentElement.dataset.readyMs = String(Math.round(performance.now()));
      window.addEventListener("hashchange", function () {
        if (location.hash.indexOf("=") < 0 && location.hash.length > 1) return;
        ui.readHash();
        ui.render();
        document.getElementById("browse").scrollIntoView();
      });
    }).catch(function (e) { document.getElementById("count").textContent = "Could not load data/index.js: " + e.message; });
  }

  function Browser(idx) {
    this.idx = idx;
    this.state = {};
    this.limit = 100;
  }
  Browser.prototype.rows = function () {
    return this.state.kind === "episodes" ? this.idx.episodes : this.idx.trials;
  };
  Browser.prototype.fields = function () {
    const p = this.idx.policies;
    if (this.state.kind === "episodes") return [
      ["task", "task", function (r) { return r.task; }],
      ["fault", "fault", function (r) { return r.fault; }],
      ["layer", "layer", function (r) { return r.layer; }],
      ["policy", "policy", function (r) { return r.policy; }],
      ["verdict", "first verdict", function (r) { return r.first_verdict; }],
      ["outcome", "first step", function (r) { return r.detected ? "caught" : "missed"; }],
      ["recovered", "recovered", function (r) { return r.recovered ? "recovered" : "not recovered"; }],
      ["stop", "stop reason", function (r) { return r.stop_reason; }]
    ];
    const st = this.state;
    return [
      ["task", "task", function (r) { return r.task; }],
      ["fault", "fault", function (r) { return r.fault || "working"; }],
      ["layer", "layer", function (r) { return r.layer || "working"; }],
      ["policy", "policy", null, p],
      ["verdict", "verdict", function (r) { return st.policy ? [r.verdicts[st.policy]] : Object.values(r.verdicts); }],
      ["outcome", "outcome", function (r) { return st.policy ? [r.outcomes[st.policy]] : Object.values(r.outcomes); }]
    ];
  };
  Browser.prototype.readHash = function () {
    const h = parseHash();
    const s = {};
    ORDER.forEach(function (k) { if (h[k]) s[k] = h[k]; });
    if (s.kind !== "episodes") s.kind = "trials";
    this.state = s;
    this.limit = 100;
  };
  Browser.prototype.writeHash = function () {
    history.replaceState(null, "", "#" + encodeHash(this.state, ORDER));
  };
  function has(v, want) {
    return Array.isArray(v) ? v.indexOf(want) >= 0 : v === want;
  }
  // Does row r pass every filter except `skip`?
  Browser.prototype.matches = function (r, skip) {
    const st = this.state;
    const fs = this.fields();
    for (let i = 0; i < fs.length; i++) {
      const f = fs[i];
      if (f[0] === skip || !st[f[0]] || !f[2]) continue;
      if (!has(f[2](r), st[f[0]])) return false;
    }
    if (st.kind === "trials") {
      if (st.policy && skip !== "policy" && !(st.policy in r.verdicts)) return false;
      if (st.a && st.b) {
        if (!(st.a in r.outcomes) || !(st.b in r.outcomes)) return false;
        if (st.disagree && r.outcomes[st.a] === r.outcomes[st.b]) return false;
      }
    } else if (st.policy && skip !== "policy" && r.policy !== st.policy) {
      return false;
    }
    return true;
  };
  Browser.prototype.filtered = function () {
    const self = this;
    return this.rows().filter(function (r) { return self.matches(r, null); });
  };
  Browser.prototype.columns = function () {
    const st = this.state, idx = this.idx;
    if (st.kind === "episodes") return [
      ["", null, function (r) { return thumb(r); }],
      ["episode", function (r) { return r.key; }, function (r) { return el("a", { href: "episode.html#" + r.id }, r.task + " · layout " + pad(r.layout) + " · run " + r.run); }],
      ["fault", function (r) { return r.fault; }, function (r) { return el("code", null, r.fault); }],
      ["layer", function (r) { return r.layer; }, function (r) { return r.layer; }],
      ["policy", function (r) { return r.policy; }, function (r) { return r.policy; }],
      ["first verdict", function (r) { return r.first_verdict; }, function (r) { return [verdictBadge(r.first_verdict), " ", outcomeBadge(r.fired ? (r.detected ? "caught" : "missed") : "not_fired")]; }],
      ["recovered", function (r) { return r.recovered ? 1 : 0; }, function (r) { return truthBadge(r.recovered, "recovered", "not recovered"); }],
      ["stop reason", function (r) { return r.stop_reason; }, function (r) { return r.stop_reason; }],
      ["steps", function (r) { return r.steps; }, function (r) { return r.steps + " (" + r.browser_actions + " actions)"; }]
    ];
    const pols = st.a && st.b ? [st.a, st.b] : (st.policy ? [st.policy] : idx.policies);
    const extra = st.a && st.b ? "&a=" + encodeURIComponent(st.a) + "&b=" + encodeURIComponent(st.b) : "";
    const cols = [
      ["", null, function (r) { return thumb(r); }],
      ["trial", function (r) { return r.key; }, function (r) { return el("a", { href: "trial.html#" + r.id + extra }, r.task + " · layout " + pad(r.layout)); }],
      ["fault", function (r) { return r.fault || ""; }, function (r) { return r.fault ? el("code", null, r.fault) : el("span", { cls: "muted" }, "working (no fault)"); }],
      ["layer", function (r) { return r.layer || ""; }, function (r) { return r.layer || "–"; }],
      ["ledger", function (r) { return r.truth ? 1 : 0; }, function (r) { return [truthBadge(r.truth), r.fired === false ? [" ", outcomeBadge("not_fired")] : null]; }]
    ];
    pols.forEach(function (p, i) {
      const head = st.a && st.b ? (i === 0 ? "A: " : "B: ") + p : p;
      cols.push([head, function (r) { return (r.outcomes[p] || "") + (r.verdicts[p] || ""); }, function (r) {
        return r.verdicts[p] ? [el("span", { cls: "verdict" }, r.verdicts[p]), " ", outcomeBadge(r.outcomes[p])] : "–";
      }]);
    });
    return cols;
  };
  function thumb(r) {
    return r.thumb ? el("img", { cls: "thumb", src: r.thumb, alt: "", loading: "lazy", width: 96, height: 64 }) : "";
  }
  Browser.prototype.renderFilters = function () {
    const self = this, st = this.state, form = document.getElementById("filters");
    form.textContent = "";
    const kind = el("select", { id: "f-kind", name: "kind", onchange: function () { self.set({ kind: this.value }, true); } },
      el("option", { value: "trials", selected: st.kind === "trials" }, "trials (" + this.idx.trials.length + ")"),
      el("option", { value: "episodes", selected: st.kind === "episodes" }, "episodes (" + this.idx.episodes.length + ")"));
    add(form, el("label", null, "show", kind));
    this.fields().forEach(function (f) {
      const name = f[0];
      // Counts: rows passing every other filter, by this field's value.
      const base = self.rows().filter(function (r) { return self.matches(r, name); });
      const counts = {};
      if (name === "policy" && st.kind === "trials") {
        self.idx.policies.forEach(function (p) {
          counts[p] = base.filter(function (r) { return p in r.verdicts; }).length;
        });
      } else {
        base.forEach(function (r) {
          let v = f[2](r);
          if (!Array.isArray(v)) v = [v];
          const seen = {};
          v.forEach(function (x) {
            if (x === undefined || x === null || seen[x]) return;
            seen[x] = true;
            counts[x] = (counts[x] || 0) + 1;
          });
        });
      }
      const values = Object.keys(counts).sort();
      if (st[name] && values.indexOf(st[name]) < 0) { values.push(st[name]); counts[st[name]] = 0; }
      const sel = el("select", { id: "f-" + name, name: name, onchange: function () { const o = {}; o[name] = this.value; self.set(o); } },
        el("option", { value: "" }, "any (" + base.length + ")"),
        values.map(function (v) {
          const label = name === "outcome" && OUTCOME[v] ? OUTCOME[v][0] : v;
          return el("option", { value: v, selected: st[name] === v }, label + " (" + counts[v] + ")");
        }));
      add(form, el("label", null, f[1], sel));
    });
    if (st.kind === "trials") {
      const pick = function (name, label) {
        return el("label", null, label, el("select", { id: "f-" + name, name: name, onchange: function () { const o = {}; o[name] = this.value; self.set(o); } },
          el("option", { value: "" }, "–"),
          self.idx.policies.map(function (p) { return el("option", { value: p, selected: st[name] === p }, p); })));
      };
      add(form, [pick("a", "compare A"), pick("b", "with B"),
        el("label", { cls: "check" }, el("input", { type: "checkbox", id: "f-disagree", checked: !!st.disagree, disabled: !(st.a && st.b), onchange: function () { self.set({ disagree: this.checked ? "1" : "" }); } }), "only where A and B disagree")]);
    }
    add(form, el("button", { type: "button", onclick: function () { self.state = { kind: st.kind }; self.writeHash(); self.render(); } }, "Clear filters"));
  };
  Browser.prototype.set = function (o, reset) {
    const self = this;
    if (reset) this.state = {};
    Object.keys(o).forEach(function (k) { if (o[k]) self.state[k] = o[k]; else delete self.state[k]; });
    if (!this.state.kind) this.state.kind = "trials";
    this.limit = 100;
    this.writeHash();
    this.render();
    const f = document.getElementById("f-" + Object.keys(o)[0]);
    if (f) f.focus();
  };
  Browser.prototype.render = function () {
    const self = this, st = this.state;
    this.renderFilters();
    const cols = this.columns();
    let rows = this.filtered();
    const sortCol = cols.find(function (c) { return c[0] === st.sort && c[1]; });
    if (sortCol) {
      const dir = st.dir === "desc" ? -1 : 1, key = sortCol[1];
      rows = rows.map(function (r, i) { return [key(r), i, r]; }).sort(function (x, y) {
        return x[0] < y[0] ? -dir : x[0] > y[0] ? dir : x[1] - y[1];
      }).map(function (x) { return x[2]; });
    }
    const total = this.rows().length;
    const count = document.getElementById("count");
    count.textContent = rows.length + " of " + total + " " + st.kind + (rows.length > this.limit ? " (showing " + this.limit + ")" : "");
    count.dataset.count = rows.length;
    count.dataset.total = total;
    const table = document.getElementById("list");
    table.textContent = "";
    add(table, el("thead", null, el("tr", null, cols.map(function (c) {
      if (!c[1]) return el("th", { scope: "col" }, el("span", { cls: "sr" }, "screenshot"));
      const sorted = st.sort === c[0] ? (st.dir === "desc" ? "descending" : "ascending") : null;
      return el("th", { scope: "col", "aria-sort": sorted }, el("button", { type: "button", cls: "sort", onclick: function () {
        self.set({ sort: c[0], dir: st.sort === c[0] && st.dir !== "desc" ? "desc" : "" });
      } }, c[0]));
    }))));
    const body = el("tbody");
    rows.slice(0, this.limit).forEach(function (r) {
      body.appendChild(el("tr", { "data-id": r.id }, cols.map(function (c) { return el("td", null, c[2](r)); })));
    });
    table.appendChild(body);
    const more = document.getElementById("more");
    more.hidden = rows.length <= this.limit;
    more.onclick = function () { self.limit += 200; self.render(); };
  };

  // ---- trial page --------------------------------------------------------------------
  function trialPage() {
    const go = function () {
      const h = parseHash();
      const id = h[""];
      if (!id) { fail(new Error("no trial named in the URL (trial.html#<id>)")); return; }
      Promise.all([loadIndex(), load("data/trials/" + id + ".js", "trial:" + id)]).then(function (r) {
        renderTrial(r[0], r[1], h);
      }).catch(fail);
    };
    window.addEventListener("hashchange", go);
    go();
  }
  let keysBound = null;
  function renderTrial(idx, t, h) {
    document.title = "faultline trial " + t.key;
    const main = document.getElementById("main");
    main.textContent = "";
    document.getElementById("title").textContent = t.task + " · layout " + pad(t.layout_index) + " · " + (t.fault || "working (no fault)");
    const i = idx.trials.findIndex(function (r) { return r.id === t.id; });
    const extra = h.a && h.b ? "&a=" + encodeURIComponent(h.a) + "&b=" + encodeURIComponent(h.b) : "";
    const nb = pager(document.getElementById("pager"), idx.trials, i, "trial.html", "trial", extra);
    keysBound = { prev: nb.prev && "trial.html#" + nb.prev.id + extra, next: nb.next && "trial.html#" + nb.next.id + extra };

    add(main, facts([
      ["trial", el("code", null, t.key)],
      ["condition", t.condition],
      t.fault && ["fault", [el("code", null, t.fault), " (stage " + t.stage + ", layer " + (t.layer || "–") + ")"]],
      t.fault && ["fired", t.fired ? "yes: the fault left its witness" : ["no", t.not_fired_reason ? " — " + t.not_fired_reason : ""]],
      ["ledger (truth)", [truthBadge(t.truth.achieved), " ", t.truth.detail]],
      ["decision", t.decision_source],
      ["seeds", "layout " + t.layout_seed + ", trial " + t.trial_seed],
      ["duration", fmt(t.duration_ms) + " ms"]
    ]));

    add(main, section("Screenshots", [
      legend(t.points),
      el("div", { cls: "pair" },
        shot(t.before, "Before: the observation the decision was made from", t.points, idx.image),
        shot(t.after, "After: the observation the policies judged", t.points.filter(function (p) { return p.role !== "parsed"; }), idx.image))
    ], "shots"));

    const verdictRows = t.verdicts.map(function (v) {
      return el("tr", { "data-policy": v.policy }, el("th", { scope: "row" }, v.policy), el("td", null, verdictBadge(v.verdict)), el("td", null, outcomeBadge(v.outcome)), el("td", null, v.message));
    });
    add(main, section("Verdicts", el("div", { cls: "scroll" }, el("table", { cls: "data", id: "verdicts" },
      el("thead", null, el("tr", null, ["policy", "verdict", "against the ledger", "message"].map(function (x) { return el("th", { scope: "col" }, x); }))),
      el("tbody", null, verdictRows,
        el("tr", { cls: "truth" }, el("th", { scope: "row" }, "ledger (truth)"), el("td", null, truthBadge(t.truth.achieved)), el("td"), el("td", null, t.truth.detail))))), "verdicts-h"));

    // Two policies side by side: the paired view behind the paired tables.
    const pols = t.verdicts.map(function (v) { return v.policy; });
    if (pols.length > 1) {
      let a = pols.indexOf(h.a) >= 0 ? h.a : pols[0];
      let b = pols.indexOf(h.b) >= 0 ? h.b : pols[pols.length - 1];
      const cards = el("div", { cls: "cards", id: "compare" });
      const card = function (p, label) {
        const v = t.verdicts.find(function (x) { return x.policy === p; });
        return el("div", { cls: "card" }, el("h3", null, label + ": " + p), facts([
          ["verdict", verdictBadge(v.verdict)], ["against the ledger", outcomeBadge(v.outcome)], ["message", v.message]]));
      };
      const draw = function () {
        cards.textContent = "";
        add(cards, [card(a, "A"), card(b, "B")]);
      };
      const picker = function (label, cur, set) {
        return el("label", null, label + " ", el("select", { onchange: function () { set(this.value); draw(); history.replaceState(null, "", "#" + t.id + "&a=" + encodeURIComponent(a) + "&b=" + encodeURIComponent(b)); } },
          pols.map(function (p) { return el("option", { value: p, selected: p === cur }, p); })));
      };
      draw();
      add(main, section("Compare two policies", [
        el("p", { cls: "filters" }, picker("A", a, function (v) { a = v; }), picker("B", b, function (v) { b = v; })), cards], "compare-h"));
    }

    add(main, section("Decision", [
      el("h3", null, "Reply"), pre(t.reply),
      el("h3", null, "Actions as parsed and as executed"), actionsTable(t.actions, t.executed),
      el("h3", null, "Tool message (what the policies and the agent saw)"), pre(t.tool_message)
    ], "decision"));
    add(main, section("Witness", t.witness ? pre(t.witness) : el("p", { cls: "muted" }, "No witness (working trial or a fault that did not fire)."), "witness"));
    add(main, section("More", [
      el("details", null, el("summary", null, "Observation text"), pre(t.observation_text || "(none)")),
      el("details", null, el("summary", null, "Evidence (page state before and after)"), pre(t.evidence)),
      el("details", null, el("summary", null, "Ledger snapshot"), pre(t.ledger))
    ], "more"));
    add(main, el("p", { cls: "hint" }, "Keys: ", el("kbd", null, "←"), "/", el("kbd", null, "p"), " previous trial, ", el("kbd", null, "→"), "/", el("kbd", null, "n"), " next, ", el("kbd", null, "u"), " back to the run."));
    window.scrollTo(0, 0);
  }

  // ---- episode page ------------------------------------------------------------------
  function episodePage() {
    const go = function () {
      const id = parseHash()[""];
      if (!id) { fail(new Error("no episode named in the URL (episode.html#<id>)")); return; }
      Promise.all([loadIndex(), load("data/episodes/" + id + ".js", "episode:" + id)]).then(function (r) {
        renderEpisode(r[0], r[1]);
      }).catch(fail);
    };
    window.addEventListener("hashchange", go);
    go();
  }
  let currentStep = 0;
  function renderEpisode(idx, e) {
    document.title = "faultline episode " + e.key;
    const main = document.getElementById("main");
    main.textContent = "";
    document.getElementById("title").textContent = e.task + " · " + e.fault + " · " + e.policy + " · layout " + pad(e.layout_index) + " · run " + e.run;
    const i = idx.episodes.findIndex(function (r) { return r.id === e.id; });
    const nb = pager(document.getElementById("pager"), idx.episodes, i, "episode.html", "episode", "");
    keysBound = { prev: nb.prev && "episode.html#" + nb.prev.id, next: nb.next && "episode.html#" + nb.next.id };

    add(main, facts([
      ["episode", el("code", null, e.key)],
      ["outcome", [truthBadge(e.recovered, "recovered", "not recovered"), " ", e.truth_detail]],
      ["stop reason", e.stop_reason + (e.error ? " — " + e.error : "")],
      ["first step", [verdictBadge(e.first_verdict), " ", outcomeBadge(e.fired ? (e.detected_at_first_step ? "caught" : "missed") : "not_fired")]],
      ["agent", e.agent + (e.model_calls ? " (" + e.model_calls + " model calls, " + (e.prompt_tokens || 0) + " + " + (e.completion_tokens || 0) + " tokens)" : "")],
      ["steps", e.steps_taken + " steps, " + e.browser_actions + " browser actions" + (e.budget !== null ? " of a budget of " + e.budget : "")],
      ["seeds", "layout " + e.layout_seed + ", episode " + e.episode_seed],
      ["duration", fmt(e.duration_ms) + " ms"]
    ]));
    const ol = el("ol", { cls: "timeline", id: "timeline" });
    e.steps.forEach(function (s) {
      ol.appendChild(el("li", { cls: "step", id: "step-" + s.step, tabindex: "-1", "data-step": s.step },
        el("h3", null, "Step " + s.step + " — " + (s.source === "decision" ? "the recorded decision, replayed with the fault" : "the agent")),
        el("div", { cls: "step-grid" },
          el("div", null, shot(s.observed, "The observation this reply was written from", s.points, idx.image), legend(s.points)),
          el("div", null,
            el("h4", null, "Reply"), pre(s.reply),
            s.parse_error ? [el("h4", null, "Parse error"), pre(s.parse_error)] : null,
            el("h4", null, "Actions"), actionsTable(s.actions, s.executed),
            el("h4", null, "Tool message"), pre(s.tool_message),
            facts([
              ["policy", [verdictBadge(s.verdict), " ", s.policy_message || ""]],
              ["budget left", s.budget_left === null ? "–" : String(s.budget_left) + (s.step === 0 ? " (the replayed decision is not charged)" : "")],
              ["ledger after", [truthBadge(s.truth.achieved), " ", s.truth.detail]]
            ]),
            s.witness ? el("details", null, el("summary", null, "Witness"), pre(s.witness)) : null,
            el("details", null, el("summary", null, "Ledger events (" + (s.ledger_events.length || 0) + ")"), pre(s.ledger_events)),
            s.observation_text ? el("details", null, el("summary", null, "Observation text"), pre(s.observation_text)) : null))));
    });
    const last = e.steps.length ? e.steps[e.steps.length - 1] : null;
    ol.appendChild(el("li", { cls: "step end", id: "step-end", tabindex: "-1" },
      el("h3", null, "End — " + e.stop_reason),
      el("div", { cls: "step-grid" },
        shot(last && last.screenshot, "The final observation", [], idx.image),
        el("div", null, facts([
          ["stop reason", e.stop_reason + (e.error ? " — " + e.error : "")],
          ["ledger's final verdict", [truthBadge(e.recovered, "recovered", "not recovered"), " ", e.truth_detail]]
        ]), el("details", null, el("summary", null, "Ledger"), pre(e.ledger))))));
    add(main, section("Timeline (" + e.steps.length + " steps)", ol, "steps"));
    add(main, el("p", { cls: "hint" }, "Keys: ", el("kbd", null, "j"), "/", el("kbd", null, "↓"), " next step, ", el("kbd", null, "k"), "/", el("kbd", null, "↑"), " previous step, ", el("kbd", null, "→"), "/", el("kbd", null, "n"), " next episode, ", el("kbd", null, "←"), "/", el("kbd", null, "p"), " previous, ", el("kbd", null, "u"), " back to the run."));
    currentStep = -1;
    window.scrollTo(0, 0);
  }
  function moveStep(d) {
    const items = document.querySelectorAll("#timeline > li");
    if (!items.length) return;
    currentStep = Math.max(0, Math.min(items.length - 1, currentStep + d));
    items.forEach(function (li, i) { li.classList.toggle("current", i === currentStep); });
    items[currentStep].focus();
    items[currentStep].scrollIntoView({ block: "start" });
  }

  const page = document.body.dataset.page;
  const go = function (url) { if (url) location.href = url; };
  if (page === "index") indexPage();
  if (page === "trial" || page === "episode") {
    const keys = {
      ArrowLeft: function () { go(keysBound && keysBound.prev); },
      ArrowRight: function () { go(keysBound && keysBound.next); },
      p: function () { go(keysBound && keysBound.prev); },
      n: function () { go(keysBound && keysBound.next); },
      u: function () { go("index.html"); }
    };
    if (page === "episode") {
      keys.j = keys.ArrowDown = function () { moveStep(1); };
      keys.k = keys.ArrowUp = function () { moveStep(-1); };
    }
    navKeys(keys);
  }
  if (page === "trial") trialPage();
  if (page === "episode") episodePage();
})();
