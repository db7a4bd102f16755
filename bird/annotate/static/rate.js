// The rating page: fetch the current clip, collect the two answers (mouse or keyboard), post them, repeat.
"use strict";
(() => {
  const base = location.pathname.replace(/\/?$/, "/");
  const $ = (id) => document.getElementById(id);
  let state = null, answers = {}, active = "completion", shownAt = 0;

  function asked() {
    return state && state.item && state.item.ask_naturalness ? ["completion", "naturalness"] : ["completion"];
  }

  function buildScale(name) {
    const box = $(name + "-scale");
    box.replaceChildren();
    state.questions[name].labels.forEach((label, i) => {
      const b = document.createElement("button");
      b.type = "button";
      b.dataset.value = String(i + 1);
      b.setAttribute("aria-pressed", "false");
      const key = document.createElement("span"); key.className = "key"; key.textContent = String(i + 1);
      const txt = document.createElement("span"); txt.className = "txt"; txt.textContent = label;
      b.append(key, txt);
      b.addEventListener("click", () => choose(name, i + 1));
      box.append(b);
    });
    $(name + "-text").textContent = state.questions[name].text;
  }

  function setActive(name) {
    active = name;
    for (const q of ["completion", "naturalness"]) $("q-" + q).classList.toggle("active", q === name);
  }

  function choose(name, value) {
    answers[name] = value;
    for (const b of $(name + "-scale").children) b.setAttribute("aria-pressed", String(b.dataset.value == value));
    const qs = asked(), next = qs[qs.indexOf(name) + 1];
    if (next && answers[next] === undefined) setActive(next);
    $("submit").disabled = !qs.every((q) => answers[q] !== undefined);
  }

  function render() {
    const pct = state.total ? (100 * state.answered) / state.total : 100;
    $("fill").style.width = pct + "%";
    $("count").textContent = state.done ? `${state.total} of ${state.total}` : `clip ${state.answered + 1} of ${state.total}`;
    $("rater").textContent = "Rater " + state.rater;
    if (state.done) { $("main").hidden = true; $("done").hidden = false; return; }
    $("main").hidden = false;
    const item = state.item;
    answers = {};
    buildScale("completion");
    buildScale("naturalness");
    $("q-naturalness").hidden = !item.ask_naturalness;
    $("natural-skipped").hidden = item.ask_naturalness;
    $("task").textContent = item.description;
    $("video").src = base + item.clip_url;
    $("submit").disabled = true;
    $("error").textContent = "";
    setActive("completion");
    shownAt = performance.now();
  }

  async function call(path, body) {
    const opts = body ? { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) } : {};
    const resp = await fetch(base + path, opts);
    const data = await resp.json();
    if (!resp.ok) throw new Error(data.error || resp.statusText);
    return data;
  }

  async function submit() {
    if ($("submit").disabled) return;
    $("submit").disabled = true;
    const body = { position: state.item.position, completion: answers.completion,
                   naturalness: state.item.ask_naturalness ? answers.naturalness : null,
                   elapsed_ms: Math.round(performance.now() - shownAt) };
    try { state = await call("api/answer", body); render(); }
    catch (err) { $("error").textContent = "Not saved: " + err.message; $("submit").disabled = false; }
  }

  document.addEventListener("keydown", (e) => {
    if (!state || state.done || e.altKey || e.ctrlKey || e.metaKey) return;
    const v = $("video");
    if (/^[1-9]$/.test(e.key) && Number(e.key) <= state.scale) { choose(active, Number(e.key)); e.preventDefault(); }
    else if (e.key === "Enter") { submit(); e.preventDefault(); }
    else if (e.key === " ") { if (v.paused) v.play(); else v.pause(); e.preventDefault(); }
    else if (e.key === "r" || e.key === "R") { v.currentTime = 0; v.play(); }
    else if (["Tab", "ArrowUp", "ArrowDown"].includes(e.key) && asked().length > 1) {
      setActive(active === "completion" ? "naturalness" : "completion"); e.preventDefault();
    }
  });
  $("submit").addEventListener("click", submit);
  call("api/state").then((s) => { state = s; render(); })
    .catch((err) => { document.body.textContent = "Cannot load the study: " + err.message; });
})();
