// symcost's page script (package data, the same for every model): reads the inputs, calls the exported
// formulas F[...] (exact rationals over BigInt, see exact.js) and writes the numbers, the formula view
// and the plot. It parses no formula text and evaluates no code.
"use strict";
(function () {
  const D = JSON.parse(document.getElementById("symcost-data").textContent);
  const S = Object.assign({}, D.defaults);
  const $ = (id) => document.getElementById(id);
  const MATH = "http://www.w3.org/1998/Math/MathML", SVG = "http://www.w3.org/2000/svg";
  const KEYS = ["T", "B", "kv", "w", "gpu", "tp", "pp", "dp", "ep", "plot", "row"];

  // -- inputs ------------------------------------------------------------------------------------
  function parseSize(text) { // "131072", "128K" (2^10), "1M" (2^20); null otherwise
    const m = /^\s*([0-9]{1,9})\s*([kKmM]?)\s*$/.exec(String(text));
    if (!m) return null;
    const n = Number(m[1]) * (m[2] === "" ? 1 : /k/i.test(m[2]) ? 1024 : 1048576);
    return Number.isSafeInteger(n) && n >= 1 ? n : null;
  }
  function setFrom(key, value) { // a fragment or input value, checked against what the page offers
    if (key === "T") { const n = parseSize(value); if (n === null || n > D.T_max) return false; S.T = n; return true; }
    if (key === "B") { const n = parseSize(value); if (n === null || n > 4096) return false; S.B = n; return true; }
    if (key === "row") { if (!document.querySelector('.fv[data-key="' + CSS.escape(value) + '"]')) return false; S.row = value; return true; }
    const opts = D.choices[key];
    if (!opts) return false;
    const hit = opts.find((o) => String(o) === String(value));
    if (hit === undefined) return false;
    S[key] = hit;
    return true;
  }
  function readHash() {
    const bad = [];
    for (const [k, v] of new URLSearchParams(location.hash.slice(1))) {
      if (KEYS.includes(k) && !setFrom(k, v)) bad.push(k + "=" + v);
    }
    return bad;
  }
  function writeHash() {
    const p = new URLSearchParams();
    for (const k of KEYS) if (String(S[k]) !== String(D.defaults[k]) || k === "T" || k === "B") p.set(k, S[k]);
    const h = "#" + p.toString();
    if (location.hash !== h) { try { history.replaceState(null, "", h); } catch (e) { location.hash = h; } }
  }
  function syncInputs() {
    $("in-T").value = S.T;
    $("in-T-range").value = Math.log2(S.T).toFixed(2);
    $("in-B").value = S.B;
    for (const k of ["kv", "w", "gpu", "tp", "pp", "dp", "ep", "plot", "row"]) { const el = $("in-" + k); if (el) el.value = S[k]; }
  }

  // -- numbers -----------------------------------------------------------------------------------
  const big = (x) => (typeof x === "bigint" ? x : x.d === 1n ? x.n : null);
  const digits = (x) => String(x).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  const asNum = (x) => (typeof x === "bigint" ? Number(x) : Number(x.n) / Number(x.d));
  function human(v, unit) {
    const x = asNum(v);
    if (unit === "B") {
      if (Math.abs(x) >= 2 ** 30) return (x / 2 ** 30).toFixed(2) + " GiB (" + (x / 1e9).toFixed(2) + " GB)";
      if (Math.abs(x) >= 2 ** 20) return (x / 2 ** 20).toFixed(2) + " MiB";
      return x.toLocaleString("en-US") + " B";
    }
    const units = [[1e15, "P"], [1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "K"]];
    for (const [s, p] of units) if (Math.abs(x) >= s) return (x / s).toFixed(2) + " " + p + unitName(unit);
    return x.toLocaleString("en-US") + " " + unitName(unit);
  }
  const unitName = (u) => (u === "params" ? "" : u);
  const key = (...parts) => parts.join("|");
  // the layout tables hold one entry per (tp, pp, dp, ep) offered, in the order of the choices
  function layoutIndex() {
    const c = D.choices, at = (k) => c[k].indexOf(S[k]);
    return ((at("tp") * c.pp.length + at("pp")) * c.dp.length + at("dp")) * c.ep.length + at("ep");
  }
  function serveEnv() {
    const lay = D.serve_layouts[layoutIndex()];
    if (typeof lay === "number") return { error: "serving layout: " + D.refusals[lay] };
    const [N_tp, N_pp, N_dp, N_ep, x_ep] = lay.map(BigInt);  // x_ep: whole experts (vLLM expert parallelism)
    return { T: BigInt(S.T), B: BigInt(S.B), N_tp, N_pp, N_dp, N_ep, x_ep, M_gpu: BigInt(D.cards[S.gpu].budget), $slots: slots() };
  }
  function trainEnv() {
    const lay = D.train_layouts[layoutIndex()];
    if (lay > 0) return { error: "training layout: " + D.refusals[lay - 1] };
    if (!D.train_pps.includes(S.pp)) return { error: "training: no pipeline of " + S.pp + " stages" };
    const [tp, pp, dp, ep] = [S.tp, S.pp, S.dp, S.ep].map(BigInt);
    return { T: BigInt(S.T), B: BigInt(S.B), N_tp: tp, N_pp: pp, N_dp: dp, N_ep: ep };
  }
  const base = () => ({ T: BigInt(S.T), B: BigInt(S.B) });
  // the serving formulas of the weights and KV dtypes and of the card's engine class (its step size M, sampler
  // size S, NVLink communicators: serving.plan.engine_formulas for that card)
  const sv = () => "w=" + S.w + "|kv=" + S.kv + "|e=" + D.cards[S.gpu].e;
  // the formulas (by key) of those parts, named for the serving formulas' slots (@weights, @need, ...)
  const slots = () => Object.fromEntries(D.serve_slot_names.map((n, i) => [n, D.serve_slots[sv()][i]]));
  const part = (e, name) => F[e.$slots[name]](e);
  const GiB = (x) => (asNum(x) / 2 ** 30).toFixed(2) + " GiB";
  // the KV cache on the card at the layout, or why there is none (never a 0 that reads as a capacity)
  function kvCapacity(e) {
    const left = F.kv_available(e);
    const fixed = ["weights", "activations", "overhead"].map((k) => part(e, k));
    const why = "weights " + GiB(fixed[0]) + " + activations " + GiB(fixed[1]) + " + non-torch " + GiB(fixed[2]);
    const at = " on " + S.gpu + " at TP " + e.N_tp + (e.N_pp > 1n ? ", PP " + e.N_pp : "");
    if (left <= 0n) return { error: "does not fit: " + why + " exceed the budget " + GiB(e.M_gpu) + at };
    const tokens = F.kv_capacity(e);
    if (tokens === 0n) return { error: "does not fit: " + GiB(left) + " left after " + why + at + ", below one KV block" };
    return tokens;
  }
  // each summary row: its value at the inputs (a BigInt or {n, d}), or {error}
  const ROWS = {
    params_total: () => F.params_total({}),
    params_active: () => F.params_active({}),
    prefill_flops: () => F.prefill_flops(base()),
    decode_flops: () => F.decode_flops(base()),
    kv_per_token: () => { const f = F[key("k=kv_per_token", "kv=" + S.kv)]; return f ? f(base()) : { error: "not linear in T" }; },
    kv_at_T: () => F[key("k=kv_at_T", "kv=" + S.kv)](base()),
    weights_stored: () => F[key("k=weights_stored", "w=" + S.w)]({}),
    serve_per_gpu: () => { const e = serveEnv(); return e.error ? e : F.serve_per_gpu(e); },
    kv_capacity: () => { const e = serveEnv(); return e.error ? e : kvCapacity(e); },
    serve_gpus: () => {
      const e = { T: BigInt(S.T), B: BigInt(S.B), N_pp: 1n, N_dp: 1n, N_ep: 1n, x_ep: 0n, M_gpu: BigInt(D.cards[S.gpu].budget), $slots: slots() };
      for (const tp of D.serve_tps) if (F.serve_max_batch(Object.assign({}, e, { N_tp: BigInt(tp) })) >= BigInt(S.B)) return BigInt(tp);
      return { error: "does not fit: no tensor-parallel size up to " + D.serve_tps[D.serve_tps.length - 1] + " of " + S.gpu + " holds B = " + S.B + " requests of T = " + digits(S.T) };
    },
    train_per_gpu: () => { const e = trainEnv(); return e.error ? e : F["train_per_gpu|pp=" + S.pp](e); },
    // the smallest power of two N whose FSDP setup (ZeRO-3, full recompute, dp = N) fits the card's training
    // budget (usable memory less the headroom): a search over N of one formula
    train_gpus: () => {
      if (!F.train_fsdp_per_gpu) return { error: "no FSDP setup of this model" };
      const room = BigInt(D.cards[S.gpu].train);
      for (const n of D.fsdp_ns) {
        const v = F.train_fsdp_per_gpu({ T: BigInt(S.T), B: BigInt(S.B), N_tp: 1n, N_pp: 1n, N_dp: BigInt(n), N_ep: 1n });
        if (v <= room) return BigInt(n);
      }
      return { error: "does not fit: no power of two up to " + D.fsdp_ns[D.fsdp_ns.length - 1] + " GPUs of " + S.gpu + " holds it" };
    },
  };
  // a rule of thumb's ratio at the inputs, where it depends on them
  const RATIOS = {
    rule_2n: () => { const p = F.prefill_flops(base()); return asNum(p) / (S.T * S.B) / (2 * asNum(F.params_active({}))); },
    // train's flops_per_step (seq T, B·dp sequences) per token, against 6N
    rule_6n: () => { const n = S.B * S.dp, f = F.train_flops({ T: BigInt(S.T), B: BigInt(n) }); return asNum(f) / (S.T * n) / (6 * asNum(F.params_active({}))); },
  };
  const value = (k) => { try { return ROWS[k] ? ROWS[k]() : null; } catch (e) { return { error: e.message }; } };

  function renderSummary() {
    const errors = new Set();
    for (const tr of document.querySelectorAll("table.summary tbody tr")) {
      const k = tr.dataset.key, unit = D.rows.find((r) => r.key === k).unit;
      const cell = tr.querySelector("td.v"), h = tr.querySelector("td.h");
      if (RATIOS[k]) { const r = RATIOS[k](); tr.querySelector(".ratio").textContent = r.toFixed(4); }
      if (!ROWS[k]) continue;
      const v = value(k);
      if (v === null) continue;
      h.classList.toggle("why", Boolean(v.error));
      if (v.error) { cell.dataset.value = ""; cell.textContent = "—"; h.textContent = v.error; errors.add(v.error); continue; }
      const b = big(v);
      cell.dataset.value = b === null ? "" : String(b);
      cell.textContent = b === null ? asNum(v).toPrecision(6) : digits(b);
      if (!tr.classList.contains("rule")) h.textContent = unit === "GPUs" || unit === "tokens" ? "" : human(v, unit);
    }
    $("input-error").textContent = [...errors].filter((e) => /layout|pipeline/.test(e)).join("; ");
  }
  function fnFor(fn) { // a component's function for the current inputs (cache terms vary with the KV dtype)
    return F[fn] || F[key("k=" + fn, "kv=" + S.kv)];
  }
  function renderDerivation() {
    for (const table of document.querySelectorAll("table.comp")) {
      const rows = [...table.querySelectorAll("tbody tr")];
      const vals = rows.map((tr) => fnFor(tr.dataset.fn)(base()));
      const total = vals.reduce((a, b) => a + asNum(b), 0);
      rows.forEach((tr, i) => {
        const b = big(vals[i]), cell = tr.querySelector("td.v");
        cell.dataset.value = String(b);
        cell.textContent = digits(b);
        tr.querySelector("td.share").textContent = total ? (100 * asNum(vals[i]) / total).toFixed(2) + "%" : "";
      });
    }
  }
  function envFor(k) {
    if (k === "train_per_gpu") return trainEnv();
    if (k === "serve_per_gpu" || k === "kv_capacity") return serveEnv();
    return base();
  }
  function renderFormulaView() {
    for (const fv of document.querySelectorAll(".fv")) fv.hidden = fv.dataset.key !== S.row;
    const fv = document.querySelector('.fv[data-key="' + CSS.escape(S.row) + '"]');
    if (!fv) return;
    const env = envFor(S.row), out = fv.querySelector(".subst");
    const m = fv.querySelector(".plugged math").cloneNode(true);
    // a formula of one variant (card class, dtypes, pipeline size): substituted only while the inputs choose it
    const variant = fv.dataset.variant ? JSON.parse(fv.dataset.variant) : {};
    const cur = { w: S.w, kv: S.kv, e: D.cards[S.gpu].e, pp: S.pp };
    const other = Object.keys(variant).filter((k) => String(variant[k]) !== String(cur[k]));
    if (other.length) {
      const p = document.createElement("p");
      p.className = "help";
      p.textContent = "the inputs choose another variant of this formula (" + other.map((k) => k === "e" ? "card" : k).join(", ") + " changed); the value below is that variant's";
      out.replaceChildren(p);
    } else if (!env.error) {
      const dot = () => { const o = document.createElementNS(MATH, "mo"); o.textContent = "\u00b7"; return o; };
      const factor = (e) => e && e.localName !== "mo";
      for (const el of m.querySelectorAll("[data-sym]")) {
        const mn = document.createElementNS(MATH, "mn");
        mn.textContent = String(env[el.dataset.sym]);
        el.replaceWith(mn);
        // a number next to another factor needs a visible product sign: N_ep N_tp -> 1 · 8, not 18
        const row = mn.parentElement && (mn.parentElement.localName === "mrow" || mn.parentElement.localName === "math");
        if (!row) continue; // a fraction's or a script's parts keep their arity: 6/N_pp -> 6/2
        for (const [side, where] of [[mn.previousElementSibling, "before"], [mn.nextElementSibling, "after"]]) {
          if (side && side.localName === "mo" && side.textContent === "\u2062") side.textContent = "\u00b7";
          else if (factor(side)) mn[where](dot());
        }
      }
    }
    if (!other.length) out.replaceChildren(m);
    const v = value(S.row);
    fv.querySelector(".fv-value").textContent = v === null ? "" : v.error ? v.error : (big(v) === null ? asNum(v).toPrecision(8) : digits(big(v)));
  }

  // -- the plot ------------------------------------------------------------------------------------
  function curves() { // [{name, at(T) -> value}], the total first
    const p = S.plot;
    const sect = (name) => D.sections.find((s) => s.key === name);
    const parts = (name) => (sect(name) ? sect(name).components : []).map((c) => ({ name: c, at: (T) => fnFor(name + "/" + c)({ T, B: BigInt(S.B) }) }));
    if (p === "prefill_flops") return [{ name: "total", at: (T) => F.prefill_flops({ T, B: BigInt(S.B) }) }, ...parts("prefill")];
    if (p === "decode_flops") return [{ name: "total", at: (T) => F.decode_flops({ T, B: BigInt(S.B) }) }, ...parts("decode")];
    if (p === "kv_at_T") return [{ name: "total", at: (T) => F[key("k=kv_at_T", "kv=" + S.kv)]({ T, B: BigInt(S.B) }) }, ...parts("cache")];
    const e = serveEnv();
    if (e.error) return [];
    const at = (f) => (T) => f(Object.assign({}, e, { T }));
    return [{ name: "total", at: at(F.serve_per_gpu) }, ...["weights", "activations", "overhead"].map((k) => ({ name: k, at: at(F[e.$slots[k]]) })),
      { name: "kv_cache", at: at(F["serve/kv_cache"]) },
      { name: "budget " + S.gpu, at: () => BigInt(D.cards[S.gpu].budget) }];
  }
  function crossing(a, b, lo, hi) { // the first integer T in (lo, hi] where sign(a - b) changes, exactly
    const sgn = (T) => { const x = a.at(T), y = b.at(T); const d = asNumCmp(x, y); return d; };
    const s0 = sgn(lo);
    while (hi - lo > 1n) { const mid = (lo + hi) / 2n; if (sgn(mid) === s0) lo = mid; else hi = mid; }
    return hi;
  }
  function asNumCmp(x, y) { // exact comparison of two BigInt / {n, d} values
    const X = typeof x === "bigint" ? { n: x, d: 1n } : x, Y = typeof y === "bigint" ? { n: y, d: 1n } : y;
    const s = X.n * Y.d - Y.n * X.d;
    return s < 0n ? -1 : s > 0n ? 1 : 0;
  }
  const COLORS = ["#111", "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];
  function el(name, attrs, text) {
    const e = document.createElementNS(SVG, name);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function renderPlot() {
    const svg = $("plot");
    svg.replaceChildren();
    const cs = curves().slice(0, 8);
    if (!cs.length) { svg.appendChild(el("text", { x: 20, y: 40 }, "no layout: " + (serveEnv().error || ""))); return; }
    const n = 48, lmax = Math.log2(D.T_max), Ts = [];
    for (let i = 0; i <= n; i++) Ts.push(BigInt(Math.max(1, Math.round(2 ** (lmax * i / n)))));
    const ys = cs.map((c) => Ts.map((T) => asNum(c.at(T))));
    const pos = ys.flat().filter((v) => v > 0);
    const ymin = Math.log10(Math.min(...pos)), ymax = Math.log10(Math.max(...pos)) + 0.05;
    const X0 = 70, X1 = 600, Y0 = 300, Y1 = 20;
    const sx = (T) => X0 + (X1 - X0) * Math.log2(Number(T)) / lmax;
    const sy = (v) => (v > 0 ? Y0 - (Y0 - Y1) * (Math.log10(v) - ymin) / Math.max(ymax - ymin, 1e-9) : Y0);
    svg.appendChild(el("rect", { x: X0, y: Y1, width: X1 - X0, height: Y0 - Y1, fill: "none", stroke: "#999" }));
    for (let e = Math.ceil(ymin); e <= Math.floor(ymax); e++) {
      svg.appendChild(el("line", { x1: X0, x2: X1, y1: sy(10 ** e), y2: sy(10 ** e), stroke: "#eee" }));
      svg.appendChild(el("text", { x: X0 - 6, y: sy(10 ** e) + 4, "text-anchor": "end", "font-size": 11 }, "1e" + e));
    }
    for (let e = 0; e <= lmax; e += 2) {
      svg.appendChild(el("text", { x: sx(2 ** e), y: Y0 + 16, "text-anchor": "middle", "font-size": 11 }, e < 10 ? String(2 ** e) : e < 20 ? 2 ** (e - 10) + "K" : 2 ** (e - 20) + "M"));
    }
    svg.appendChild(el("text", { x: (X0 + X1) / 2, y: Y0 + 34, "text-anchor": "middle", "font-size": 12 }, "T (tokens, log scale)"));
    cs.forEach((c, i) => {
      const pts = Ts.map((T, j) => sx(T).toFixed(1) + "," + sy(ys[i][j]).toFixed(1)).join(" ");
      svg.appendChild(el("polyline", { points: pts, fill: "none", stroke: COLORS[i % COLORS.length], "stroke-width": i === 0 ? 2.5 : 1.5, "stroke-dasharray": c.name.startsWith("budget") ? "6 3" : "none" }));
      svg.appendChild(el("text", { x: X1 + 8, y: 30 + 16 * i, fill: COLORS[i % COLORS.length], "font-size": 12 }, c.name));
    });
    const marks = [];
    const same = (i, j) => ys[i].every((v, k) => v === ys[j][k]);
    const distinct = []; // curves equal at every sample (keys and values) cross nothing new
    for (let i = 1; i < cs.length; i++) if (!distinct.some((h) => same(h, i))) distinct.push(i);
    for (const i of distinct) for (const j of distinct) {
      if (j <= i) continue;
      for (let k = 0; k < n && marks.length < 8; k++) {
        const d0 = Math.sign(ys[i][k] - ys[j][k]), d1 = Math.sign(ys[i][k + 1] - ys[j][k + 1]);
        if (d0 !== 0 && d1 !== 0 && d0 !== d1 && Ts[k + 1] > Ts[k]) {
          const T = crossing(cs[i], cs[j], Ts[k], Ts[k + 1]);
          marks.push({ T, v: asNum(cs[i].at(T)), label: cs[i].name + " = " + cs[j].name });
        }
      }
    }
    const list = [];
    marks.forEach((m, i) => {
      svg.appendChild(el("circle", { cx: sx(m.T), cy: sy(m.v), r: 5, fill: "none", stroke: "#000", "stroke-width": 1.5, class: "crossover", "data-T": String(m.T) }));
      svg.appendChild(el("text", { x: sx(m.T) + 7, y: sy(m.v) - 7, "font-size": 11 }, String(i + 1)));
      const li = document.createElement("li");
      li.textContent = (i + 1) + ": " + m.label + " at T = " + digits(m.T);
      list.push(li);
    });
    $("crossovers").replaceChildren(...list);
    svg.appendChild(el("line", { x1: sx(S.T), x2: sx(S.T), y1: Y1, y2: Y0, stroke: "#555", "stroke-dasharray": "3 3" }));
  }

  // -- wiring ------------------------------------------------------------------------------------
  function render() {
    writeHash();
    $("at").textContent = "at T = " + digits(S.T) + ", B = " + S.B + ", KV " + S.kv + ", weights " + (S.w === "ckpt" ? "checkpoint" : S.w) + ", " + S.gpu + ", TP" + S.tp + "·PP" + S.pp + "·DP" + S.dp + "·EP" + S.ep;
    syncInputs();
    renderSummary();
    renderDerivation();
    renderFormulaView();
    renderPlot();
    document.body.dataset.rendered = String(Number(document.body.dataset.rendered || 0) + 1);
  }
  // a section's total written once, as a formula-view row's formula: a copy of that element
  for (const div of document.querySelectorAll(".total[data-same]")) {
    const src = document.querySelector('.fv[data-key="' + CSS.escape(div.dataset.same) + '"] math');
    if (src) div.replaceChildren(src.cloneNode(true));
  }
  const bad = readHash();
  $("in-T").addEventListener("change", (ev) => { if (setFrom("T", ev.target.value)) { ev.target.classList.remove("bad"); render(); } else ev.target.classList.add("bad"); });
  $("in-T-range").addEventListener("input", (ev) => { S.T = Math.min(D.T_max, Math.max(1, Math.round(2 ** Number(ev.target.value)))); render(); });
  $("in-B").addEventListener("change", (ev) => { if (setFrom("B", ev.target.value)) render(); });
  for (const k of ["kv", "w", "gpu", "tp", "pp", "dp", "ep", "plot", "row"]) {
    const e = $("in-" + k);
    if (e) e.addEventListener("change", (ev) => { if (setFrom(k, ev.target.value)) render(); });
  }
  window.addEventListener("hashchange", () => { readHash(); render(); });
  render();
  if (bad.length) $("input-error").textContent = "ignored in the link: " + bad.join(", ");
})();
