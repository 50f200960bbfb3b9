// opscope HTML report: the interactive layer over a page that is complete without it (tables,
// findings and charts are server-rendered HTML and SVG). Sorting, filtering, expanding fused
// steps, flame-graph zoom, and a self-test hook for the browser tests (#selftest).
(function () {
  'use strict';
  var errors = [];
  window.addEventListener('error', function (e) { errors.push(String(e.message)); });
  var root = document.documentElement;
  root.className = root.className.replace('nojs', 'js');

  function $all(sel, el) { return Array.prototype.slice.call((el || document).querySelectorAll(sel)); }

  // ---- sortable tables: rows are grouped in units (a fused step and its source nodes move
  // together); a cell's data-v is its numeric sort key, else its text sorts.
  function units(tbody) {
    var out = [], cur = null;
    $all(':scope > tr', tbody).forEach(function (tr) {
      if (tr.classList.contains('child') && cur) { cur.push(tr); } else { cur = [tr]; out.push(cur); }
    });
    return out;
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
  function sortTable(table, col, dir) {
    var th = table.tHead.rows[0].cells[col];
    var numeric = th.getAttribute('data-sort') === 'num';
    var tbody = table.tBodies[0];
    var us = units(tbody);
    us.forEach(function (u, i) { u.key = cellKey(u[0], col, numeric); u.pos = i; });
    us.sort(function (a, b) {
      var c = a.key < b.key ? -1 : a.key > b.key ? 1 : a.pos - b.pos;
      return dir === 'ascending' ? c : -c;
    });
    var frag = document.createDocumentFragment();
    us.forEach(function (u) { u.forEach(function (tr) { frag.appendChild(tr); }); });
    tbody.appendChild(frag);
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

  // ---- fused steps: children start collapsed; the toggle shows them.
  function setOpen(parent, open) {
    var id = parent.getAttribute('data-group');
    parent.classList.toggle('open', open);
    var b = parent.querySelector('button.tog');
    if (b) b.setAttribute('aria-expanded', open ? 'true' : 'false');
    $all('tr.child[data-parent="' + id + '"]', parent.parentNode).forEach(function (tr) {
      tr.classList.toggle('collapsed', !open);
    });
  }
  $all('tr.group').forEach(function (tr) {
    setOpen(tr, false);
    var b = tr.querySelector('button.tog');
    if (b) b.addEventListener('click', function () { setOpen(tr, !tr.classList.contains('open')); });
  });
  $all('button.expand-all').forEach(function (b) {
    b.addEventListener('click', function () {
      var open = b.getAttribute('data-open') !== 'true';
      b.setAttribute('data-open', open ? 'true' : 'false');
      b.textContent = open ? 'collapse all' : 'expand all';
      $all('tr.group', document.getElementById(b.getAttribute('data-table'))).forEach(function (tr) {
        setOpen(tr, open);
      });
    });
  });

  // ---- filter by node name or op type.
  function applyFilter(input) {
    var table = document.getElementById(input.getAttribute('data-table'));
    var q = input.value.trim().toLowerCase();
    var shown = 0, total = 0;
    units(table.tBodies[0]).forEach(function (u) {
      var any = false;
      u.forEach(function (tr) {
        var hay = (tr.getAttribute('data-name') || '') + '\n' + (tr.getAttribute('data-type') || '');
        var hit = !q || hay.toLowerCase().indexOf(q) >= 0;
        tr.classList.toggle('nomatch', !hit);
        any = any || hit;
      });
      // A step whose source node matches opens, so the match is visible.
      if (any && q && u.length > 1 && u[0].classList.contains('group')) setOpen(u[0], true);
      u.forEach(function (tr) { tr.classList.toggle('filtered', !any); });
      total += 1;
      shown += any ? 1 : 0;
    });
    var count = document.getElementById(input.getAttribute('data-count'));
    if (count) count.textContent = q ? shown + ' of ' + total + ' rows' : '';
  }
  $all('input.filter').forEach(function (input) {
    input.addEventListener('input', function () { applyFilter(input); });
  });

  // ---- links into the table (findings, roofline points): open the step, clear a filter that
  // hides the row, and highlight it.
  function reveal() {
    var id = decodeURIComponent(location.hash.slice(1));
    if (!id) return;
    var tr = document.getElementById(id);
    if (!tr || tr.tagName !== 'TR') return;
    if (tr.classList.contains('filtered')) {
      $all('input.filter').forEach(function (i) { i.value = ''; applyFilter(i); });
    }
    if (tr.classList.contains('child')) {
      var p = tr.parentNode.querySelector('tr.group[data-group="' + tr.getAttribute('data-parent') + '"]');
      if (p) setOpen(p, true);
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
  function selftest() {
    var r = {errors: errors, tables: {}, charts: {}};
    $all('table.sortable').forEach(function (table) {
      var t = {rows: table.tBodies[0].rows.length, declared: parseInt(table.getAttribute('data-rows'), 10)};
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
          var keys = units(table.tBodies[0]).map(function (u) { return cellKey(u[0], col, true); });
          for (var k = 1; k < keys.length; k++) {
            if (dir === 'descending' ? keys[k] > keys[k - 1] : keys[k] < keys[k - 1]) ok = false;
          }
        });
        t.sorted = ok;
        t.sort_column = ths[col].textContent;
        t.rows_after_sort = table.tBodies[0].rows.length;
      }
      var input = document.querySelector('input.filter[data-table="' + table.id + '"]');
      var first = table.querySelector('tr[data-type]:not(.group)');
      if (input && first) {
        // Filter by the first row's type: every row left visible must match it, and at least that one.
        var q = first.getAttribute('data-type');
        input.value = q;
        input.dispatchEvent(new Event('input'));
        var visible = $all('tr[data-op]', table).filter(function (tr) {
          return !tr.classList.contains('filtered') && !tr.classList.contains('nomatch');
        });
        t.filter_ok = visible.length > 0 && visible.every(function (tr) {
          var hay = (tr.getAttribute('data-name') + '\n' + tr.getAttribute('data-type')).toLowerCase();
          return hay.indexOf(q.toLowerCase()) >= 0;
        });
        input.value = '';
        input.dispatchEvent(new Event('input'));
        t.rows_after_filter = $all('tr', table.tBodies[0]).filter(function (tr) {
          return !tr.classList.contains('filtered');
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
