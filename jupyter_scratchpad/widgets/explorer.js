// The scratchpad explorer's page: an anywidget ES module (no build step, no dependencies).
//
// State comes from the model's traitlets (entries, handle, relations, budget, as_agent, title,
// defaults); pages come back as replies to custom messages:
//   page → kernel  {type: "request", id, action, args}
//   kernel → page  {type: "reply", id, ok, view | error}
// Everything from the kernel is put in the page as text (textContent), never parsed as HTML.

const TABS = [
  ["preview", "Preview"],
  ["schema", "Schema"],
  ["grep", "Grep"],
  ["iterate", "Iterate"],
  ["sql", "SQL"],
];
// Which tab takes a suggested tool call.
const TOOL_TAB = {
  head: "preview", tail: "preview", slice: "preview", schema: "schema", item_schema: "schema",
  get_in: "schema", grep: "grep", iterate_over: "iterate", sql: "sql",
};

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

function count(n) {
  return n === null || n === undefined ? "?" : Number(n).toLocaleString("en-US");
}

function bytes(n) {
  if (n === null || n === undefined) return "?";
  if (n < 1024) return `${count(n)} bytes`;
  const units = ["KB", "MB", "GB"];
  let value = n / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}

function button(label, title, onClick, className = "") {
  const node = el("button", `jp-scratchpad-x-button ${className}`.trim(), label);
  node.type = "button";
  node.title = title;
  node.addEventListener("click", onClick);
  return node;
}

function input(label, value, attrs = {}) {
  const wrap = el("label", "jp-scratchpad-x-field");
  wrap.append(el("span", "", label));
  const node = el(attrs.multiline ? "textarea" : "input");
  if (!attrs.multiline) node.type = attrs.type || "text";
  for (const [k, v] of Object.entries(attrs)) {
    if (k !== "multiline" && k !== "type") node.setAttribute(k, v);
  }
  node.value = value;
  wrap.append(node);
  return [wrap, node];
}

function checkbox(label, checked) {
  const wrap = el("label", "jp-scratchpad-x-check");
  const node = el("input");
  node.type = "checkbox";
  node.checked = checked;
  wrap.append(node, el("span", "", label));
  return [wrap, node];
}

function row(...children) {
  const node = el("div", "jp-scratchpad-x-row");
  node.append(...children);
  return node;
}

// -- views -----------------------------------------------------------------------------------

// A match's path in the document (grep of a JSON entry): a link that shows the value at it.
// It tells the explorer by an event, so a view stays plain DOM that any page can render.
export const PATH_EVENT = "jp-scratchpad-path";
// A read as the model was charged to the budget: the page's other budget read-outs (JupyterLab's
// status bar and sidebar) refresh on it, instead of waiting for the next cell.
export const CHARGED_EVENT = "jp-scratchpad-charged";

function pathLink(path) {
  const link = el("a", "jp-scratchpad-x-path", path);
  link.href = "#";
  link.title = "show the value at this path (get_in)";
  link.addEventListener("click", (e) => {
    e.preventDefault();
    link.dispatchEvent(new CustomEvent(PATH_EVENT, { bubbles: true, detail: { path } }));
  });
  return link;
}

function numbered(windows, marked, paths) {
  const marks = new Set(marked || []);
  const at = paths || {};
  const pre = el("pre", "jp-scratchpad-x-lines");
  windows.forEach((w, i) => {
    if (i) pre.append(document.createTextNode("--\n"));
    w.lines.forEach((line, j) => {
      const n = w.first + j;
      const text = `${marks.has(n) ? ">" : " "}${String(n).padStart(6)}  ${line}`;
      if (!marks.has(n)) {
        pre.append(document.createTextNode(`${text}\n`));
        return;
      }
      const path = at[String(n)];
      pre.append(el("mark", "", path ? `${text}  ` : text));
      if (path) pre.append(pathLink(path));
      pre.append(document.createTextNode("\n"));
    });
  });
  return pre;
}

