// The only script of our own: copying the permalink. Everything else is HTMX.
document.addEventListener("click", async (event) => {
  const button = event.target.closest("[data-copy-link]");
  if (!button) return;
  const link = window.location.href;
  try {
    await navigator.clipboard.writeText(link);
    button.textContent = "Link copied";
  } catch {
    window.prompt("Copy this link:", link);
  }
  setTimeout(() => { button.textContent = "Copy link"; }, 2000);
});
