// fencecheck run report: the timeline, the latency and throughput charts, and the links
// from the findings to the ops. Plain script, no dependencies, no network. Text from the
// history is only ever set with textContent, never parsed as HTML.
(function () {
  'use strict';
  var D = JSON.parse(document.getElementById('fc-data').textContent);
  var KIND = ['acquire', 'release', 'read', 'write'];
  var KLET = ['A', 'L', 'R', 'W'];
  var STATUS = ['ok', 'fail', 'unknown', 'rejected', 'stale write accepted'];
  var C = {
    ok: '#4f7fd1', okRead: '#8fb0e8', okLock: '#3d6fb0', fail: '#a8adb3', unknown: '#9c5fc0',
    rejected: '#ef9a1a', stale: '#d32020', belief: '#d7ecd9', beliefLine: '#9cc9a1',
    fault: 'rgba(229,115,115,0.16)', faultOwn: 'rgba(229,115,115,0.42)', faultLabel: '#a12a2a',
    gap: '#d32020', lost: '#7a1f1f', grid: '#eceef1', axis: '#666', laneAlt: '#f7f8fa', select: '#1f5fbf'
  };
  var GUTTER = 86, AXIS = 22, GAPROW = 9, LANE = 46;

  var ops = D.ops.map(function (a) {
    return { id: a[0], lane: a[1], kind: a[2], call: a[3], ret: a[4], st: a[5], token: a[6], value: a[7], readId: a[8], err: a[9] };
  });
  // Faults that overlap in time get label rows of their own.
  var faultRow = [], rowEnds = [];
  D.faults.map(function (f, i) { return i; })
    .sort(function (a, b) { return D.faults[a].start - D.faults[b].start; })
    .forEach(function (i) {
      var f = D.faults[i], r = 0;
      while (r < rowEnds.length && rowEnds[r] > f.start) r++;
      rowEnds[r] = f.end < 0 ? Infinity : f.end;
      faultRow[i] = r;
    });
  var FAULTROW = 14 * Math.max(1, rowEnds.length) + 4;
  var byId = new Map();
  ops.forEach(function (o) { byId.set(o.id, o); });
  var lanes = D.lanes;
  var t0 = D.start, t1 = Math.max(D.end, D.start + 1);
  function endOf(o) { return o.ret < 0 ? t1 : o.ret; }

  // Per lane: ops that returned, sorted by call, with the running maximum of their
  // ends (for a binary search of the visible ones), and the unknown ops apart.
  var laneOps = lanes.map(function () { return { done: [], maxEnd: [], unknown: [] }; });
  ops.forEach(function (o) {
    var l = laneOps[o.lane];
    if (!l) return;
    (o.ret < 0 ? l.unknown : l.done).push(o);
  });
  laneOps.forEach(function (l) {
    l.done.sort(function (a, b) { return a.call - b.call; });
    var m = -Infinity;
    l.done.forEach(function (o) { m = Math.max(m, o.ret); l.maxEnd.push(m); });
  });
  var beliefsByLane = lanes.map(function () { return []; });
  D.beliefs.forEach(function (b) { if (beliefsByLane[b.lane]) beliefsByLane[b.lane].push(b); });
  var staleOps = ops.filter(function (o) { return o.st === 4; });
  var fewStale = D.pairs.filter(function (p) { return p.kind === 'stale'; }).length <= 4;
  var pairOf = new Map(); // op id -> pair index
  D.pairs.forEach(function (p, i) { if (!pairOf.has(p.a)) pairOf.set(p.a, i); if (p.b && !pairOf.has(p.b)) pairOf.set(p.b, i); });

  var view = { a: t0, b: t1 };
  var selected = { op: null, pair: D.focus };
  var drawn = 0;

  var tl = document.getElementById('timeline-canvas');
  var ov = document.getElementById('overview');
  var lat = document.getElementById('latency-canvas');
  var thr = document.getElementById('throughput-canvas');
  var tip = document.getElementById('tooltip');
  var details = document.getElementById('op-details');
  var rangeLabel = document.getElementById('view-range');
  var TLH = AXIS + FAULTROW + GAPROW + lanes.length * LANE + 6;
  tl.style.height = TLH + 'px';
  ov.style.height = '22px';
  lat.style.height = '180px';
  thr.style.height = '130px';
  tl.tabIndex = 0;

  // ---- formatting ----
  function fmtT(ns) {
    if (ns === 0) return '0 s';
    var a = Math.abs(ns);
    if (a >= 1e10) return (ns / 1e9).toFixed(1) + ' s';
    if (a >= 1e9) return (ns / 1e9).toFixed(2) + ' s';
    if (a >= 1e7) return (ns / 1e6).toFixed(0) + ' ms';
    if (a >= 1e6) return (ns / 1e6).toFixed(1) + ' ms';
    if (a >= 1e3) return (ns / 1e3).toFixed(0) + ' µs';
    return ns + ' ns';
  }
  function tickLabel(t, step) {
    if (step >= 1e7) return (t / 1e9).toFixed(Math.max(0, Math.ceil(9 - Math.log10(step) - 1e-9))) + ' s';
    return (t / 1e6).toFixed(Math.max(0, Math.ceil(6 - Math.log10(step) - 1e-9))) + ' ms';
  }
  function niceStep(span, px) {
    var raw = span / Math.max(1, px / 90);
    var p = Math.pow(10, Math.floor(Math.log10(raw)));
    var m = raw / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
  }

  // ---- canvas helpers ----
  function setup(c) {
    var dpr = window.devicePixelRatio || 1;
    var w = Math.max(200, c.clientWidth), h = c.clientHeight;
    if (c.width !== Math.round(w * dpr) || c.height !== Math.round(h * dpr)) {
      c.width = Math.round(w * dpr);
      c.height = Math.round(h * dpr);
    }
    var g = c.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, w, h);
    g.font = '11px system-ui, sans-serif';
    g.textBaseline = 'middle';
    return { g: g, w: w, h: h, pw: w - GUTTER - 8 };
  }
  function xOf(t, s) { return GUTTER + (t - view.a) / (view.b - view.a) * s.pw; }
  function tOf(x, s) { return view.a + (x - GUTTER) / s.pw * (view.b - view.a); }
  function clipPlot(s, top, bottom) {
    s.g.save();
    s.g.beginPath();
    s.g.rect(GUTTER, top, s.pw, bottom - top);
    s.g.clip();
  }
  function axis(s, y, labels) {
    var g = s.g, step = niceStep(view.b - view.a, s.pw);
    g.strokeStyle = C.grid;
    g.fillStyle = C.axis;
    g.textAlign = 'center';
    g.lineWidth = 1;
    for (var t = Math.ceil(view.a / step) * step; t <= view.b; t += step) {
      var x = Math.round(xOf(t, s)) + 0.5;
      g.beginPath(); g.moveTo(x, y); g.lineTo(x, s.h); g.stroke();
      if (labels) g.fillText(tickLabel(t, step), x, 11);
    }
  }
  function shadeFaults(s, top, bottom, own) {
    var g = s.g;
    D.faults.forEach(function (f) {
      var x0 = xOf(f.start, s), x1 = xOf(f.end < 0 ? t1 : f.end, s);
      if (x1 < GUTTER || x0 > GUTTER + s.pw) return;
      g.fillStyle = C.fault;
      g.fillRect(x0, top, Math.max(2, x1 - x0), bottom - top);
      if (own && f.lane >= 0) {
        var y = own(f.lane);
        g.fillStyle = C.faultOwn;
        g.fillRect(x0, y, Math.max(2, x1 - x0), LANE);
      }
    });
  }
  // ---- the timeline ----
  var lanesTop = AXIS + FAULTROW + GAPROW;
  function laneY(i) { return lanesTop + i * LANE; }
  function opBox(o, s) {
    var y = laneY(o.lane), x0 = xOf(o.call, s), x1 = xOf(o.ret < 0 ? o.call : o.ret, s);
    var top, h;
    if (o.kind === 3) { top = y + 17; h = 22; } else if (o.kind === 2) { top = y + 22; h = 12; } else { top = y + 8; h = 7; }
    var w = Math.max(o.ret < 0 ? 6 : 1.5, x1 - x0);
    if (o.st === 4) w = Math.max(w, 4);
    return { x: x0, y: top, w: w, h: h };
  }
  function colorOf(o) {
    switch (o.st) {
      case 0: return o.kind === 2 ? C.okRead : o.kind === 3 ? C.ok : C.okLock;
      case 1: return C.fail;
      case 2: return C.unknown;
      case 3: return C.rejected;
      default: return C.stale;
    }
  }
  function firstVisible(l) {
    // first index whose running max end reaches the view
    var lo = 0, hi = l.maxEnd.length;
    while (lo < hi) { var m = (lo + hi) >> 1; if (l.maxEnd[m] < view.a) lo = m + 1; else hi = m; }
    return lo;
  }
  function drawOp(g, o, s) {
    var b = opBox(o, s);
    g.fillStyle = colorOf(o);
    g.fillRect(b.x, b.y, b.w, b.h);
    if (b.w > 14 && o.kind >= 2) {
      var label = KLET[o.kind];
      if (b.w > 60) label += ' t' + o.token + (o.value ? ' ' + o.value : '');
      g.save();
      g.beginPath(); g.rect(b.x, b.y, b.w, b.h); g.clip();
      g.fillStyle = o.st === 0 && o.kind === 2 ? '#1d2b45' : '#fff';
      g.textAlign = 'left';
      g.fillText(label, b.x + 3, b.y + b.h / 2);
      g.restore();
    }
    if (o.ret < 0) {
      g.strokeStyle = C.unknown; g.setLineDash([4, 3]); g.lineWidth = 1.2;
      g.beginPath(); g.moveTo(b.x, b.y + b.h + 2); g.lineTo(xOf(t1, s), b.y + b.h + 2); g.stroke();
      g.setLineDash([]);
    }
    drawn++;
  }
  function outline(g, o, s, color, width) {
    var b = opBox(o, s);
    g.strokeStyle = color; g.lineWidth = width;
    g.strokeRect(b.x - 1.5, b.y - 1.5, b.w + 3, b.h + 3);
  }
  function marker(g, o, s, text, color) {
    var b = opBox(o, s), x = b.x + b.w / 2, y = laneY(o.lane) + 2;
    g.fillStyle = color;
    g.beginPath(); g.moveTo(x - 6, y); g.lineTo(x + 6, y); g.lineTo(x, y + 7); g.closePath(); g.fill();
    if (text) {
      g.font = 'bold 11px system-ui, sans-serif';
      var wt = g.measureText(text).width;
      g.textAlign = x + 10 + wt > GUTTER + s.pw ? 'right' : 'left';
      var tx = g.textAlign === 'right' ? x - 8 : x + 8;
      g.fillStyle = 'rgba(255,255,255,0.85)';
      g.fillRect(g.textAlign === 'right' ? tx - wt - 2 : tx - 2, y - 1, wt + 4, 12);
      g.fillStyle = color;
      g.fillText(text, tx, y + 5);
      g.font = '11px system-ui, sans-serif';
    }
  }
  function arrow(g, from, to, s, color, text) {
    var a = opBox(from, s), b = opBox(to, s);
    var x0 = a.x + a.w / 2, y0 = a.y, x1 = b.x + b.w / 2, y1 = b.y;
    var top = Math.min(y0, y1) - 22;
    g.strokeStyle = color; g.lineWidth = 2;
    g.beginPath(); g.moveTo(x0, y0); g.bezierCurveTo(x0, top, x1, top, x1, y1 - 3); g.stroke();
    g.fillStyle = color;
    g.beginPath(); g.moveTo(x1 - 5, y1 - 9); g.lineTo(x1 + 5, y1 - 9); g.lineTo(x1, y1 - 2); g.closePath(); g.fill();
    if (text) {
      g.textAlign = 'center';
      g.font = 'bold 11px system-ui, sans-serif';
      var wt = g.measureText(text).width, mx = (x0 + x1) / 2, my = top + 4;
      g.fillStyle = 'rgba(255,255,255,0.9)';
      g.fillRect(mx - wt / 2 - 3, my - 7, wt + 6, 14);
      g.fillStyle = color;
      g.fillText(text, mx, my);
      g.font = '11px system-ui, sans-serif';
    }
  }

  function drawTimeline() {
    var s = setup(tl), g = s.g;
    drawn = 0;
    // lane backgrounds and labels
    for (var i = 0; i < lanes.length; i++) {
      var y = laneY(i);
      g.fillStyle = i % 2 ? C.laneAlt : '#fff';
      g.fillRect(0, y, s.w, LANE);
      g.fillStyle = lanes[i].kind === 'node' ? C.faultLabel : '#333';
      g.textAlign = 'left';
      g.font = '600 12px system-ui, sans-serif';
      g.fillText(lanes[i].label, 8, y + LANE / 2);
      g.font = '11px system-ui, sans-serif';
    }
    g.fillStyle = '#888';
    g.textAlign = 'left';
    g.fillText('faults', 8, AXIS + FAULTROW / 2);
    g.fillText('2 holders', 8, AXIS + FAULTROW + GAPROW / 2);
    axis(s, AXIS, true);
    clipPlot(s, AXIS, s.h);
    shadeFaults(s, AXIS, s.h, laneY);
    // fault labels
    g.textAlign = 'left';
    D.faults.forEach(function (f, i) {
      var x0 = Math.max(GUTTER, xOf(f.start, s)), x1 = xOf(f.end < 0 ? t1 : f.end, s);
      if (x1 < GUTTER || x0 > GUTTER + s.pw) return;
      g.fillStyle = C.faultLabel;
      g.font = 'bold 11px system-ui, sans-serif';
      g.fillText(f.kind + ' ' + f.target + (f.end < 0 ? ' (never healed)' : ''), x0 + 3, AXIS + 2 + 14 * faultRow[i] + 7);
      g.font = '11px system-ui, sans-serif';
    });
    // two believers at once
    D.gaps.forEach(function (gp) {
      var x0 = xOf(gp[0], s), x1 = xOf(gp[1], s);
      if (x1 < GUTTER || x0 > GUTTER + s.pw) return;
      g.fillStyle = 'rgba(211,32,32,0.75)';
      g.fillRect(x0, AXIS + FAULTROW + 1, Math.max(2, x1 - x0), GAPROW - 2);
    });
    // beliefs
    for (i = 0; i < lanes.length; i++) {
      y = laneY(i);
      beliefsByLane[i].forEach(function (b) {
        if (b.end < view.a || b.start > view.b) return;
        var x0 = xOf(b.start, s), x1 = xOf(b.end, s);
        g.fillStyle = C.belief;
        g.fillRect(x0, y + 4, Math.max(1, x1 - x0), LANE - 8);
        g.strokeStyle = C.beliefLine; g.lineWidth = 1;
        g.beginPath(); g.moveTo(x0 + 0.5, y + 4); g.lineTo(x0 + 0.5, y + LANE - 4); g.stroke();
        if (x1 - x0 > 46) {
          g.fillStyle = '#3c6b41'; g.textAlign = 'left';
          g.fillText('token ' + b.token, x0 + 3, y + 10);
        }
      });
    }
    // ops
    for (i = 0; i < lanes.length; i++) {
      var l = laneOps[i];
      for (var k = firstVisible(l); k < l.done.length; k++) {
        var o = l.done[k];
        if (o.call > view.b) break;
        if (o.ret < view.a) continue;
        drawOp(g, o, s);
      }
      l.unknown.forEach(function (o) { if (o.call <= view.b) drawOp(g, o, s); });
    }
    // lost records: the moment a client's lock client said its lease was gone
    (D.lost || []).forEach(function (lr) {
      if (lr.at < view.a || lr.at > view.b) return;
      var x = Math.round(xOf(lr.at, s)) + 0.5, ly = laneY(lr.lane);
      g.strokeStyle = C.lost; g.lineWidth = 2;
      g.beginPath(); g.moveTo(x, ly + 2); g.lineTo(x, ly + LANE - 2); g.stroke();
      g.fillStyle = C.lost; g.textAlign = 'left';
      g.fillText('lost', x + 3, ly + LANE - 6);
    });
    // what went wrong, on top: stale writes always; the selected pair with its arrow
    staleOps.forEach(function (o) { if (o.call <= view.b && endOf(o) >= view.a) { outline(g, o, s, '#000', 2); } });
    D.pairs.forEach(function (p, idx) {
      var a = byId.get(p.a), b = byId.get(p.b);
      if (!a) return;
      var sel = idx === selected.pair;
      if (!sel && (p.kind !== 'stale' || !fewStale)) return;
      var color = p.kind === 'fenced' ? '#b36b00' : C.stale;
      if (b) {
        outline(g, b, s, color, 2);
        marker(g, b, s, 'newer write #' + b.id + ' (token ' + b.token + ')', color);
        arrow(g, b, a, s, color, '');
      }
      marker(g, a, s, p.kind === 'stale' ? 'STALE write #' + a.id + ' (token ' + a.token + ') got through' :
        p.kind === 'fenced' ? 'stale write #' + a.id + ' (token ' + a.token + ') refused' : 'write #' + a.id + ' lost an update', color);
    });
    if (selected.op) outline(g, selected.op, s, C.select, 2.5);
    g.restore();
    g.strokeStyle = '#bbb'; g.lineWidth = 1;
    g.beginPath(); g.moveTo(GUTTER - 0.5, AXIS); g.lineTo(GUTTER - 0.5, s.h); g.stroke();
    rangeLabel.textContent = 'showing ' + fmtT(view.a) + ' – ' + fmtT(view.b) + ' of ' + fmtT(t1) + ' · ' + drawn + ' ops drawn';
  }

  function drawOverview() {
    var s = setup(ov), g = s.g, save = { a: view.a, b: view.b };
    view.a = t0; view.b = t1;
    D.faults.forEach(function (f) {
      g.fillStyle = 'rgba(229,115,115,0.5)';
      var x0 = xOf(f.start, s), x1 = xOf(f.end < 0 ? t1 : f.end, s);
      g.fillRect(x0, 0, Math.max(2, x1 - x0), s.h);
    });
    D.gaps.forEach(function (gp) {
      g.fillStyle = C.gap;
      g.fillRect(xOf(gp[0], s), s.h - 4, Math.max(1, xOf(gp[1], s) - xOf(gp[0], s)), 4);
    });
    staleOps.forEach(function (o) { g.fillStyle = C.stale; g.fillRect(xOf(o.call, s) - 1, 0, 3, s.h); });
    var x0 = xOf(save.a, s), x1 = xOf(save.b, s);
    view.a = save.a; view.b = save.b;
    g.strokeStyle = C.select; g.lineWidth = 2;
    g.fillStyle = 'rgba(31,95,191,0.10)';
    g.fillRect(x0, 1, Math.max(3, x1 - x0), s.h - 2);
    g.strokeRect(x0, 1, Math.max(3, x1 - x0), s.h - 2);
    g.fillStyle = '#888'; g.textAlign = 'left';
    g.fillText('whole run', 8, s.h / 2);
  }

  // ---- latency and throughput ----
  var latMin = Infinity, latMax = 0;
  ops.forEach(function (o) { if (o.ret >= 0) { var d = Math.max(1e3, o.ret - o.call); latMin = Math.min(latMin, d); latMax = Math.max(latMax, d); } });
  if (!isFinite(latMin)) { latMin = 1e5; latMax = 1e9; }
  var lgMin = Math.floor(Math.log10(latMin)), lgMax = Math.ceil(Math.log10(Math.max(latMax, latMin * 10)));
  function drawLatency() {
    var s = setup(lat), g = s.g, top = 22, bottom = s.h - 18;
    var yOf = function (d) { return bottom - (Math.log10(Math.max(d, 1)) - lgMin) / (lgMax - lgMin) * (bottom - top); };
    axis(s, top, false);
    g.textAlign = 'right'; g.fillStyle = C.axis; g.strokeStyle = C.grid;
    for (var p = lgMin; p <= lgMax; p++) {
      var y = Math.round(yOf(Math.pow(10, p))) + 0.5;
      g.beginPath(); g.moveTo(GUTTER, y); g.lineTo(s.w, y); g.stroke();
      g.fillText(fmtT(Math.pow(10, p)), GUTTER - 6, y);
    }
    g.textAlign = 'left';
    g.fillText('latency (log)', 8, 9);
    clipPlot(s, 0, s.h);
    shadeFaults(s, top, bottom);
    ops.forEach(function (o) {
      if (o.call < view.a || o.call > view.b) return;
      var x = xOf(o.call, s);
      g.fillStyle = colorOf(o);
      if (o.ret < 0) {
        g.beginPath(); g.moveTo(x - 4, top - 8); g.lineTo(x + 4, top - 8); g.lineTo(x, top - 1); g.closePath(); g.fill();
        return;
      }
      var r = o.st >= 3 ? 3.2 : 2;
      g.fillRect(x - r / 2, yOf(o.ret - o.call) - r / 2, r, r);
    });
    g.restore();
    var st = niceStep(view.b - view.a, s.pw);
    g.fillStyle = C.axis; g.textAlign = 'center';
    for (var t = Math.ceil(view.a / st) * st; t <= view.b; t += st) g.fillText(tickLabel(t, st), xOf(t, s), s.h - 8);
  }
  var writesByRet = ops.filter(function (o) { return o.kind === 3 && o.ret >= 0 && (o.st === 0 || o.st === 3 || o.st === 4); })
    .sort(function (a, b) { return a.ret - b.ret; });
  function drawThroughput() {
    var s = setup(thr), g = s.g, top = 22, bottom = s.h - 18;
    var n = Math.max(10, Math.min(200, Math.floor(s.pw / 6))), span = (view.b - view.a) / n;
    var acc = new Array(n).fill(0), rej = new Array(n).fill(0);
    writesByRet.forEach(function (o) {
      if (o.ret < view.a || o.ret >= view.b) return;
      var i = Math.min(n - 1, Math.floor((o.ret - view.a) / span));
      if (o.st === 3) rej[i]++; else acc[i]++;
    });
    var peak = 1;
    for (var i = 0; i < n; i++) peak = Math.max(peak, acc[i] + rej[i]);
    var perSec = 1e9 / span;
    axis(s, top, false);
    g.fillStyle = C.axis; g.textAlign = 'right';
    g.fillText((peak * perSec).toFixed(peak * perSec >= 10 ? 0 : 1) + '/s', GUTTER - 6, top + 4);
    g.fillText('0', GUTTER - 6, bottom);
    g.textAlign = 'left';
    g.fillText('writes per second', 8, 9);
    clipPlot(s, 0, s.h);
    shadeFaults(s, top, bottom);
    var bw = s.pw / n;
    for (i = 0; i < n; i++) {
      var x = GUTTER + i * bw, ha = acc[i] / peak * (bottom - top), hr = rej[i] / peak * (bottom - top);
      g.fillStyle = C.ok; g.fillRect(x + 0.5, bottom - ha, Math.max(1, bw - 1), ha);
      g.fillStyle = C.rejected; g.fillRect(x + 0.5, bottom - ha - hr, Math.max(1, bw - 1), hr);
    }
    g.restore();
    g.strokeStyle = '#999';
    g.beginPath(); g.moveTo(GUTTER, bottom + 0.5); g.lineTo(s.w, bottom + 0.5); g.stroke();
    var st = niceStep(view.b - view.a, s.pw);
    g.fillStyle = C.axis; g.textAlign = 'center';
    for (var t = Math.ceil(view.a / st) * st; t <= view.b; t += st) g.fillText(tickLabel(t, st), xOf(t, s), s.h - 8);
    g.textAlign = 'right';
    g.fillStyle = C.ok; g.fillText('■ accepted', s.w - 80, 9);
    g.fillStyle = C.rejected; g.fillText('■ refused', s.w - 14, 9);
  }

  var pending = false;
  function render() {
    if (pending) return;
    pending = true;
    requestAnimationFrame(function () {
      pending = false;
      drawTimeline();
      drawOverview();
      drawLatency();
      drawThroughput();
      document.body.dataset.timeline = 'rendered';
      document.body.dataset.opsDrawn = String(drawn);
    });
  }

  // ---- view changes ----
  var MINSPAN = 10000; // 10 µs
  // The view stays inside the run, [t0, t1]: nothing happens before its start (0) or
  // after its end, and the header must never show a time the run does not have.
  function setView(a, b) {
    var full = t1 - t0, span = Math.min(Math.max(b - a, Math.min(MINSPAN, full)), full);
    var mid = (a + b) / 2;
    a = mid - span / 2; b = mid + span / 2;
    if (a < t0) { b += t0 - a; a = t0; }
    if (b > t1) { a -= b - t1; b = t1; }
    view.a = Math.max(t0, a); view.b = Math.min(t1, b);
    render();
  }
  function zoom(f, at) {
    if (at === undefined) at = (view.a + view.b) / 2;
    setView(at - (at - view.a) * f, at + (view.b - at) * f);
  }
  function fit() { setView(t0, t1); }
  function showSpan(a, b) {
    var span = Math.max(b - a, (D.ttl || 0) * 2, MINSPAN * 10);
    var mid = (a + b) / 2;
    setView(mid - span * 0.75, mid + span * 0.75);
  }
  function scrollToTimeline() {
    var sec = document.getElementById('timeline');
    if (sec && sec.scrollIntoView) sec.scrollIntoView({ block: 'start' });
  }
  // The address names what is shown, so it can be shared: report.html#op-123.
  function remember(hash) {
    try { history.replaceState(null, '', hash); } catch (e) { /* some viewers forbid it */ }
  }
  function focusOp(id, scroll) {
    var o = byId.get(id);
    if (!o) { details.hidden = false; details.textContent = 'There is no op #' + id + ' in this history.'; return false; }
    selected.op = o;
    remember('#op-' + id);
    showSpan(o.call, o.ret < 0 ? o.call + (D.ttl || 1e8) : o.ret);
    showDetails(o);
    if (scroll) scrollToTimeline();
    return true;
  }
  function focusPair(i, scroll) {
    var p = D.pairs[i];
    if (!p) return;
    var a = byId.get(p.a), b = byId.get(p.b);
    if (!a) return;
    selected.pair = i;
    selected.op = a;
    remember('#pair-' + i);
    var lo = a.call, hi = a.ret < 0 ? a.call : a.ret;
    if (b) { lo = Math.min(lo, b.call); hi = Math.max(hi, b.ret < 0 ? b.call : b.ret); }
    D.faults.forEach(function (f) { if (f.start <= hi && (f.end < 0 || f.end >= lo)) { lo = Math.min(lo, f.start); } });
    showSpan(lo, hi);
    showDetails(a, p);
    if (scroll) scrollToTimeline();
  }

  // ---- details and tooltips ----
  function row(tbl, k, v) {
    var tr = document.createElement('tr'), th = document.createElement('th'), td = document.createElement('td');
    th.textContent = k;
    if (v instanceof Node) td.appendChild(v); else td.textContent = v;
    tr.appendChild(th); tr.appendChild(td); tbl.appendChild(tr);
  }
  function opLink(id, text) {
    var a = document.createElement('a');
    a.href = '#timeline';
    a.dataset.op = String(id);
    a.textContent = text || ('op #' + id);
    return a;
  }
  function beliefAt(o) {
    var bs = beliefsByLane[o.lane] || [];
    for (var i = 0; i < bs.length; i++) if (bs[i].start <= o.call && (bs[i].open || bs[i].end >= o.call)) return bs[i];
    return null;
  }
  function showDetails(o, pair) {
    details.hidden = false;
    details.textContent = '';
    var h = document.createElement('h3');
    h.textContent = 'op #' + o.id + ': client ' + o.lane + ' ' + KIND[o.kind] + ', ' + STATUS[o.st];
    details.appendChild(h);
    if (pair === undefined && pairOf.has(o.id)) pair = D.pairs[pairOf.get(o.id)];
    if (pair) {
      var p = document.createElement('p');
      p.className = 'warn';
      p.textContent = pair.text;
      details.appendChild(p);
    }
    var t = document.createElement('table');
    row(t, 'call', fmtT(o.call));
    row(t, 'return', o.ret < 0 ? 'never (unknown: may take effect at any later time)' : fmtT(o.ret) + '  (latency ' + fmtT(o.ret - o.call) + ')');
    row(t, 'token', String(o.token) + (o.kind === 2 ? ' (stored)' : o.kind === 3 ? ' (sent)' : o.kind === 0 ? ' (granted)' : ' (held)'));
    if (o.value) row(t, 'value', o.value);
    if (o.readId) row(t, 'computed from', opLink(o.readId, 'read #' + o.readId));
    if (o.err) row(t, 'error', o.err);
    var b = beliefAt(o);
    if (b) {
      var span = document.createElement('span');
      span.appendChild(opLink(b.acq, 'acquire #' + b.acq));
      span.appendChild(document.createTextNode(' (token ' + b.token + ') → '));
      if (b.rel) span.appendChild(opLink(b.rel, 'release #' + b.rel)); else span.appendChild(document.createTextNode('no release'));
      row(t, 'believed lease', span);
    }
    details.appendChild(t);
  }
  function hit(x, y, s) {
    var li = Math.floor((y - lanesTop) / LANE);
    if (li < 0 || li >= lanes.length || x < GUTTER) return null;
    var t = tOf(x, s), tol = 4 / s.pw * (view.b - view.a), best = null, bestD = Infinity;
    var l = laneOps[li];
    var consider = function (o) {
      var d = t < o.call ? o.call - t : t > endOf(o) && o.ret >= 0 ? t - o.ret : 0;
      if (o.ret < 0) d = Math.abs(t - o.call) < tol * 2 ? 0 : Infinity;
      if (o.st === 4) d -= tol / 2;
      if (d <= tol && d < bestD) { best = o; bestD = d; }
    };
    var lo = 0, hi = l.done.length;
    while (lo < hi) { var m = (lo + hi) >> 1; if (l.done[m].call <= t + tol) lo = m + 1; else hi = m; }
    for (var k = lo - 1; k >= 0 && k >= lo - 8; k--) consider(l.done[k]);
    l.unknown.forEach(consider);
    return best;
  }
  function faultAt(t) {
    for (var i = 0; i < D.faults.length; i++) {
      var f = D.faults[i];
      if (t >= f.start && (f.end < 0 || t <= f.end)) return f;
    }
    return null;
  }
  function showTip(ev, text) {
    var box = tl.parentNode.getBoundingClientRect();
    tip.hidden = false;
    tip.textContent = text;
    var x = ev.clientX - box.left + 14, y = ev.clientY - box.top + 14;
    if (x + 300 > box.width) x = Math.max(0, x - 330);
    tip.style.left = x + 'px';
    tip.style.top = y + 'px';
  }
  function tipFor(ev) {
    var r = tl.getBoundingClientRect(), x = ev.clientX - r.left, y = ev.clientY - r.top;
    var s = { pw: r.width - GUTTER - 8 };
    var o = hit(x, y, s);
    if (o) {
      var lines = ['op #' + o.id + ' · client ' + o.lane + ' · ' + KIND[o.kind] + ' · ' + STATUS[o.st],
        'token ' + o.token + (o.value ? ' · value ' + o.value : ''),
        fmtT(o.call) + ' → ' + (o.ret < 0 ? 'never returned' : fmtT(o.ret) + ' (' + fmtT(o.ret - o.call) + ')')];
      if (o.err) lines.push(o.err);
      if (pairOf.has(o.id)) lines.push(D.pairs[pairOf.get(o.id)].text);
      return lines.join('\n');
    }
    if (x < GUTTER) return null;
    var t = tOf(x, s);
    if (y >= AXIS && y < lanesTop) {
      var f = faultAt(t);
      if (y < AXIS + FAULTROW) {
        var fr = Math.floor((y - AXIS - 2) / 14);
        for (var j = 0; j < D.faults.length; j++) {
          var ff = D.faults[j];
          if (faultRow[j] === fr && t >= ff.start && (ff.end < 0 || t <= ff.end)) f = ff;
        }
      }
      if (y < AXIS + FAULTROW && f) return f.kind + ' on ' + f.target + ': ' + fmtT(f.start) + ' → ' + (f.end < 0 ? 'never healed' : fmtT(f.end)) + '\n' + f.detail;
      for (var i = 0; i < D.gaps.length; i++) if (t >= D.gaps[i][0] && t <= D.gaps[i][1]) return 'two clients believed they held the lock: ' + fmtT(D.gaps[i][0]) + ' → ' + fmtT(D.gaps[i][1]);
      return null;
    }
    var li = Math.floor((y - lanesTop) / LANE);
    if (li >= 0 && li < lanes.length) {
      var bs = beliefsByLane[li];
      for (i = 0; i < bs.length; i++) if (t >= bs[i].start && t <= bs[i].end) return lanes[li].label + ' believes it holds the lock with token ' + bs[i].token + ': ' + fmtT(bs[i].start) + ' → ' + (bs[i].open ? 'end of run (no release)' : fmtT(bs[i].end));
      f = faultAt(t);
      if (f) return f.kind + ' on ' + f.target + '\n' + f.detail;
    }
    return null;
  }

  // ---- events ----
  tl.addEventListener('wheel', function (ev) {
    ev.preventDefault();
    var r = tl.getBoundingClientRect(), s = { pw: r.width - GUTTER - 8 };
    if (Math.abs(ev.deltaX) > Math.abs(ev.deltaY) || ev.shiftKey) {
      var d = (ev.shiftKey ? ev.deltaY : ev.deltaX) / s.pw * (view.b - view.a);
      setView(view.a + d, view.b + d);
      return;
    }
    zoom(Math.exp(ev.deltaY * 0.0015), tOf(ev.clientX - r.left, s));
  }, { passive: false });
  var drag = null;
  tl.addEventListener('pointerdown', function (ev) {
    drag = { x: ev.clientX, a: view.a, b: view.b, moved: false };
    if (tl.setPointerCapture) tl.setPointerCapture(ev.pointerId);
  });
  tl.addEventListener('pointermove', function (ev) {
    if (drag) {
      var r = tl.getBoundingClientRect(), dx = ev.clientX - drag.x;
      if (Math.abs(dx) > 3) { drag.moved = true; tl.classList.add('dragging'); }
      if (drag.moved) {
        var d = dx / (r.width - GUTTER - 8) * (drag.b - drag.a);
        setView(drag.a - d, drag.b - d);
      }
      tip.hidden = true;
      return;
    }
    var text = tipFor(ev);
    if (text) showTip(ev, text); else tip.hidden = true;
  });
  tl.addEventListener('pointerup', function (ev) {
    var wasClick = drag && !drag.moved;
    drag = null;
    tl.classList.remove('dragging');
    if (!wasClick) return;
    var r = tl.getBoundingClientRect();
    var o = hit(ev.clientX - r.left, ev.clientY - r.top, { pw: r.width - GUTTER - 8 });
    if (o) { selected.op = o; selected.pair = pairOf.has(o.id) ? pairOf.get(o.id) : -1; remember('#op-' + o.id); showDetails(o); render(); }
  });
  tl.addEventListener('pointerleave', function () { tip.hidden = true; });
  tl.addEventListener('dblclick', fit);
  tl.addEventListener('keydown', function (ev) {
    var span = view.b - view.a;
    switch (ev.key) {
      case '+': case '=': zoom(1 / 1.5); break;
      case '-': case '_': zoom(1.5); break;
      case '0': fit(); break;
      case 'ArrowLeft': setView(view.a - span * 0.2, view.b - span * 0.2); break;
      case 'ArrowRight': setView(view.a + span * 0.2, view.b + span * 0.2); break;
      default: return;
    }
    ev.preventDefault();
  });
  function overviewMove(ev) {
    var r = ov.getBoundingClientRect(), pw = r.width - GUTTER - 8;
    var t = t0 + (ev.clientX - r.left - GUTTER) / pw * (t1 - t0), half = (view.b - view.a) / 2;
    setView(t - half, t + half);
  }
  var ovDrag = false;
  ov.addEventListener('pointerdown', function (ev) { ovDrag = true; if (ov.setPointerCapture) ov.setPointerCapture(ev.pointerId); overviewMove(ev); });
  ov.addEventListener('pointermove', function (ev) { if (ovDrag) overviewMove(ev); });
  ov.addEventListener('pointerup', function () { ovDrag = false; });

  document.addEventListener('click', function (ev) {
    var el = ev.target.closest ? ev.target.closest('[data-op],[data-pair],[data-zoom],[data-fault]') : null;
    if (!el) return;
    ev.preventDefault();
    if (el.dataset.op) { selected.pair = -1; focusOp(Number(el.dataset.op), true); }
    else if (el.dataset.pair) focusPair(Number(el.dataset.pair), true);
    else if (el.dataset.fault) {
      var f = D.faults[Number(el.dataset.fault)];
      if (f) showSpan(f.start, f.end < 0 ? t1 : f.end);
    } else if (el.dataset.zoom === 'in') zoom(1 / 1.5);
    else if (el.dataset.zoom === 'out') zoom(1.5);
    else fit();
  });
  var gotoInput = document.getElementById('goto-op');
  gotoInput.addEventListener('change', function () {
    var id = parseInt(gotoInput.value, 10);
    if (!isNaN(id)) { selected.pair = -1; focusOp(id, false); }
  });

  if (window.ResizeObserver) new ResizeObserver(render).observe(tl.parentNode);
  else window.addEventListener('resize', render);

  // Open on the whole run (what went wrong is marked on it and one click away), or on
  // what the address names: report.html#op-123 or #pair-0 (the first finding).
  fit();
  var m = /^#(op|pair)-(\d+)$/.exec(location.hash);
  if (m && m[1] === 'op') focusOp(Number(m[2]), true);
  else if (m) focusPair(Number(m[2]), true);
  window.fencecheck = {
    view: view, focusOp: focusOp, focusPair: focusPair, fit: fit, zoom: zoom,
    drawn: function () { return drawn; }, ops: ops.length
  };
})();
