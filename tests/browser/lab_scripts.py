"""The JavaScript `lab_driver.LabPage` runs in the page to see what JupyterLab is doing.

Each takes the notebook panel's selector and reads JupyterLab's DOM: which cells
ran, whether the kernel is idle, whether it restarted.
"""

# Records, per cell, that its prompt showed "[*]" since the last reset: a run is
# seen even when it is too quick to catch by polling, or ends on the same count.
WATCH_RUNS = """(panelSelector) => {
  window.__nbaRan = new Set();
  if (window.__nbaRunObserver) { window.__nbaRunObserver.disconnect(); }
  const panel = document.querySelector(panelSelector);
  const note = () => {
    panel.querySelectorAll('.jp-Notebook .jp-Cell').forEach((cell, index) => {
      const prompt = cell.querySelector('.jp-InputPrompt');
      if (prompt && prompt.textContent.includes('[*]')) { window.__nbaRan.add(index); }
    });
  };
  window.__nbaRunObserver = new MutationObserver(note);
  window.__nbaRunObserver.observe(panel, {subtree: true, childList: true, characterData: true});
}"""

# True when the kernel is idle and every non-empty code cell in `cells` (all when
# null) has run since _WATCH_RUNS and no longer shows "[*]".
RUNS_DONE = """([panelSelector, cells]) => {
  const panel = document.querySelector(panelSelector);
  const indicator = panel && panel.querySelector('.jp-Notebook-ExecutionIndicator');
  if (!indicator || indicator.getAttribute('data-status') !== 'idle') { return false; }
  const all = [...panel.querySelectorAll('.jp-Notebook .jp-Cell')];
  return (cells === null ? all.map((_, i) => i) : cells).every((index) => {
    const cell = all[index];
    if (!cell) { return false; }
    if (!cell.classList.contains('jp-CodeCell')) { return true; }
    const source = cell.querySelector('.jp-InputArea-editor');
    if (!source || !source.textContent.trim()) { return true; }
    const prompt = cell.querySelector('.jp-InputPrompt').textContent;
    return window.__nbaRan.has(index) && !prompt.includes('[*]');
  });
}"""

WATCH_STATUS = """(panelSelector) => {
  const panel = document.querySelector(panelSelector);
  const read = () => {
    const el = panel.querySelector('.jp-Notebook-ExecutionIndicator');
    return el ? el.getAttribute('data-status') : null;
  };
  window.__nbaStatuses = [read()];
  if (window.__nbaStatusObserver) { window.__nbaStatusObserver.disconnect(); }
  window.__nbaStatusObserver = new MutationObserver(() => {
    const now = read();
    if (now !== window.__nbaStatuses[window.__nbaStatuses.length - 1]) { window.__nbaStatuses.push(now); }
  });
  window.__nbaStatusObserver.observe(panel, {subtree: true, childList: true, attributes: true,
                                             attributeFilter: ['data-status']});
}"""

# True once the kernel has left "idle" (it restarted) and is idle again.
RESTARTED = """(panelSelector) => {
  const seen = window.__nbaStatuses || [];
  const el = document.querySelector(panelSelector + ' .jp-Notebook-ExecutionIndicator');
  return seen.some((s) => s !== 'idle') && el !== null && el.getAttribute('data-status') === 'idle';
}"""


# True when the notebook has a kernel (the toolbar names it) and that kernel is idle.
# The execution indicator alone says "idle" before any kernel exists.
KERNEL_READY = """(panelSelector) => {
  const panel = document.querySelector(panelSelector);
  if (!panel) { return false; }
  const indicator = panel.querySelector('.jp-Notebook-ExecutionIndicator');
  const name = panel.querySelector('.jp-Toolbar-kernelName');
  const kernel = name ? name.textContent.trim() : '';
  return indicator !== null && indicator.getAttribute('data-status') === 'idle'
    && kernel !== '' && kernel !== 'No Kernel';
}"""
