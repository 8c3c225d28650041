// The page's chrome: the colour theme (auto, dark, light), presentation mode (key P, the
// projector layout), full screen (key F), Copy link (with a warning when the state names local
// files), and the notice and error lines.
import { localFiles, type Store, type Theme } from './state';
import type { ImageView } from './view';

const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;
/** How long "Link copied" stays. */
export const LINK_NOTICE_MS = 4000;

export interface PageChrome {
  applyTheme(t: Theme): void;
  setPresent(on: boolean): void;
  /** One closable line ('' hides it; a line the user closed stays closed). */
  showNotice(text: string, kind?: 'info' | 'warn'): void;
  /** The error line under the image ('' hides it); with the key of the form's field it is about,
   * a click on it (or Enter) goes to that field. */
  showError(msg: string, key?: string): void;
  /** Hide the notice if it is a render-time announcement ("… will take …"). */
  clearEstimateNotice(): void;
  /** What a render says of the image shown, as the notice: the crate's warnings on its settings
   * (a value read as another, as upstream does), one a line, and the render's own note (a CPU
   * fallback). A line the user closed stays closed. It replaces an announcement or an earlier
   * render's notice; another notice (a drop's, "Link copied") only when it says something new.
   * With nothing to say, it hides a render's notice. */
  showRenderNotice(warnings: readonly string[], note?: string): void;
}

