// The console's one script. Every page works without it (forms post and the
// server answers with a page); with it, forms marked data-async post in the
// background and the conversation page follows its turn live over SSE.
"use strict";
(() => {
  const $ = (id) => document.getElementById(id);

  function fromHtml(html) {
    const t = document.createElement("template");
    t.innerHTML = html;
    return t.content;
  }

  // Background forms: the answer is JSON ({ok, message}); the page stays, so
  // a live stream on it stays connected.
  document.addEventListener("submit", async (ev) => {
    const form = ev.target;
    if (!(form instanceof HTMLFormElement) || !form.hasAttribute("data-async")) return;
    ev.preventDefault();
    const body = new URLSearchParams(new FormData(form, ev.submitter));
    const note = form.querySelector("[data-message]");
    const buttons = form.querySelectorAll("button");
    buttons.forEach((b) => (b.disabled = true));
    try {
      const res = await fetch(form.action, {
        method: "POST", body, credentials: "same-origin", headers: { Accept: "application/json" },
      });
      const answer = await res.json().catch(() => ({ ok: false, message: "The server's answer could not be read." }));
      if (note) {
        note.textContent = answer.ok ? "" : answer.message || "That did not work.";
        note.hidden = !!answer.ok;
      }
      if (answer.ok && form.hasAttribute("data-reset")) form.reset();
    } catch (e) {
      if (note) { note.textContent = "The server could not be reached; try again."; note.hidden = false; }
    } finally {
      buttons.forEach((b) => (b.disabled = false));
    }
  });

  // Ctrl/Cmd+Enter sends the message box.
  document.addEventListener("keydown", (ev) => {
    const el = ev.target;
    if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey) && el instanceof HTMLTextAreaElement && el.form) {
      ev.preventDefault();
      el.form.requestSubmit();
    }
  });

  const transcript = $("transcript");
  if (!transcript) return;

  const nearBottom = () => window.innerHeight + window.scrollY >= document.body.scrollHeight - 80;

  // Applies the server's rendering operations (one SSE frame's list).
  function apply(ops) {
    const follow = nearBottom();
    for (const op of ops) {
      switch (op.op) {
        case "turn":
          if (!$(op.id)) transcript.append(fromHtml(op.html));
          break;
        case "head": {
          const old = $(op.id);
          if (old) old.replaceWith(fromHtml(op.html));
          const turn = old ? null : $(op.turn);
          if (turn) turn.prepend(fromHtml(op.html));
          const article = $(op.turn);
          if (article && op.status) article.dataset.status = op.status;
          break;
        }
        case "text": {
          const into = $(op.into);
          if (!into) break;
          const last = into.lastElementChild;
          if (last && last.dataset.merge === op.kind) {
            last.append(document.createTextNode(op.text));
          } else {
            const div = document.createElement("div");
            div.className = "blk " + op.kind;
            div.dataset.merge = op.kind;
            div.textContent = op.text;
            into.append(div);
          }
          break;
        }
        case "block": {
          const into = $(op.into);
          const old = op.id ? $(op.id) : null;
          const fresh = fromHtml(op.html).firstElementChild;
          if (!fresh) break;
          if (old) {
            // An update names only what changed: replace those parts, keep the rest.
            for (const part of fresh.querySelectorAll("[data-part]")) {
              const mine = old.querySelector(`[data-part="${part.dataset.part}"]`);
              if (mine) mine.replaceWith(part); else old.append(part);
            }
            if (fresh.dataset.status) old.dataset.status = fresh.dataset.status;
          } else if (into) {
            into.append(fresh);
          }
          break;
        }
        case "answered": {
          const el = $(op.id);
          if (el && !el.hasAttribute("data-answered")) {
            el.dataset.answered = "";
            const part = document.createElement("div");
            part.dataset.part = "answer";
            const p = document.createElement("p");
            p.className = "muted";
            p.textContent = op.text;
            part.append(p);
            el.append(part);
          }
          break;
        }
        case "activity": {
          const log = $("activity");
          if (log) {
            const li = document.createElement("li");
            li.textContent = op.text;
            log.append(li);
            while (log.children.length > 50) log.firstElementChild.remove();
          }
          break;
        }
      }
    }
    if (follow) window.scrollTo(0, document.body.scrollHeight);
  }

  // The live stream; EventSource resumes after a drop with Last-Event-ID, and
  // the server sends each event once, in order.
  const live = $("live");
  const setLive = (state, text) => { if (live) { live.dataset.state = state; live.textContent = text; } };
  if (transcript.dataset.live && "EventSource" in window) {
    const es = new EventSource(transcript.dataset.live);
    es.addEventListener("ops", (e) => apply(JSON.parse(e.data)));
    es.addEventListener("open", () => setLive("live", "live"));
    es.addEventListener("error", () => setLive("reconnecting", "reconnecting…"));
  }

  // Older turns load when their link scrolls into view (whole turns per page).
  function watchOlder() {
    const link = $("older");
    if (!link || !("IntersectionObserver" in window)) return;
    const seen = new IntersectionObserver(async (entries) => {
      if (!entries.some((e) => e.isIntersecting)) return;
      seen.disconnect();
      const res = await fetch(link.dataset.fragment, { credentials: "same-origin" });
      if (!res.ok) return;
      const before = document.documentElement.scrollHeight;
      const holder = link.closest(".older");
      holder.replaceWith(fromHtml(await res.text()));
      window.scrollBy(0, document.documentElement.scrollHeight - before);
      watchOlder();
    });
    seen.observe(link);
  }
  watchOlder();
  window.scrollTo(0, document.body.scrollHeight);
})();