function table(view) {
  const wrap = el("div", "jp-scratchpad-x-table");
  const t = el("table");
  const head = el("tr");
  for (const c of view.columns) head.append(el("th", "", c));
  t.append(el("thead"));
  t.firstChild.append(head);
  const body = el("tbody");
  for (const r of view.rows) {
    const tr = el("tr");
    for (const c of r) tr.append(el("td", "", c));
    body.append(tr);
  }
  t.append(body);
  wrap.append(t);
  return wrap;
}

export function renderView(view) {
  const box = el("div", "jp-scratchpad-x-view");
  box.dataset.kind = view.kind;
  if (view.summary) box.append(el("div", "jp-scratchpad-x-summary", view.summary));
  if (view.kind === "lines") box.append(numbered([{ first: view.first, lines: view.lines }], view.marked));
  else if (view.kind === "windows") box.append(numbered(view.windows, view.marked, view.paths));
  else if (view.kind === "table") box.append(table(view));
  else box.append(el("pre", "jp-scratchpad-x-text", view.text));
  return box;
}

// -- the explorer ----------------------------------------------------------------------------

const GONE_CODE = "kernel_gone";
export const GONE_MESSAGE =
  "The kernel restarted (or stopped): this explorer is no longer live. Run %scratch explore again.";

function render({ model, el: root }) {
  root.classList.add("jp-scratchpad-explorer");
  const defaults = model.get("defaults") || {};
  let counter = 0;
  const pending = new Map();
  const onMessage = (msg) => {
    if (!msg || msg.type !== "reply" || !pending.has(msg.id)) return;
    const settle = pending.get(msg.id);
    pending.delete(msg.id);
    settle(msg);
  };
  model.on("msg:custom", onMessage);
  // The kernel end is gone (a restart, a shutdown): this page is a picture, no longer live.
  let gone = false;
  const goneReply = (id) => ({ type: "reply", id, ok: false, error: { error: GONE_CODE, message: GONE_MESSAGE } });
  const request = (action, args = {}) =>
    new Promise((resolve) => {
      counter += 1;
      const id = counter;
      if (gone) {
        resolve(goneReply(id));
        return;
      }
      pending.set(id, resolve);
      try {
        model.send({ type: "request", id, action, args });
      } catch {
        // "Cannot send": the comm went with its kernel (a shutdown says nothing before this)
        pending.delete(id);
        resolve(goneReply(id));
        markGone();
      }
    });

  // Header: title, the "as the model" switch, the budget meter.
  const title = el("div", "jp-scratchpad-x-title");
  const [agentWrap, agentBox] = checkbox("as the model would see it (capped, charged)", model.get("as_agent"));
  agentBox.dataset.role = "as-agent";
  agentBox.addEventListener("change", () => {
    model.set("as_agent", agentBox.checked);
    model.save_changes();
  });
  const meter = el("div", "jp-scratchpad-x-meter");
  const bar = el("progress");
  const meterText = el("span", "jp-scratchpad-x-meter-text");
  meter.append(bar, meterText);

  // Entry picker.
  const picker = el("select", "jp-scratchpad-x-picker");
  picker.addEventListener("change", () => request("select", { handle: picker.value }));
  const info = el("div", "jp-scratchpad-x-info");
  const refresh = button("↻", "look for new spills", () => request("refresh"));
  // Only a page of the entries is in the model (the newest ones matching the filter): the
  // filter is how the rest are reached.
  const [filterWrap, filterBox] = input("find", "", { placeholder: "handle, tool or format" });
  let filterTimer = null;
  filterBox.addEventListener("input", () => {
    clearTimeout(filterTimer);
    filterTimer = setTimeout(() => {
      model.set("entry_filter", filterBox.value);
      model.save_changes();
    }, 250);
  });
  const pageNote = el("small", "jp-scratchpad-x-page-note");

  // Notice: errors and refusals with their suggestions.
  const notice = el("div", "jp-scratchpad-x-notice");
  // Progress: a request waiting on long work in the kernel (a first SQL load of a large handle).
  const progressLine = el("div", "jp-scratchpad-x-progress");

  // A restart disconnects the widget models (comm_live_update); a send on a closed comm throws.
  // Either way: say so, settle what waits, and disable the controls (no click hangs on "…").
  function markGone() {
    gone = true; // (idempotent: a later failed request draws the same notice again)
    root.dataset.state = "gone";
    for (const [id, settle] of pending) settle(goneReply(id));
    pending.clear();
    progressLine.replaceChildren();
    notice.replaceChildren(el("div", "jp-scratchpad-x-error jp-scratchpad-x-gone", GONE_MESSAGE));
    for (const node of root.querySelectorAll("button, input, select, textarea")) node.disabled = true;
  }

  const tabBar = el("div", "jp-scratchpad-x-tabs");
  const panels = {};
  const results = {};
  for (const [name, label] of TABS) {
    const tab = button(label, label, () => show(name), "jp-scratchpad-x-tab");
    tab.dataset.tab = name;
    tabBar.append(tab);
    panels[name] = el("div", "jp-scratchpad-x-panel");
    panels[name].dataset.tab = name;
    results[name] = el("div", "jp-scratchpad-x-result");
  }
  function show(name) {
    for (const [n] of TABS) {
      panels[n].hidden = n !== name;
      tabBar.querySelector(`[data-tab="${n}"]`).classList.toggle("jp-mod-active", n === name);
    }
  }

  async function run(tab, action, args) {
    notice.replaceChildren();
    results[tab].replaceChildren(el("div", "jp-scratchpad-x-summary", "…"));
    const reply = await request(action, args);
    if (model.get("as_agent") && reply.error?.error !== GONE_CODE) {
      root.dispatchEvent(new CustomEvent(CHARGED_EVENT, { bubbles: true, detail: { action } }));
    }
    if (!reply.ok) {
      results[tab].replaceChildren(); // a stale page must not look like this query's answer
      showError(reply.error || {});
      return null;
    }
    results[tab].replaceChildren(renderView(reply.view));
    return reply.view;
  }

  function showError(error) {
    if (error.error === GONE_CODE) {
      markGone();
      return;
    }
    const message = el("div", "jp-scratchpad-x-error", `${error.error || "error"}: ${error.message || ""}`);
    notice.replaceChildren(message);
    for (const s of (error.suggestions || []).slice(0, 8)) {
      const tab = TOOL_TAB[s.tool];
      const b = button(`${s.tool}: ${s.why || s.call || ""}`.slice(0, 70), s.call || s.tool, () => fill(s));
      b.dataset.suggestion = s.call || "";
      if (!tab) b.disabled = true;
      notice.append(b);
    }
  }

  // Preview --------------------------------------------------------------------------------
  const [linesWrap, linesBox] = input("lines", defaults.preview_lines || 50, { type: "number", min: 1 });
  const [startWrap, startBox] = input("from line", 1, { type: "number", min: 1 });
  let shown = null;
  // Next stops at the last page (after Tail, or a page that reached the end).
  const previewNext = button("Next", "the page after", () => preview("slice", (shown ? shown.end : 0) + 1));
  const forgetPreviewPage = () => {
    shown = null;
    previewNext.disabled = false;
    previewNext.title = "the page after";
  };
  const preview = async (tool, start) => {
    const args = { tool, lines: Number(linesBox.value) };
    if (tool === "slice") args.start = start;
    const view = await run("preview", "preview", args);
    if (view) {
      shown = view;
      startBox.value = view.start;
      const last = typeof view.end === "number" && typeof view.total === "number" && view.end >= view.total;
      previewNext.disabled = last;
      previewNext.title = last ? "the last page: no lines after it" : "the page after";
    }
  };
  panels.preview.append(
    row(
      linesWrap,
      button("Head", "the first lines", () => preview("head")),
      button("Tail", "the last lines", () => preview("tail")),
      startWrap,
      button("Show range", "lines from `from line`", () => preview("slice", Number(startBox.value))),
      button("Prev", "the page before", () =>
        preview("slice", Math.max(1, (shown ? shown.start : 1) - Number(linesBox.value)))),
      previewNext,
    ),
    results.preview,
  );

  // Schema ---------------------------------------------------------------------------------
  const paths = el("datalist");
  paths.id = `jp-scratchpad-x-paths-${Math.random().toString(36).slice(2)}`;
  const [depthWrap, depthBox] = input("max depth", 4, { type: "number", min: 0 });
  const [pathWrap, pathBox] = input("path", "$", { list: paths.id });
  const schema = async () => {
    const view = await run("schema", "schema", { max_depth: Number(depthBox.value) });
    if (view && view.paths) {
      paths.replaceChildren(...view.paths.map((p) => Object.assign(el("option"), { value: p })));
      if (view.paths.length && (pathBox.value === "$" || !pathBox.value)) pathBox.value = view.paths[0];
      if (view.paths.length && (iterPathBox.value === "$" || !iterPathBox.value)) iterPathBox.value = view.paths[0];
    }
  };
  panels.schema.append(
    paths,
    row(depthWrap, button("Schema", "the structure of the entry", schema)),
    row(
      pathWrap,
      button("Item schema", "keys, types and presence across the array's items", () =>
        run("schema", "item_schema", { path: pathBox.value })),
      button("Get value", "the value at the path", () => run("schema", "get_in", { path: pathBox.value })),
    ),
    results.schema,
  );

  // Grep -----------------------------------------------------------------------------------
  const [patternWrap, patternBox] = input("pattern", "", { placeholder: "regex (RE2), e.g. error|failed" });
  const [caseWrap, caseBox] = checkbox("ignore case", false);
  const [contextWrap, contextBox] = input("context", defaults.grep_context ?? 1, { type: "number", min: 0 });
  const [maxWrap, maxBox] = input("matches", defaults.grep_max || 20, { type: "number", min: 1 });
  const more = button("More", "show more matches", () => grep(Number(maxBox.value) + (defaults.grep_max || 20)));
  more.hidden = true;
  const grep = async (maxMatches) => {
    maxBox.value = maxMatches;
    const view = await run("grep", "grep", {
      pattern: patternBox.value, ignore_case: caseBox.checked, context: Number(contextBox.value),
      max_matches: maxMatches,
    });
    more.hidden = !(view && view.more);
  };
  patternBox.addEventListener("keydown", (e) => e.key === "Enter" && grep(Number(maxBox.value)));
  panels.grep.append(
    row(patternWrap, caseWrap, contextWrap, maxWrap, button("Search", "grep the entry", () => grep(Number(maxBox.value)))),
    results.grep,
    more,
  );

  // Iterate --------------------------------------------------------------------------------
  const [iterPathWrap, iterPathBox] = input("path", "$", { list: paths.id });
  const [fieldsWrap, fieldsBox] = input("fields", "", { placeholder: "metadata.name,status.phase" });
  const [offsetWrap, offsetBox] = input("offset", 0, { type: "number", min: 0 });
  const [rowsWrap, rowsBox] = input("rows", defaults.iterate_rows || 20, { type: "number", min: 1 });
  // Next goes on right after the last row shown: the reply's next_offset (a page whose rows did
  // not all fit shows fewer than asked for; offset + rows skipped the others). null: the last page.
  let iterShown = null;
  const iterNext = button("Next", "the page after the rows shown", () =>
    iterate(iterShown ? iterShown.next_offset : Number(offsetBox.value) + Number(rowsBox.value)));
  const iterate = async (offset) => {
    offsetBox.value = Math.max(0, offset);
    const view = await run("iterate", "iterate", {
      path: iterPathBox.value, fields: fieldsBox.value, offset: Number(offsetBox.value), limit: Number(rowsBox.value),
    });
    iterShown = view && typeof view.next_offset !== "undefined" ? view : null;
    iterNext.disabled = Boolean(iterShown) && iterShown.next_offset === null;
    iterNext.title = iterNext.disabled ? "the last page: no rows after it" : "the page after the rows shown";
    return view;
  };
  const forgetIterPage = () => {
    // another path, fields or offset typed in: Next reads the boxes again
    iterShown = null;
    iterNext.disabled = false;
  };
  for (const box of [iterPathBox, fieldsBox, offsetBox]) box.addEventListener("input", forgetIterPage);
  panels.iterate.append(
    row(iterPathWrap, fieldsWrap),
    row(
      offsetWrap, rowsWrap,
      button("Show", "the rows from offset", () => iterate(Number(offsetBox.value))),
      button("Prev", "the page before", () => iterate(Number(offsetBox.value) - Number(rowsBox.value))),
      iterNext,
    ),
    results.iterate,
  );

  // SQL ------------------------------------------------------------------------------------
  const [queryWrap, queryBox] = input("query", "", { multiline: true, rows: 5, placeholder: "SELECT * FROM <handle>" });
  const [pageWrap, pageBox] = input("rows per page", defaults.sql_page || 20, { type: "number", min: 1 });
  const relations = el("select", "jp-scratchpad-x-relations");
  relations.size = 6;
  let sqlOffset = 0;
  // Next goes on right after the last row shown: the reply's next_offset (a page whose rows did
  // not all fit shows fewer than asked for; offset + rows per page skipped the others). null: no
  // page after this one, or a statement that cannot be paged (its summary says which).
  let sqlNext = null;
  let lastDefault = "";
  const sqlPrev = button("Prev", "the page before", () => sql(Math.max(0, sqlOffset - Number(pageBox.value))));
  const sqlNextButton = button("Next", "the page after the rows shown", () => sqlNext !== null && sql(sqlNext));
  const sqlPaging = (view) => {
    sqlOffset = view ? view.offset || 0 : 0;
    sqlNext = view && typeof view.next_offset === "number" ? view.next_offset : null;
    const paged = Boolean(view) && view.total !== null && view.total !== undefined;
    sqlPrev.disabled = !paged || sqlOffset === 0;
    sqlNextButton.disabled = sqlNext === null;
    const why = !view ? "run a query first" : !paged ? "this statement cannot be paged (see the summary)" : "";
    sqlPrev.title = why || (sqlOffset === 0 ? "the first page" : "the page before");
    sqlNextButton.title = why || (sqlNext === null ? "the last page" : "the page after the rows shown");
  };
  sqlPaging(null);
  const sql = async (offset) => {
    const view = await run("sql", "sql", { query: queryBox.value, offset, page_size: Number(pageBox.value) });
    sqlPaging(view);
  };
  // h, or h.items (an array's rows): each part quoted on its own
  const quote = (name) => name.split(".").map((part) => `"${part.replace(/"/g, '""')}"`).join(".");
  const setDefaultQuery = (name) => {
    // Only a query the user has not touched follows the selection.
    if (queryBox.value.trim() === "" || queryBox.value === lastDefault) {
      lastDefault = `SELECT * FROM ${quote(name)}`;
      queryBox.value = lastDefault;
    }
  };
  relations.addEventListener("change", () => relations.value && setDefaultQuery(relations.value));
  panels.sql.append(
    row(queryWrap),
    row(
      pageWrap,
      button("Run", "run the query", () => sql(0)),
      sqlPrev,
      sqlNextButton,
    ),
    row(
      el("span", "", "relations"),
      relations,
      button("Columns", "DESCRIBE the chosen relation", () =>
        relations.value && run("sql", "describe", { relation: relations.value })),
    ),
    results.sql,
  );

  // A path beside a grep match: the Schema tab shows the value at it.
  root.addEventListener(PATH_EVENT, (e) => {
    pathBox.value = e.detail.path;
    show("schema");
    run("schema", "get_in", { path: e.detail.path });
  });

  function fill(s) {
    const tab = TOOL_TAB[s.tool];
    if (!tab) return;
    const a = s.arguments || {};
    if (a.handle && a.handle !== model.get("handle")) request("select", { handle: a.handle });
    if (tab === "preview") {
      if (a.lines) linesBox.value = a.lines;
      if (a.start) {
        startBox.value = a.start;
        if (a.end) linesBox.value = a.end - a.start + 1;
      }
    } else if (tab === "schema") {
      if (a.path) pathBox.value = a.path;
      if (a.max_depth !== undefined) depthBox.value = a.max_depth;
    } else if (tab === "grep") {
      if (a.pattern !== undefined) patternBox.value = a.pattern;
      if (a.context !== undefined) contextBox.value = a.context;
      if (a.max_matches !== undefined) maxBox.value = a.max_matches;
    } else if (tab === "iterate") {
      if (a.path) iterPathBox.value = a.path;
      if (a.fields) fieldsBox.value = Array.isArray(a.fields) ? a.fields.join(",") : a.fields;
      if (a.offset !== undefined) offsetBox.value = a.offset;
      if (a.limit !== undefined) rowsBox.value = a.limit;
    } else if (tab === "sql" && a.query) {
      queryBox.value = a.query;
    }
    show(tab);
    notice.append(el("div", "jp-scratchpad-x-filled", `filled in from ${s.call || s.tool}: check it and run`));
  }

  // Model state → page ----------------------------------------------------------------------
  function drawEntries() {
    const entries = model.get("entries") || [];
    const handle = model.get("handle");
    const options = entries
      .slice()
      .reverse()
      .map((e) => {
        const o = el("option", "", `${e.handle} · ${e.source_tool || "?"} · ${bytes(e.size)} · ${count(e.tokens)} tokens`);
        o.value = e.handle;
        o.selected = e.handle === handle;
        return o;
      });
    picker.replaceChildren(...options);
    picker.disabled = options.length === 0;
    const total = model.get("entries_total") || 0;
    const left = model.get("entries_left") || 0;
    const words = model.get("entry_filter") || "";
    pageNote.textContent = left
      ? ` newest ${count(entries.length)} of ${count(total)} ${words ? "matching " : ""}entries shown: type in find for the others`
      : words ? ` ${count(total)} entries match` : "";
    const entry = entries.find((e) => e.handle === handle);
    info.textContent = entry
      ? `${entry.format} · ${bytes(entry.size)} · ${count(entry.lines)} lines · ${count(entry.tokens)} tokens · from ${entry.source_tool || "?"}`
      : "No spilled outputs yet in this run: large outputs spill on their own.";
    const names = (model.get("relations") || []).map((r) => r.name);
    relations.replaceChildren(...names.map((n) => Object.assign(el("option", "", n), { value: n })));
    if (handle) {
      // An array's own relation (handle.path) reads as rows; prefer it when the core offers one.
      const own = names.find((n) => n.startsWith(`${handle}.`)) || handle;
      relations.value = own;
      setDefaultQuery(own);
    }
  }
  function drawBudget() {
    const b = model.get("budget") || {};
    bar.max = Math.max(1, b.usable || 1);
    bar.value = Math.min(b.used || 0, bar.max);
    meterText.textContent =
      `${b.model || ""}: used ${count(b.used)} / ${count(b.usable)} tokens · ${count(b.remaining)} left · ` +
      `≤ ${count(b.per_call_limit)} a call · intercepted ${count(b.tokens_intercepted)} · ` +
      `extracted ${count(b.tokens_extracted)}`;
  }
  function drawProgress() {
    const p = model.get("progress") || {};
    if (!p.text) {
      progressLine.replaceChildren();
      return;
    }
    const meterBar = el("progress");
    if (typeof p.percent === "number") {
      meterBar.max = 100;
      meterBar.value = p.percent;
    } // no figure yet: an indeterminate bar
    progressLine.replaceChildren(meterBar, el("small", "", ` ${p.text}`));
  }
  function drawTitle() {
    title.replaceChildren(el("b", "", "Scratchpad explorer"), el("small", "", ` ${model.get("title")}`));
  }
  const handlers = [
    ["change:entries", drawEntries],
    ["change:handle", () => {
      drawEntries();
      for (const [name] of TABS) if (name !== "sql") results[name].replaceChildren();
      forgetIterPage();
      forgetPreviewPage();
    }],
    ["change:relations", drawEntries],
    ["change:entries_left", drawEntries],
    ["change:budget", drawBudget],
    ["change:progress", drawProgress],
    ["change:title", drawTitle],
    ["change:as_agent", () => (agentBox.checked = model.get("as_agent"))],
    // set false after the view is drawn only when the kernel restarts (the widget manager's disconnect)
    ["comm_live_update", markGone],
  ];
  for (const [event, fn] of handlers) model.on(event, fn);

  const header = el("div", "jp-scratchpad-x-header");
  header.append(title, agentWrap);
  root.replaceChildren(header, meter, row(picker, refresh, filterWrap, pageNote), info, notice, progressLine, tabBar, ...TABS.map(([n]) => panels[n]));
  drawTitle();
  drawEntries();
  drawBudget();
  drawProgress();
  show("preview");
  return () => {
    model.off("msg:custom", onMessage);
    for (const [event, fn] of handlers) model.off(event, fn);
  };
}

export default { render };