export function installPageChrome(o: {
  store: Store; view: ImageView; rest: Record<string, string>; embed: boolean;
  /** The URL of the state now (written first). */
  copyUrl: () => string;
}): PageChrome {
  const THEMES: Theme[] = ['auto', 'dark', 'light'];
  function applyTheme(t: Theme) {
    const was = document.documentElement.dataset.theme ?? 'auto';
    if (t === 'auto') delete document.documentElement.dataset.theme;
    else document.documentElement.dataset.theme = t;
    const label = `Colour theme: ${t}${t === 'auto' ? ' (follows the system)' : ''}`;
    $('theme').title = label;
    $('theme').setAttribute('aria-label', label);
    $('theme').dataset.theme = t;
    if (was !== t) o.view.draw(); // the image's surround follows the theme
  }
  matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => o.view.draw());
  $('theme').addEventListener('click', () => {
    const t = THEMES[(THEMES.indexOf(o.store.view.value.theme) + 1) % THEMES.length];
    o.store.setView({ theme: t });
  });

  function setPresent(on: boolean) {
    document.body.classList.toggle('present', on);
    $('present').setAttribute('aria-pressed', String(on));
    o.view.large = on;
    if (on) o.rest.present = '1';
    else delete o.rest.present;
    o.store.setView({}); // rewrite the URL
    o.view.draw();
  }
  $('present').addEventListener('click', () => setPresent(!document.body.classList.contains('present')));
  $('present-exit').addEventListener('click', () => setPresent(false));
  function toggleFullscreen() {
    if (document.fullscreenElement) void document.exitFullscreen();
    else void document.documentElement.requestFullscreen?.().catch(() => {});
  }
  $('fullscreen').addEventListener('click', toggleFullscreen);
  window.addEventListener('keydown', (e) => {
    const t = e.target as HTMLElement;
    if (t.closest('input, select, textarea') || e.ctrlKey || e.metaKey || e.altKey || e.defaultPrevented) return;
    if (e.key === 'p' || e.key === 'P') setPresent(!document.body.classList.contains('present'));
    else if (e.key === 'f' || e.key === 'F') toggleFullscreen();
    else if (e.key === 'Escape' && document.body.classList.contains('present') && !document.fullscreenElement) setPresent(false);
  });

  // "Skip to image", the first stop of the Tab key: the focus goes to the image (arrow keys pan
  // it, + and - zoom), past the parameters
  $('skip-to-image').addEventListener('click', (e) => {
    const image = document.querySelector<HTMLElement>('#canvas-host .nb-canvas');
    if (!image) return; // the link's own jump to the image's section
    e.preventDefault();
    image.focus();
  });

  let copiedTimer = 0;
  $('copylink').addEventListener('click', async () => {
    const url = o.copyUrl();
    const named = localFiles(o.store.model.value);
    let copied = true;
    try {
      await navigator.clipboard.writeText(url);
    } catch {
      copied = false;
    }
    const warn = named.length
      ? ` — note: it names local file${named.length > 1 ? 's' : ''} (${named.join(', ')}) that the link does not carry; whoever opens it must drop ${named.length > 1 ? 'them' : 'it'} in.`
      : '';
    const text = copied ? `Link copied${warn}` : `Copy this link: ${url}${warn}`;
    showNotice(text, named.length ? 'warn' : 'info');
    // a plain "Link copied" is news for a moment, not a state: it goes after a few seconds (from
    // the last copy: an earlier copy's timer would take a later one's line away early)
    clearTimeout(copiedTimer);
    if (copied && !named.length) copiedTimer = window.setTimeout(() => { if (noticeText.textContent === text) showNotice(''); }, LINK_NOTICE_MS);
  });

  // ---- notices and errors ------------------------------------------------------------------------------
  const errorBox = $('error');
  const noticeBox = $('notice');
  const noticeText = $('notice-text');
  const closedNotices = new Set<string>();
  /** The notice shows what a render said (showRenderNotice), and the text it last said. */
  let fromRender = false;
  let renderSaid = '';
  function show(text: string, kind: 'info' | 'warn') {
    const on = !!text && !closedNotices.has(text) && !o.embed;
    noticeBox.hidden = !on;
    noticeBox.dataset.kind = kind;
    noticeText.textContent = text;
  }
  function showNotice(text: string, kind: 'info' | 'warn' = 'info') {
    fromRender = false;
    show(text, kind);
  }
  $('notice-close').addEventListener('click', () => {
    // each line goes: a render that says one of them again does not show it again
    const text = noticeText.textContent ?? '';
    closedNotices.add(text);
    for (const line of text.split('\n')) if (line) closedNotices.add(line);
    noticeBox.hidden = true;
  });
  const isEstimate = () => noticeBox.dataset.kind === 'warn' && /will take/.test(noticeText.textContent ?? '');
  function showRenderNotice(warnings: readonly string[], note = '') {
    const lines = [...warnings.map((w) => w.replace(/^WARNING:\s*/, '')), note].filter((l) => l && !closedNotices.has(l));
    const text = lines.join('\n');
    const said = renderSaid;
    renderSaid = text;
    const ours = fromRender || noticeBox.hidden || isEstimate();
    if (!ours && text === said) return; // another notice stays over a render's that says nothing new
    if (!text && !ours) return;
    show(text, lines.some((l) => l !== note) ? 'warn' : 'info');
    fromRender = !!text;
  }
  function showError(msg: string, key?: string) {
    const was = errorBox.textContent;
    errorBox.hidden = !msg;
    errorBox.textContent = msg;
    if (msg && key) {
      errorBox.dataset.key = key;
      errorBox.tabIndex = 0;
      errorBox.title = 'Go to the field';
    } else {
      delete errorBox.dataset.key;
      errorBox.removeAttribute('tabindex');
      errorBox.removeAttribute('title');
    }
    // whoever looks at the image sees its error: on a phone the page scrolls (the error is
    // under the image), and a new error below the screen's edge is scrolled to
    if (msg && msg !== was) requestAnimationFrame(() => {
      const r = errorBox.getBoundingClientRect();
      const stage = $('stage').getBoundingClientRect();
      const looking = stage.bottom > 0 && stage.top < innerHeight;
      if (looking && !errorBox.hidden && (r.bottom > innerHeight || r.top < 0)) errorBox.scrollIntoView({ block: 'nearest' });
    });
  }

  // the field an error is about: its group opened, scrolled to and focused
  function goToField() {
    const row = document.querySelector<HTMLElement>(`.field[data-key="${errorBox.dataset.key ?? ''}"]`);
    if (!row) return;
    const group = row.closest('details');
    if (group) group.open = true;
    row.scrollIntoView({ block: 'center' });
    row.querySelector<HTMLElement>('input:not([type=file]):not([hidden]), select, button')?.focus({ preventScroll: true });
  }
  errorBox.addEventListener('click', goToField);
  errorBox.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); goToField(); }
  });

  function clearEstimateNotice() {
    if (isEstimate()) showNotice('');
  }

  return { applyTheme, setPresent, showNotice, showError, clearEstimateNotice, showRenderNotice };
}
