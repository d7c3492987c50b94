// The filters of catalog.html: status, category, year range, venue and a text search, with their state
// in the URL fragment (#q=…&status=…&category=…&year=…&venue=…). Rows are only shown or hidden (their
// `hidden` attribute): the table is whole without this script, and nothing here writes markup.
(() => {
  "use strict";
  const form = document.getElementById("filters");
  const controls = form.elements;
  const shown = document.getElementById("shown");
  const noMatch = document.getElementById("no-match");
  const KEYS = ["q", "status", "category", "year", "venue"];

  // Search text without case or accents: "gomez" finds "Gómez".
  const fold = (text) => text.normalize("NFKD").replace(/\p{M}+/gu, "").toLowerCase();

  const sections = Array.from(document.querySelectorAll("section[data-category]"), (section) => ({
    section,
    name: section.dataset.category,
    count: section.querySelector(".count"),
    rows: Array.from(section.querySelectorAll("tbody > tr"), (tr) => {
      const venue = tr.cells[2].textContent;
      const text = [tr.cells[1].textContent, tr.dataset.authors, venue, tr.cells[3].textContent, tr.dataset.tags];
      return {
        tr,
        read: tr.dataset.status === "read",
        year: Number.parseInt(tr.dataset.year, 10),
        venue: fold(venue),
        text: fold(text.join("\n")),
      };
    }),
  }));
  const total = sections.reduce((sum, s) => sum + s.rows.length, 0);

  // "2019-2023", "2023", "2019-", "-2023" → [from, to] (NaN: open).
  function yearRange(text) {
    const match = /^\s*(\d{1,4})?\s*(-)?\s*(\d{1,4})?\s*$/.exec(text || "");
    if (!match) return [Number.NaN, Number.NaN];
    const from = Number.parseInt(match[1], 10);
    const to = match[2] ? Number.parseInt(match[3], 10) : from;
    return [from, to];
  }

  function fromControls() {
    const from = controls.from.value.trim();
    const to = controls.to.value.trim();
    return {
      q: controls.q.value,
      status: controls.status.value,
      category: controls.category.value,
      year: from === to ? from : `${from}-${to}`,
      venue: controls.venue.value,
    };
  }

  function toControls(state) {
    controls.q.value = state.q;
    controls.status.value = ["read", "unread"].includes(state.status) ? state.status : "";
    const known = Array.from(controls.category.options, (option) => option.value);
    controls.category.value = known.includes(state.category) ? state.category : "";
    const [from, to] = yearRange(state.year);
    controls.from.value = Number.isNaN(from) ? "" : String(from);
    controls.to.value = Number.isNaN(to) ? "" : String(to);
    controls.venue.value = state.venue;
  }

  function fromFragment() {
    const params = new URLSearchParams(window.location.hash.slice(1));
    return Object.fromEntries(KEYS.map((key) => [key, params.get(key) || ""]));
  }

  function toFragment(state) {
    const params = new URLSearchParams();
    for (const key of KEYS) {
      if (state[key].trim()) params.set(key, state[key].trim());
    }
    const text = params.toString();
    const url = text ? `#${text}` : window.location.pathname + window.location.search;
    if (url !== (text ? window.location.hash : "")) window.history.replaceState(null, "", url);
  }

  function apply(state) {
    const words = fold(state.q).split(/\s+/).filter(Boolean);
    const venue = fold(state.venue).trim();
    const [from, to] = yearRange(state.year);
    const status = ["read", "unread"].includes(state.status) ? state.status === "read" : null;
    let visible = 0;
    let read = 0;
    for (const group of sections) {
      const inCategory = !state.category || group.name === state.category;
      let here = 0;
      for (const row of group.rows) {
        const match =
          inCategory &&
          (status === null || row.read === status) &&
          (Number.isNaN(from) || row.year >= from) &&
          (Number.isNaN(to) || row.year <= to) &&
          (!venue || row.venue.includes(venue)) &&
          words.every((word) => row.text.includes(word));
        if (row.tr.hidden === match) row.tr.hidden = !match;
        if (match) {
          here += 1;
          if (row.read) read += 1;
        }
      }
      if (group.section.hidden === (here > 0)) group.section.hidden = here === 0;
      group.count.textContent = `(${here})`;
      visible += here;
    }
    const counts = { shown: visible, entries: total, read, unread: visible - read };
    shown.textContent = shown.dataset.template.replace(/\{(\w+)\}/g, (all, name) =>
      name in counts ? String(counts[name]) : all,
    );
    noMatch.hidden = visible > 0;
  }

  function fromUrl() {
    const state = fromFragment();
    toControls(state);
    apply(state);
  }

  form.addEventListener("input", () => {
    const state = fromControls();
    apply(state);
    toFragment(state);
  });
  form.addEventListener("submit", (event) => event.preventDefault());
  form.addEventListener("reset", () => {
    window.setTimeout(() => {
      const state = fromControls();
      apply(state);
      toFragment(state);
    });
  });
  window.addEventListener("hashchange", fromUrl);
  form.hidden = false;
  fromUrl();
})();
