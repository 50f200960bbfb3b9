// opscope HTML report: the interactive layer over a page that is complete without it (tables,
// findings and charts are server-rendered HTML and SVG; large tables carry their later rows as
// JSON). Building those rows on demand, sorting, filtering, expanding fused steps, flame-graph
// zoom, and a self-test hook for the browser tests (#selftest).
(function () {
  'use strict';
  var errors = [];
  window.addEventListener('error', function (e) { errors.push(String(e.message)); });
  // A refused script or style (the page's policy allows only this script) is an error too.
  document.addEventListener('securitypolicyviolation', function (e) {
    errors.push('Content-Security-Policy refused ' + e.violatedDirective + ' ' + (e.blockedURI || ''));
  });
  var root = document.documentElement;
  root.className = root.className.replace('nojs', 'js');

  function $all(sel, el) { return Array.prototype.slice.call((el || document).querySelectorAll(sel)); }

  // ---- tables. Each sortable table has a model: its units (a row, or a fused step's row with
  // its source nodes' rows: they sort and filter together) in the current order. A unit is
  // either built (its <tr>s) or data: a large table carries only its first rows as HTML and the
  // rest as JSON (a script element of type application/json, id TABLE-data, written by
  // table_rows.cc RowJson), parsed the first time they are needed. The <tbody> holds the units
  // of the current order that match the filter, from the first up to `limit` of them; scrolling
  // near the end of the table, "show all", sorting, filtering and links build and add more.
  var CHUNK = 200;
  var SVGNS = 'http://www.w3.org/2000/svg';
  var models = {};
  function units(tbody) {
    var out = [], cur = null;
    $all(':scope > tr', tbody).forEach(function (tr) {
      if (tr.classList.contains('child') && cur) { cur.push(tr); } else { cur = [tr]; out.push(cur); }
    });
    return out;
  }
  function model(table) {
    var m = models[table.id];
    if (m) return m;
    m = {table: table, units: [], byId: {}, limit: Infinity, query: '', open: false, lazy: false,
      spark: [72, 16]};
    units(table.tBodies[0]).forEach(function (trs) { m.units.push({trs: trs, data: null}); });
    var html_units = m.units.length;
    var script = document.getElementById(table.id + '-data');
    if (script) {
      var d = JSON.parse(script.textContent);
      if (d.spark) m.spark = d.spark;
      d.units.forEach(function (rows) { m.units.push({trs: null, data: rows}); });
      m.lazy = true;
      m.limit = html_units;
    }
    m.units.forEach(function (u, i) {
      u.pos = i;
      rowInfo(u).forEach(function (r) { if (r.id) m.byId[r.id] = u; });
    });
    m.shown = m.end = html_units;
    models[table.id] = m;
    return m;
  }
  function rowInfo(u) {
    if (u.trs) {
      return u.trs.map(function (tr) {
        return {id: tr.id, name: tr.getAttribute('data-name') || '', type: tr.getAttribute('data-type') || ''};
      });
    }
    return u.data.map(function (r) { return {id: r.id, name: r.n, type: r.t}; });
  }
  function cellKey(tr, col, numeric) {
    var td = tr.children[col];
    if (!td) return numeric ? -Infinity : '';
    if (numeric) {
      var v = parseFloat(td.getAttribute('data-v'));
      return isNaN(v) ? -Infinity : v;
    }
    return (td.getAttribute('data-v') || td.textContent).toLowerCase();
  }
  // The same key from a unit's JSON, without building it.
  function unitKey(u, col, numeric) {
    if (u.trs) return cellKey(u.trs[0], col, numeric);
    var c = u.data[0].c[col];
    if (c === undefined) return numeric ? -Infinity : '';
    if (Array.isArray(c)) return numeric ? c[0] : String(c[0]).toLowerCase();
    if (numeric) return typeof c === 'object' && typeof c.v === 'number' ? c.v : -Infinity;
    if (typeof c === 'string') return c.toLowerCase();
    if (c.name !== undefined) return c.name.toLowerCase();
    if (c.s) return c.v !== undefined ? String(c.v).toLowerCase() : c.y ? c.x.toLowerCase() : '';
    return c.x.toLowerCase();
  }
  function sparkSvg(c, size) {
    var svg = document.createElementNS(SVGNS, 'svg');
    var w = size[0], h = size[1];
    svg.setAttribute('class', 'spark');
    svg.setAttribute('width', w);
    svg.setAttribute('height', h);
    svg.setAttribute('viewBox', '0 0 ' + w + ' ' + h);
    var title = document.createElementNS(SVGNS, 'title');
    title.textContent = c.x;
    var line = document.createElementNS(SVGNS, 'line');
    line.setAttribute('x1', 0);
    line.setAttribute('x2', w);
    line.setAttribute('y1', c.m);
    line.setAttribute('y2', c.m);
    var pl = document.createElementNS(SVGNS, 'polyline');
    var n = c.y.length;
    pl.setAttribute('points', c.y.map(function (y, i) {
      return (1 + (w - 2) * i / (n - 1)).toFixed(1) + ',' + y;
    }).join(' '));
    svg.appendChild(title);
    svg.appendChild(line);
    svg.appendChild(pl);
    return svg;
  }
  function buildRow(r, m) {
    var tr = document.createElement('tr');
    if (r.k) tr.className = r.k;
    if (r.p) tr.setAttribute('data-parent', r.p);
    tr.id = r.id;
    if (r.g) tr.setAttribute('data-group', r.g);
    if (r.op !== undefined) tr.setAttribute('data-op', r.op);
    tr.setAttribute('data-name', r.n);
    tr.setAttribute('data-type', r.t);
    r.c.forEach(function (c) {
      var td = document.createElement('td');
      if (typeof c === 'string') {
        td.textContent = c;
      } else if (Array.isArray(c)) {
        td.className = 'num';
        td.setAttribute('data-v', c[0]);
        td.textContent = c[1];
      } else if (c.name !== undefined) {
        td.className = 'name';
        if (r.k === 'group') {
          var b = document.createElement('button');
          b.type = 'button';
          b.className = 'tog js-only';
          b.setAttribute('aria-expanded', 'true');
          b.setAttribute('aria-label', 'show the source nodes');
          td.appendChild(b);
        }
        td.appendChild(document.createTextNode((r.k === 'child' ? '\u21b3 ' : '') + c.name));
      } else if (c.s) {
        if (c.v !== undefined) td.setAttribute('data-v', c.v);
        if (c.y) td.appendChild(sparkSvg(c, m.spark));
      } else {
        if (c.c) td.className = c.c;
        td.textContent = c.x;
      }
      tr.appendChild(td);
    });
    return tr;
  }
  function buildUnit(m, u) {
    if (u.trs) return;
    u.trs = u.data.map(function (r) { return buildRow(r, m); });
    u.data = null;
    if (u.trs[0].classList.contains('group')) {
      setOpen(u.trs, m.open);
      bindToggle(u.trs);
    }
  }
  function matches(u, q) {
    return !q || rowInfo(u).some(function (r) { return (r.name + '\n' + r.type).toLowerCase().indexOf(q) >= 0; });
  }
  // A unit about to be shown gets the filter's marks: rows that do not match are dimmed, and a
  // step whose source node matches opens, so the match is visible.
  function markUnit(m, u) {
    var q = m.query;
    u.trs.forEach(function (tr) {
      var hay = (tr.getAttribute('data-name') || '') + '\n' + (tr.getAttribute('data-type') || '');
      tr.classList.toggle('nomatch', !!q && hay.toLowerCase().indexOf(q) < 0);
    });
    if (q && u.trs.length > 1 && u.trs[0].classList.contains('group')) setOpen(u.trs, true);
  }
  // Rebuilds the <tbody>: the first `limit` units of the order that match the filter.
  function render(m) {
    var frag = document.createDocumentFragment(), shown = 0, i = 0;
    for (; i < m.units.length && shown < m.limit; i++) {
      var u = m.units[i];
      if (!matches(u, m.query)) continue;
      buildUnit(m, u);
      markUnit(m, u);
      u.trs.forEach(function (tr) { frag.appendChild(tr); });
      shown++;
    }
    var tbody = m.table.tBodies[0];
    tbody.textContent = '';
    tbody.appendChild(frag);
    m.shown = shown;
    m.end = i;
    moreStatus(m);
  }
  // Appends the next `n` matching units (scrolling near the end of the table).
  function extend(m, n) {
    var frag = document.createDocumentFragment(), added = 0, i = m.end;
    for (; i < m.units.length && added < n; i++) {
      var u = m.units[i];
      if (!matches(u, m.query)) continue;
      buildUnit(m, u);
      markUnit(m, u);
      u.trs.forEach(function (tr) { frag.appendChild(tr); });
      added++;
    }
    m.table.tBodies[0].appendChild(frag);
    m.shown += added;
    m.limit = m.shown;
    m.end = i;
    moreStatus(m);
    return added;
  }
  function remaining(m) {
    var n = 0;
    for (var i = m.end; i < m.units.length; i++) if (matches(m.units[i], m.query)) n += rowInfo(m.units[i]).length;
    return n;
  }
  function moreStatus(m) {
    var p = document.getElementById(m.table.id + '-more');
    if (!p) return;
    var left = remaining(m);
    p.hidden = left === 0;
    var span = p.querySelector('.left');
    if (span) span.textContent = String(left);
  }
  function showAll(m) {
    m.limit = Infinity;
    render(m);
  }
  function sortTable(table, col, dir) {
    var th = table.tHead.rows[0].cells[col];
    var numeric = th.getAttribute('data-sort') === 'num';
    var m = model(table);
    m.units.forEach(function (u, i) { u.key = unitKey(u, col, numeric); u.pos = i; });
    m.units.sort(function (a, b) {
      var c = a.key < b.key ? -1 : a.key > b.key ? 1 : a.pos - b.pos;
      return dir === 'ascending' ? c : -c;
    });
    if (m.lazy) m.limit = Math.max(CHUNK, m.shown);
    render(m);
    $all('th', table.tHead).forEach(function (h) { h.removeAttribute('aria-sort'); });
    th.setAttribute('aria-sort', dir);
  }
  $all('table.sortable').forEach(function (table) {
    $all('th', table.tHead).forEach(function (th, col) {
      var b = document.createElement('button');
      b.type = 'button';
      b.className = 'sortbtn';
      while (th.firstChild) b.appendChild(th.firstChild);
      th.appendChild(b);
      b.addEventListener('click', function () {
        var dir = th.getAttribute('aria-sort') === 'descending' ? 'ascending' : 'descending';
        if (!th.getAttribute('aria-sort') && th.getAttribute('data-sort') !== 'num') dir = 'ascending';
        sortTable(table, col, dir);
      });
    });
  });
  // More rows when the end of the table scrolls near, and on "show all".
  $all('p[id$="-more"]').forEach(function (p) {
    var table = document.getElementById(p.id.slice(0, -5));
    if (!table) return;
    var b = p.querySelector('button.more');
    if (b) b.addEventListener('click', function () { showAll(model(table)); });
    if (!window.IntersectionObserver) return;
    var io = new IntersectionObserver(function (entries) {
      if (!entries.some(function (e) { return e.isIntersecting; })) return;
      if (extend(model(table), CHUNK) > 0) {
        // Observe again: the callback then reports whether the end is still near.
        io.unobserve(p);
        io.observe(p);
      }
    }, {rootMargin: '800px 0px'});
    io.observe(p);
  });

  // ---- fused steps: children start collapsed; the toggle shows them. `trs` is a unit: the
  // step's row, then its source nodes' rows.
  function setOpen(trs, open) {
    var parent = trs[0];
    parent.classList.toggle('open', open);
    var b = parent.querySelector('button.tog');
    if (b) b.setAttribute('aria-expanded', open ? 'true' : 'false');
    trs.slice(1).forEach(function (tr) { tr.classList.toggle('collapsed', !open); });
  }
  function bindToggle(trs) {
    var b = trs[0].querySelector('button.tog');
    if (b) b.addEventListener('click', function () { setOpen(trs, !trs[0].classList.contains('open')); });
  }
  $all('table.sortable').forEach(function (table) {
    units(table.tBodies[0]).forEach(function (trs) {
      if (!trs[0].classList.contains('group')) return;
      setOpen(trs, false);
      bindToggle(trs);
    });
  });
  $all('button.expand-all').forEach(function (b) {
    b.addEventListener('click', function () {
      var open = b.getAttribute('data-open') !== 'true';
      b.setAttribute('data-open', open ? 'true' : 'false');
      b.textContent = open ? 'collapse all' : 'expand all';
      var m = model(document.getElementById(b.getAttribute('data-table')));
      m.open = open;
      m.units.forEach(function (u) { if (u.trs && u.trs[0].classList.contains('group')) setOpen(u.trs, open); });
    });
  });

  // ---- filter by node name or op type (over every row, built or not).
  function applyFilter(input) {
    var table = document.getElementById(input.getAttribute('data-table'));
    var m = model(table);
    m.query = input.value.trim().toLowerCase();
    if (m.lazy) m.limit = CHUNK;
    render(m);
    var shown = 0;
    m.units.forEach(function (u) { if (matches(u, m.query)) shown++; });
    var count = document.getElementById(input.getAttribute('data-count'));
    if (count) count.textContent = m.query ? shown + ' of ' + m.units.length + ' rows' : '';
  }
  $all('input.filter').forEach(function (input) {
    input.addEventListener('input', function () { applyFilter(input); });
  });

  // ---- links into the table (findings, roofline points): build the row if it is not in the
  // page yet, clear a filter that hides it, open its step, highlight it and scroll to it.
  function reveal() {
    var id = decodeURIComponent(location.hash.slice(1));
    if (!id) return;
    var tr = document.getElementById(id);
    if (tr && tr.tagName !== 'TR') return;
    var table = tr ? tr.closest('table') : null, u = null, m = null;
    if (!table) {
      // Not in the page: a row of a table that holds only its first rows.
      $all('table.sortable').forEach(function (t) {
        if (!u && document.getElementById(t.id + '-data')) {
          var mm = model(t);
          if (mm.byId[id]) { m = mm; u = mm.byId[id]; }
        }
      });
      if (!u) return;
    } else if (table.classList.contains('sortable')) {
      m = model(table);
      u = m.byId[id];
    }
    if (m && u) {
      if (!matches(u, m.query)) {
        $all('input.filter[data-table="' + m.table.id + '"]').forEach(function (i) { i.value = ''; });
        m.query = '';
        var count = document.getElementById(m.table.id + '-count');
        if (count) count.textContent = '';
      }
      var at = m.units.indexOf(u);
      if (at >= m.end || !u.trs || !u.trs[0].isConnected) {
        var need = 0;
        for (var i = 0; i <= at; i++) if (matches(m.units[i], m.query)) need++;
        if (m.limit < need) m.limit = need;
        render(m);
      }
      tr = document.getElementById(id);
      if (!tr) return;
      if (tr.classList.contains('child')) setOpen(u.trs, true);
    }
    $all('tr.hit').forEach(function (r) { r.classList.remove('hit'); });
    tr.classList.add('hit');
    tr.scrollIntoView({block: 'center'});
  }
  window.addEventListener('hashchange', reveal);

  // ---- flame graph: click a frame to zoom into it, the reset button (or the root) to undo.
  function zoomFlame(svg, g) {
    var x0 = g ? parseFloat(g.getAttribute('data-x')) : 0;
    var w0 = g ? parseFloat(g.getAttribute('data-w')) : 1;
    var d0 = g ? parseInt(g.getAttribute('data-d'), 10) : 0;
    var width = parseFloat(svg.getAttribute('data-width'));
    $all('g.fr', svg).forEach(function (f) {
      var x = parseFloat(f.getAttribute('data-x')), w = parseFloat(f.getAttribute('data-w'));
      var d = parseInt(f.getAttribute('data-d'), 10);
      var inside = x >= x0 - 1e-9 && x + w <= x0 + w0 + 1e-9;
      var rect = f.querySelector('rect'), text = f.querySelector('text');
      if (!inside && d >= d0) { f.style.display = 'none'; return; }
      f.style.display = '';
      var nx = inside ? (x - x0) / w0 : 0, nw = inside ? w / w0 : 1;
      f.classList.toggle('above', d < d0);
      rect.setAttribute('x', (nx * width).toFixed(2));
      rect.setAttribute('width', Math.max(0, nw * width - 0.5).toFixed(2));
      if (text) {
        var px = nw * width, name = f.getAttribute('data-n');
        var chars = Math.floor((px - 6) / 6.5);
        text.setAttribute('x', (nx * width + 3).toFixed(2));
        text.textContent = chars < 3 ? '' : name.length <= chars ? name : name.slice(0, chars - 1) + '\u2026';
      }
    });
    var status = document.getElementById(svg.id + '-zoom');
    if (status) status.textContent = g ? 'zoomed into ' + g.getAttribute('data-n') : '';
  }
  $all('svg.flame').forEach(function (svg) {
    svg.addEventListener('click', function (e) {
      var g = e.target.closest ? e.target.closest('g.fr') : null;
      if (g) zoomFlame(svg, parseInt(g.getAttribute('data-d'), 10) === 0 ? null : g);
    });
    var reset = document.getElementById(svg.id + '-reset');
    if (reset) reset.addEventListener('click', function () { zoomFlame(svg, null); });
  });

  reveal();

  // ---- self-test hook for the browser tests: file:///...report.html#selftest writes a JSON
  // verdict into a pre element with id opscope-selftest (read back with chromium --dump-dom).
  // For a table that holds only its first rows it also finds a row that is not in the page by
  // the filter and by a finding's link, and checks the order of every row after sorting.
  function visibleRows(table) {
    return $all('tr', table.tBodies[0]).filter(function (tr) {
      return !tr.classList.contains('collapsed') && !tr.classList.contains('nomatch');
    });
  }
  function inView(el) {
    var b = el.getBoundingClientRect();
    return b.height > 0 && b.top >= 0 && b.bottom <= window.innerHeight;
  }
  function selftest() {
    var r = {errors: errors, tables: {}, charts: {}};
    r.dom_rows_at_load = document.querySelectorAll('tr[data-op]').length;
    // Finding links whose row is not in the page at load.
    var lazyLinks = $all('#findings a[href^="#op-"]').filter(function (a) {
      return !document.getElementById(a.getAttribute('href').slice(1));
    });
    $all('table.sortable').forEach(function (table) {
      var m = model(table);
      var t = {declared: parseInt(table.getAttribute('data-rows'), 10), lazy: m.lazy,
        dom_rows: table.tBodies[0].rows.length};
      t.rows = 0;
      m.units.forEach(function (u) { t.rows += rowInfo(u).length; });
      var input = document.querySelector('input.filter[data-table="' + table.id + '"]');
      if (m.lazy) {
        // A finding's link to a row that is not in the page: following it builds the row.
        if (lazyLinks.length) {
          var a = lazyLinks[lazyLinks.length - 1];
          var id = a.getAttribute('href').slice(1);
          t.link_target = id;
          // What following the link does (the hashchange handler), synchronously.
          location.hash = a.getAttribute('href');
          reveal();
          var target = document.getElementById(id);
          t.link_built = !!target;
          t.link_hit = !!target && target.classList.contains('hit');
          t.link_visible = !!target && visibleRows(table).indexOf(target) >= 0;
          t.link_in_view = !!target && inView(target);
          t.link_ok = t.link_built && t.link_hit && t.link_visible && t.link_in_view;
        }
        // The last row by the default order is not in the page: the filter must build it.
        var last = rowInfo(m.units[m.units.length - 1]).filter(function (x) { return !/^step-/.test(x.id); }).pop();
        t.lazy_target = last.id;
        t.lazy_target_absent = !document.getElementById(last.id);
        input.value = last.name;
        input.dispatchEvent(new Event('input'));
        var el = document.getElementById(last.id);
        t.lazy_filter_found = !!el && el.isConnected && visibleRows(table).indexOf(el) >= 0 &&
          visibleRows(table).every(function (tr) {
            return (tr.getAttribute('data-name') + '\n' + tr.getAttribute('data-type')).toLowerCase()
              .indexOf(last.name.toLowerCase()) >= 0;
          });
        input.value = '';
        input.dispatchEvent(new Event('input'));
        t.dom_rows_after_clear = table.tBodies[0].rows.length;
        // A row built from the JSON has the cells of a server-rendered one: the same columns, each
        // of the same kind (numeric, name, monospace; sort key; sparkline).
        var html_tr = table.querySelector('tbody tr[data-op]:not(.child)');
        var kind = function (td) {
          return ['num', 'name', 'mono'].filter(function (c) { return td.classList.contains(c); }).join() + '|' +
            td.hasAttribute('data-v') + '|' + !!td.querySelector('svg.spark');
        };
        if (el && html_tr) {
          t.lazy_cells_match = el.children.length === html_tr.children.length &&
            Array.prototype.every.call(el.children, function (td, i) { return kind(td) === kind(html_tr.children[i]); });
        }
      }
      var ths = table.tHead.rows[0].cells, col = -1;
      for (var i = ths.length - 1; i >= 0; i--) {
        if (ths[i].getAttribute('data-sort') !== 'num') continue;
        if (col < 0 || ['median', '\u0394 ms', 'self', 'per run', 'total'].indexOf(ths[i].textContent) >= 0) col = i;
      }
      if (col >= 0) {
        var ok = true;
        ['descending', 'ascending'].forEach(function (dir) {
          ths[col].querySelector('button').click();
          if (ths[col].getAttribute('aria-sort') !== dir) ok = false;
          // Every row, built or not: show them all, then read the order off the page.
          showAll(m);
          var keys = units(table.tBodies[0]).map(function (u) { return cellKey(u[0], col, true); });
          if (keys.length !== m.units.length) ok = false;
          for (var k = 1; k < keys.length; k++) {
            if (dir === 'descending' ? keys[k] > keys[k - 1] : keys[k] < keys[k - 1]) ok = false;
          }
        });
        t.sorted = ok;
        t.sort_column = ths[col].textContent;
        t.rows_after_sort = table.tBodies[0].rows.length;
      }
      var first = table.querySelector('tr[data-type]:not(.group)');
      if (input && first) {
        // Filter by the first row's type: every row left visible must match it, and at least that one;
        // the count covers every row, built or not.
        var q = first.getAttribute('data-type');
        input.value = q;
        input.dispatchEvent(new Event('input'));
        var visible = $all('tr[data-op]', table).filter(function (tr) { return !tr.classList.contains('nomatch'); });
        t.filter_ok = visible.length > 0 && visible.every(function (tr) {
          var hay = (tr.getAttribute('data-name') + '\n' + tr.getAttribute('data-type')).toLowerCase();
          return hay.indexOf(q.toLowerCase()) >= 0;
        });
        var expect = 0;
        m.units.forEach(function (u) { if (matches(u, q.toLowerCase())) expect++; });
        var count = document.getElementById(input.getAttribute('data-count'));
        t.filter_count = count ? count.textContent : '';
        t.filter_count_ok = !count || count.textContent === expect + ' of ' + m.units.length + ' rows';
        input.value = '';
        input.dispatchEvent(new Event('input'));
        showAll(m);
        t.rows_after_filter = $all('tr', table.tBodies[0]).filter(function (tr) {
          return !tr.classList.contains('nomatch');
        }).length;
      }
      r.tables[table.id] = t;
    });
    $all('svg.chart').forEach(function (svg) {
      var box = svg.getBoundingClientRect();
      r.charts[svg.id] = {width: box.width, height: box.height,
        marks: svg.querySelectorAll('rect,circle,polyline,path,line').length};
    });
    r.rows_total = document.querySelectorAll('tr[data-op]').length;
    return r;
  }
  if (location.hash === '#selftest' || location.hash === '#timing') {
    var pre = document.createElement('pre');
    pre.id = 'opscope-selftest';
    var layout = document.body.getBoundingClientRect().height;
    var result = location.hash === '#selftest' ? selftest() : {};
    result.ready_ms = performance.now();
    result.layout_height = layout;
    if (location.hash === '#timing') {
      // What scrolling through every deferred section would cost, all at once.
      $all('section.deferred').forEach(function (s) { s.style.contentVisibility = 'visible'; });
      result.all_layout_height = document.body.getBoundingClientRect().height;
      result.all_ms = performance.now();
    }
    pre.textContent = JSON.stringify(result);
    document.body.appendChild(pre);
  }
})();
