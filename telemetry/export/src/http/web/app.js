// rtloop's live page: polls /api/v1/tasks once per tick and draws the task-monitor table, the
// "Why the last cycles were late" panel (the last outlier records and the per-task counts), a
// log-scale latency histogram per task and the per-second max/p99 of the last minutes (dygraphs).
// Every string from the board is set with textContent, never as HTML: task and thread names are
// untrusted (a thread's comm is whatever its process named it).
'use strict';

(function () {
  const HISTORY_SECONDS = 300;
  const errors = document.getElementById('errors');
  function noteError(message) {  // counted in the DOM so a headless browser test can read it
    errors.dataset.count = String(Number(errors.dataset.count) + 1);
    errors.textContent += message + '\n';
  }
  window.addEventListener('error', (e) => noteError('error: ' + e.message));
  window.addEventListener('unhandledrejection', (e) => noteError('rejection: ' + e.reason));

  const status = document.getElementById('status');
  const rows = document.getElementById('rows');
  const cards = document.getElementById('tasks');
  const tasks = new Map();  // id -> {row, hist, time, history: [[Date, max, p99]]}

  let token = sessionStorage.getItem('rtloop-token') || '';
  const fragment = new URLSearchParams(location.hash.slice(1));
  if (fragment.get('token')) {
    token = fragment.get('token');
    sessionStorage.setItem('rtloop-token', token);
    history.replaceState(null, '', location.pathname);
  }
  document.getElementById('token-save').addEventListener('click', () => {
    token = document.getElementById('token-input').value.trim();
    sessionStorage.setItem('rtloop-token', token);
    document.getElementById('token').style.display = 'none';
    poll();
  });

  const us = (ns) => (ns === null || ns === undefined) ? null : ns / 1000;
  function fmt(ns) {
    if (ns === null || ns === undefined) return 'no data';
    const v = ns / 1000;
    return Math.abs(v) >= 100 ? v.toFixed(0) : v.toFixed(1);
  }
  function cell(tr, text, cls) {
    const td = document.createElement('td');
    td.textContent = text;
    if (cls) td.className = cls;
    tr.appendChild(td);
    return td;
  }

  function createTask(t) {
    const tr = document.createElement('tr');
    tr.dataset.taskId = String(t.id);
    rows.appendChild(tr);
    const card = document.createElement('div');
    card.className = 'task';
    card.dataset.taskId = String(t.id);
    const h2 = document.createElement('h2');
    h2.textContent = t.name;
    card.appendChild(h2);
    const charts = document.createElement('div');
    charts.className = 'charts';
    const histDiv = document.createElement('div');
    histDiv.className = 'chart';
    const timeDiv = document.createElement('div');
    timeDiv.className = 'chart';
    charts.append(histDiv, timeDiv);
    card.appendChild(charts);
    const legend = document.createElement('div');
    legend.className = 'legend';
    card.appendChild(legend);
    const caption = document.createElement('div');
    caption.className = 'caption';
    caption.textContent = 'left: wake-up latency histogram since start (log-log); ' +
        'right: max and p99 per second, last ' + (HISTORY_SECONDS / 60) + ' minutes';
    card.appendChild(caption);
    cards.appendChild(card);
    const hist = new Dygraph(histDiv, [[1, 1]], {
      labels: ['latency (µs)', 'cycles'], stepPlot: true, fillGraph: true, logscale: true,
      axes: {x: {logscale: true}}, xlabel: 'latency (µs)', ylabel: 'cycles',
      colors: ['#3366cc'], legend: 'follow'});
    const time = new Dygraph(timeDiv, [[new Date(), null, null]], {
      labels: ['time', 'max per second (µs)', 'p99 per second (µs)'],
      colors: ['#d62728', '#1f77b4'], ylabel: 'µs', legend: 'always',
      labelsDiv: legend, strokeWidth: 1.5});
    const entry = {row: tr, hist, time, history: [], last: 0};
    tasks.set(t.id, entry);
    return entry;
  }

  // "cycle 101 t=1.010s watchdog (6200.0 µs)"; "-" without a fault.
  function lastFault(f) {
    if (!f) return '-';
    return 'cycle ' + f.cycle + ' t=' + (f.since_start_ns / 1e9).toFixed(3) + 's ' + f.reason +
        ' (' + fmt(f.execution_ns) + ' µs)';
  }

  // "5000.0 µs ×2 fault-task, 3 violations, 1 trip"; "3 overruns ..." ; "-" without a watchdog.
  function watchdog(w) {
    const limits = [];
    if (w.time_ns > 0) limits.push(fmt(w.time_ns) + ' µs ×' + w.sensitivity);
    if (w.max_consecutive_overruns > 0) limits.push(w.max_consecutive_overruns + ' overruns');
    if (limits.length === 0) return '-';
    return limits.join(', ') + ' ' + w.action + ', ' + w.violations + ' violations, ' + w.trips +
        (w.trips === 1 ? ' trip' : ' trips');
  }

  function updateRow(entry, t) {
    const tr = entry.row;
    tr.replaceChildren();
    cell(tr, t.name, 'name');
    cell(tr, t.state, t.state === 'fault' ? 'bad' : '');
    cell(tr, t.policy + ' ' + t.priority + (t.rt_fallback ? ' (fallback)' : ''),
         t.rt_fallback ? 'bad' : '');
    cell(tr, String(t.cycles)).dataset.field = 'cycles';
    const l = t.latency, x = t.execution, j = t.jitter;
    for (const [v, f] of [[l.last, 'latency.last'], [l.min, 'latency.min'], [l.avg, 'latency.avg'],
                          [l.max, 'latency.max'], [l.p99, 'latency.p99'],
                          [l.p99_99, 'latency.p99_99'], [x.last, 'execution.last'],
                          [x.min, 'execution.min'], [x.avg, 'execution.avg'], [x.max, 'execution.max'],
                          [x.p99, 'execution.p99'], [j.min, 'jitter.min'],
                          [j.max, 'jitter.max']]) {
      const td = cell(tr, fmt(v), v === null ? 'nodata' : '');
      td.dataset.field = f;
      if (v !== null) td.dataset.ns = String(Math.round(v));
    }
    cell(tr, String(t.overruns), t.overruns > 0 ? 'bad' : '').dataset.field = 'overruns';
    cell(tr, String(t.missed), t.missed > 0 ? 'bad' : '').dataset.field = 'missed';
    cell(tr, String(t.faults), t.faults > 0 ? 'bad' : '').dataset.field = 'faults';
    cell(tr, lastFault(t.last_fault), t.last_fault ? 'bad' : '').dataset.field = 'last_fault';
    cell(tr, watchdog(t.watchdog), t.watchdog.trips > 0 ? 'bad' : '').dataset.field = 'watchdog';
    cell(tr, String(t.ring_dropped), t.ring_dropped > 0 ? 'bad' : '').dataset.field = 'dropped';
    const lost = t.subscriber_lost === null ? 'no data' : String(t.subscriber_lost);
    cell(tr, lost, t.subscriber_lost > 0 ? 'bad' : '').dataset.field = 'lost';
  }

  function updateCharts(entry, t) {
    if (t.histogram.length > 0) {
      // Step plot over the bins: each bin's count from its lower edge, closed at the top.
      const data = t.histogram.map((b) => [us(b[0]), b[2]]);
      const top = t.histogram[t.histogram.length - 1];
      data.push([us(top[1]), top[2]]);
      entry.hist.updateOptions({file: data});
    }
    for (const h of t.history) {
      if (h[0] <= entry.last) continue;
      entry.last = h[0];
      entry.history.push([new Date(h[0]), us(h[1]), us(h[2])]);
    }
    while (entry.history.length > HISTORY_SECONDS) entry.history.shift();
    if (entry.history.length > 0) entry.time.updateOptions({file: entry.history});
  }

  // ---- "Why the last cycles were late" ------------------------------------------------------
  const outlierState = document.getElementById('outliers-state');
  const outlierCounts = document.getElementById('outlier-counts');
  const outlierCountRows = document.getElementById('outlier-count-rows');
  const outlierRecords = document.getElementById('outlier-records');
  const outlierRows = document.getElementById('outlier-rows');

  const CAUSES_SHOWN = 3;  // per record, the leading ones; the rest in the "+N more" tooltip
  function duration(ns) {  // "4.0 ms", "310 µs"
    return Math.abs(ns) >= 1e6 ? (ns / 1e6).toFixed(1) + ' ms' : (ns / 1e3).toFixed(0) + ' µs';
  }
  // "thread rtloop-spin (tid 812, FIFO 95) 4.0 ms"; a cause the evidence only counted:
  // "preemption involuntary switches ×3"; a thread the counters name without proof that it ran:
  // "thread spinner (tid 812, candidate)". A long detail (the counters' prose) is left to the
  // tooltip (causeTitle) so that a record stays a few lines.
  const SHORT_DETAIL = 24;
  function cause(c) {
    const about = [];
    if (c.id !== null) {
      about.push((c.kind === 'thread' ? 'tid ' : c.kind === 'irq' ? 'irq ' : '') + c.id);
    }
    if (c.detail && c.detail.length <= SHORT_DETAIL) about.push(c.detail);
    if (c.kind === 'thread' && c.ns === null) about.push('candidate');
    const amount = c.ns !== null ? ' ' + duration(c.ns) : c.count > 0 ? ' ×' + c.count : '';
    const name = c.name === c.kind ? '' : ' ' + c.name;  // "steal", not "steal steal"
    return c.kind + name + (about.length > 0 ? ' (' + about.join(', ') + ')' : '') + amount;
  }
  function causeTitle(c) { return c.detail ? cause(c) + ': ' + c.detail : cause(c); }
  // "100 µs" or "100 µs / execution 800 µs": a task's thresholds.
  function above(t) {
    const limit = (ns) => ns < 1000 ? ns + ' ns' : fmt(ns) + ' µs';
    const parts = [];
    if (t.latency_above_ns !== null) parts.push(limit(t.latency_above_ns));
    if (t.execution_above_ns !== null) parts.push('execution ' + limit(t.execution_above_ns));
    return parts.join(' / ');
  }
  function byCause(counts) {  // "thread 5, irq 1, none 1" (the kinds that led some record)
    const parts = Object.entries(counts).filter(([, n]) => n > 0).map(([k, n]) => k + ' ' + n);
    return parts.length > 0 ? parts.join(', ') : '-';
  }

  function outlierCountRow(t) {
    const tr = document.createElement('tr');
    tr.dataset.task = String(t.task);
    cell(tr, t.task_name, 'name');
    cell(tr, above(t));
    cell(tr, String(t.outliers)).dataset.field = 'outliers';
    cell(tr, String(t.recorded)).dataset.field = 'recorded';
    cell(tr, String(t.unexplained), t.unexplained > 0 ? 'bad' : '').dataset.field = 'unexplained';
    cell(tr, String(t.dropped), t.dropped > 0 ? 'bad' : '').dataset.field = 'dropped';
    cell(tr, byCause(t.by_cause), 'name').dataset.field = 'by_cause';
    return tr;
  }

  function outlierRow(r) {
    const tr = document.createElement('tr');
    tr.dataset.outlier = String(r.index);
    cell(tr, r.task_name, 'name').dataset.field = 'task';
    cell(tr, String(r.cycle)).dataset.field = 'cycle';
    const late = r.outlier === 'execution' ? r.execution_ns : r.latency_ns;
    cell(tr, r.outlier + ' ' + duration(late)).dataset.field = 'late';
    const causes = cell(tr, '', 'causes');
    causes.dataset.field = 'causes';
    for (const c of r.causes.slice(0, CAUSES_SHOWN)) {
      const line = document.createElement('div');
      line.textContent = cause(c);
      line.title = causeTitle(c);  // a property: never parsed as HTML
      causes.appendChild(line);
    }
    // "+4 more: thread migration/0, thread spinner, ...": the rest by name (the counters' candidate
    // threads rank after the counted IRQs), each in full in the tooltip.
    const rest = r.causes.slice(CAUSES_SHOWN);
    if (rest.length + r.more_causes > 0) {
      const line = document.createElement('div');
      line.className = 'none';
      line.textContent = '+' + (rest.length + r.more_causes) + ' more' +
          (rest.length > 0 ? ': ' + rest.map((c) => c.kind + ' ' + c.name).join(', ') : '') +
          (r.more_causes > 0 ? ', …' : '');
      line.title = rest.map(causeTitle).join('\n');
      causes.appendChild(line);
    }
    if (r.causes.length === 0) {
      causes.className = 'causes none';
      causes.textContent = r.evidence === 'none' ? 'no evidence: ' + r.evidence_note
                                                 : 'the evidence showed nothing';
    }
    cell(tr, duration(r.unexplained_ns)).dataset.field = 'unexplained';
    const evidence = cell(tr, r.evidence, r.evidence === 'none' ? 'bad' : '');
    evidence.dataset.field = 'evidence';
    evidence.title = r.evidence_note;  // a property: never parsed as HTML
    return tr;
  }

  function updateOutliers(o) {
    if (!o.explaining) {
      outlierState.dataset.state = 'not-explained';
      outlierState.textContent =
          'not explained — set TaskConfig::explain_latency_above or rtloop-cyclic --explain';
      outlierCounts.hidden = true;
      outlierRecords.hidden = true;
      return;
    }
    const notes = [];
    if (o.total === 0) {
      const limits = [...new Set(o.tasks.map(above))].join(', ');
      notes.push('no outliers above ' + limits + ' yet');
    }
    notes.push('evidence: ' + o.evidence);
    if (o.samples_lost > 0) {
      notes.push(o.samples_lost + ' samples lost before the analysis (outliers may hide there)');
    }
    outlierState.dataset.state = o.total === 0 ? 'none-yet' : 'records';
    outlierState.textContent = notes.join('; ');
    outlierCountRows.replaceChildren(...o.tasks.map(outlierCountRow));
    outlierCounts.hidden = false;
    outlierRows.replaceChildren(...o.records.map(outlierRow));
    outlierRecords.hidden = o.records.length === 0;
  }

  let first = true;
  let timer = null;
  async function poll() {
    clearTimeout(timer);
    let tick = 1000;
    try {
      const headers = token ? {Authorization: 'Bearer ' + token} : {};
      const history = first ? HISTORY_SECONDS : 5;
      const r = await fetch('/api/v1/tasks?history=' + history, {headers, cache: 'no-store'});
      if (r.status === 401) {
        document.getElementById('token').style.display = 'block';
        status.textContent = 'token needed';
        status.className = 'error';
        return;
      }
      if (!r.ok) throw new Error('HTTP ' + r.status);
      const data = await r.json();
      first = false;
      tick = Math.max(250, data.tick_ms);
      for (const t of data.tasks) {
        const entry = tasks.get(t.id) || createTask(t);
        updateRow(entry, t);
        updateCharts(entry, t);
      }
      updateOutliers(data.outliers || {explaining: false});
      status.textContent = data.tasks.length + ' tasks, updated ' +
          new Date(data.unix_ms).toLocaleTimeString() + ', window ' + data.window_s + ' s';
      status.className = '';
      document.body.dataset.updates = String(Number(document.body.dataset.updates || 0) + 1);
    } catch (e) {
      status.textContent = 'no connection to the board (' + e.message + '), retrying';
      status.className = 'error';
    }
    timer = setTimeout(poll, tick);
  }
  poll();
})();
