"use strict";
// bird leaderboard page (analysis/page.py inlines this file): sortable tables and clips that play while in view.

// Sort a table.sortable by the clicked column; a second click reverses. Cells sort by data-sort when they carry
// one (numbers; "" = no value, always last), else by their text. The sort is stable, so sorting by one column
// and then by another ranks within groups of the second.
function sortBy(table, th, col) {
  const ascending = th.getAttribute("aria-sort") !== "ascending";
  for (const other of table.tHead.rows[0].cells) other.removeAttribute("aria-sort");
  th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
  const body = table.tBodies[0];
  const rows = Array.from(body.rows, (row, index) => {
    const cell = row.cells[col];
    const raw = cell.dataset.sort !== undefined ? cell.dataset.sort : cell.textContent.trim();
    return { row, index, raw, num: cell.dataset.sort !== undefined && raw !== "" ? Number(raw) : NaN };
  });
  const numeric = rows.some((r) => !Number.isNaN(r.num));
  const sign = ascending ? 1 : -1;
  rows.sort((a, b) => {
    const aMissing = numeric ? Number.isNaN(a.num) : a.raw === "";
    const bMissing = numeric ? Number.isNaN(b.num) : b.raw === "";
    if (aMissing !== bMissing) return aMissing ? 1 : -1;
    let order = 0;
    if (!aMissing) order = numeric ? a.num - b.num : a.raw.localeCompare(b.raw, undefined, { numeric: true });
    return sign * order || a.index - b.index;
  });
  body.append(...rows.map((r) => r.row));
}

for (const table of document.querySelectorAll("table.sortable")) {
  Array.from(table.tHead.rows[0].cells).forEach((th, col) => {
    if (th.hasAttribute("data-nosort")) return;
    th.tabIndex = 0;
    th.addEventListener("click", () => sortBy(table, th, col));
    th.addEventListener("keydown", (event) => {
      if (event.key === "Enter" || event.key === " ") {
        event.preventDefault();
        sortBy(table, th, col);
      }
    });
  });
}

// Clips play (muted, looping) while on screen and pause when scrolled away.
const watcher = new IntersectionObserver((entries) => {
  for (const entry of entries) {
    if (entry.isIntersecting) entry.target.play().catch(() => {});
    else entry.target.pause();
  }
}, { threshold: 0.25 });
for (const video of document.querySelectorAll("video")) watcher.observe(video);
