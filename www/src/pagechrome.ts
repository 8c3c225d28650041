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
    // a plain "Link copied" is news for a moment, not a state: it goes after a few seconds
    if (copied && !named.length) setTimeout(() => { if (noticeText.textContent === text) showNotice(''); }, LINK_NOTICE_MS);
  });

  // ---- notices and errors ------------------------------------------------------------------------------
  const errorBox = $('error');
  const noticeBox = $('notice');
  const noticeText = $('notice-text');
  const closedNotices = new Set<string>();
  function showNotice(text: string, kind: 'info' | 'warn' = 'info') {
    const show = !!text && !closedNotices.has(text) && !o.embed;
    noticeBox.hidden = !show;
    noticeBox.dataset.kind = kind;
    noticeText.textContent = text;
  }
  $('notice-close').addEventListener('click', () => {
    closedNotices.add(noticeText.textContent ?? '');
    noticeBox.hidden = true;
  });
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
    if (noticeBox.dataset.kind === 'warn' && /will take/.test(noticeText.textContent ?? '')) showNotice('');
  }

  return { applyTheme, setPresent, showNotice, showError, clearEstimateNotice };
}
