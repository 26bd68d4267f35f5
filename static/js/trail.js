// The trail pages' small enhancements; both pages work without them.
// Loaded with `defer`; no inline script anywhere (the Content-Security-Policy forbids it).

// --- The builder: a text's "made from" checkboxes follow what is typed ---
// Each checkbox names a text of the level below, and says "(empty)" while that text's box is empty
// (an empty box is left out of the trail). The server rendered them as the form was sent (a new form
// shows none: without this script a note would stay after the reader types); this keeps them true.
function showEmptyNotes(textarea) {
  for (const note of document.querySelectorAll("[data-empty-of]")) {
    if (note.dataset.emptyOf === textarea.dataset.textOf) note.hidden = textarea.value.trim() !== "";
  }
}

function showAllEmptyNotes() {
  for (const textarea of document.querySelectorAll("textarea[data-text-of]")) showEmptyNotes(textarea);
}

// At load (a browser may have restored what was typed) and after htmx adds a box.
showAllEmptyNotes();
document.addEventListener("htmx:afterSettle", showAllEmptyNotes);

document.addEventListener("input", (event) => {
  const input = event.target;
  if (input instanceof HTMLInputElement && input.dataset.nameOf) {
    const name = input.value.trim() || input.placeholder;
    for (const label of document.querySelectorAll("[data-label-of]")) {
      if (label.dataset.labelOf === input.dataset.nameOf) label.textContent = name;
    }
  } else if (input instanceof HTMLTextAreaElement && input.dataset.textOf) {
    showEmptyNotes(input);
  }
});

// --- A trail run: the claim just selected shows its trail ---
// The trail sits below the text and the claims; on a long text the reader would not see it change.
const trailReducedMotion = window.matchMedia("(prefers-reduced-motion: reduce)");
const claimRequests = new WeakSet();

document.addEventListener("htmx:beforeRequest", (event) => {
  const source = event.detail.elt;
  if (source instanceof Element && source.matches(".trail-claims a, .trail-result a.sentence")) {
    claimRequests.add(event.detail.xhr);
  }
});

document.addEventListener("htmx:afterSettle", (event) => {
  if (!claimRequests.has(event.detail.xhr)) return;
  claimRequests.delete(event.detail.xhr);
  const panel = document.querySelector(".trail-panel");
  if (!panel) return;
  const top = panel.getBoundingClientRect().top;
  if (top < 0 || top > window.innerHeight * 0.6) {
    panel.scrollIntoView({ behavior: trailReducedMotion.matches ? "auto" : "smooth", block: "start" });
  }
});
