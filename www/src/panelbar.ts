// The bars under the image's toolbar (the measured image, "Fit to image", the derivative view)
// and the tags that name the views beside the image: one way to make each.

const TAG_STYLE = `
.mtag { position: absolute; top: 4px; left: 6px; z-index: 2; font: 600 12px system-ui, sans-serif; padding: 1px 6px; border-radius: 3px; background: rgba(0,0,0,.6); color: #fff; pointer-events: none; }
`;

const installed = new Set<string>();

/** Add a style sheet to the document once. */
export function addStyle(css: string) {
  if (installed.has(css)) return;
  installed.add(css);
  const style = document.createElement('style');
  style.textContent = css;
  document.head.appendChild(style);
}

/** A bar: a `div` of class `className` with its style sheet, an ARIA role and label, and its
 * contents (`html`); the caller places it. */
export function makeBar(className: string, label: string, css: string, html: string, role: 'group' | 'toolbar' = 'group'): HTMLElement {
  addStyle(css);
  const bar = document.createElement('div');
  bar.className = className;
  bar.setAttribute('role', role);
  bar.setAttribute('aria-label', label);
  bar.innerHTML = html;
  return bar;
}

/** A tag naming a view, at its top left corner (hidden until shown). */
export function viewTag(host: HTMLElement, text: string): HTMLElement {
  addStyle(TAG_STYLE);
  const t = document.createElement('span');
  t.className = 'mtag';
  t.textContent = text;
  t.hidden = true;
  host.appendChild(t);
  return t;
}

/** The button that opens a bar (`aria-expanded` says whether it is open; the bar's toggle sets it). */
export function openButton(className: string, text: string, title: string, onClick: () => void): HTMLButtonElement {
  const open = document.createElement('button');
  open.type = 'button';
  open.className = className;
  open.textContent = text;
  open.title = title;
  open.setAttribute('aria-expanded', 'false');
  open.addEventListener('click', onClick);
  return open;
}

/** Escape closes an open panel or menu while the focus is in it (or on nothing) and gives the
 * focus back to the button that opens it. Listens on the window in the capture phase, before
 * the page's own keys (Escape also leaves presentation mode), and marks the key as used.
 * Returns the listener's removal. */
export function escapeCloses(o: { open: () => boolean; close: () => void; parts: () => (Element | null | undefined)[]; button: () => HTMLElement | null | undefined }): () => void {
  const onKey = (e: KeyboardEvent) => {
    if (e.key !== 'Escape' || e.defaultPrevented || !o.open()) return;
    const a = document.activeElement;
    if (a && a !== document.body && !o.parts().some((p) => p?.contains(a))) return;
    e.preventDefault();
    o.close();
    o.button()?.focus();
  };
  window.addEventListener('keydown', onKey, true);
  return () => window.removeEventListener('keydown', onKey, true);
}
