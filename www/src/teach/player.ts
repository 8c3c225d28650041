// The φ player: play/pause, step back/forward, speed (°/s), loop range, stills or rotation
// photographs, video (WebM) and PNG export. While playing, φ follows the clock and each change
// is a live (preview) change of the store: the page's frame pacing keeps one render in flight and
// shows every finished frame, so frames keep coming however slow a render is (nothing queues).
// Pausing renders the full image. A recorded sweep renders every step at full resolution.
import type { Store } from '../state';
import type { ImageView } from '../view';
import { advance, formatPhi, frameModel, parseRange, stepPhi, sweepFrames, type SweepMode } from './phi';
import { recordCanvas, type CanvasRecorder } from './record';

export interface PlayerOptions {
  store: Store;
  view: ImageView;
  /** Save a blob under a name (the page's download). */
  save: (blob: Blob, name: string) => void;
  /** The page's PNG export (full image, settings in the name). */
  png: () => void;
  /** A file name stem from the settings (files.ts `downloadName`). */
  /** A download's name from the settings; `phi` (the range recorded) in place of the form's φ. */
  name: (ext: 'webm', phi?: string) => string;
  notice: (text: string, kind?: 'info' | 'warn') => void;
}

export interface Player {
  play(): void;
  pause(): void;
  readonly playing: boolean;
  record(): Promise<Blob | null>;
  /** The last recorded video (tests). */
  lastVideo: Blob | null;
}

const html = `
  <button type="button" id="phi-play" class="play" aria-pressed="false" title="Play: rotate the crystal about the spindle (key Space)">▶ Play φ</button>
  <button type="button" id="phi-back" title="Step back" aria-label="Step φ back">◀|</button>
  <button type="button" id="phi-fwd" title="Step forward" aria-label="Step φ forward">|▶</button>
  <output id="phi-now" class="phi-now" aria-label="φ now">φ 0°</output>
  <label class="inline" title="Degrees per second">speed <input id="phi-speed" type="number" step="1" value="10" size="4"> °/s</label>
  <span class="inline phi-loop" title="φ loop range (degrees)"><label for="phi-from">loop<span class="sr-only"> from (°)</span></label> <input id="phi-from" type="number" step="1" value="0" size="4"><label for="phi-to"><span aria-hidden="true">–</span><span class="sr-only">loop to (°)</span></label><input id="phi-to" type="number" step="1" value="90" size="4">°</span>
  <label class="inline" title="Step size for the step buttons and for recorded videos">step <input id="phi-step" type="number" step="0.1" min="0.01" value="1" size="3">°</label>
  <label class="inline"><span class="sr-only">Frames</span><select id="phi-mode" aria-label="Each frame is" title="Each frame is a still (the crystal at one φ) or a rotation photograph (it turns osc degrees during the exposure)">
    <option value="stills">stills</option>
    <option value="rotation">rotation photos</option>
  </select></label>
  <span class="inline" id="phi-osc-box" title="Each frame integrates this oscillation range (-osc) in this many steps (-phisteps)"><label for="phi-osc">osc<span class="sr-only"> range per frame (°)</span></label> <input id="phi-osc" type="number" step="0.1" min="0.01" value="1" size="3">° <label for="phi-steps">in<span class="sr-only"> this many φ steps per frame</span></label> <input id="phi-steps" type="number" step="1" min="1" value="5" size="2"> steps</span>
  <span id="phi-msg" class="phi-msg" role="status"></span>`;
const exportHtml = `
  <button type="button" id="phi-record" title="Record one sweep of the φ loop range, each step at full resolution, as a WebM video">● Record video</button>
  <button type="button" id="phi-png" title="Save the current frame as PNG (the settings are in the file name)">Frame PNG</button>`;

export function createPlayer(host: HTMLElement, o: PlayerOptions, exportHost: HTMLElement = host): Player {
  host.innerHTML = html;
  exportHost.insertAdjacentHTML('beforeend', exportHtml);
  const $ = <T extends HTMLElement>(id: string) => (host.querySelector<T>(`#${id}`) ?? exportHost.querySelector<T>(`#${id}`))!;
  const playBtn = $<HTMLButtonElement>('phi-play');
  const speedIn = $<HTMLInputElement>('phi-speed');
  const fromIn = $<HTMLInputElement>('phi-from');
  const toIn = $<HTMLInputElement>('phi-to');
  const stepIn = $<HTMLInputElement>('phi-step');
  const modeSel = $<HTMLSelectElement>('phi-mode');
  const oscIn = $<HTMLInputElement>('phi-osc');
  const stepsIn = $<HTMLInputElement>('phi-steps');
  const recBtn = $<HTMLButtonElement>('phi-record');
  const msg = $('phi-msg');
  const now = $('phi-now');
  const { store } = o;

  let playing = false;
  let recording = false;
  /** Set by a click on the Record button while recording: finish with the frames so far. */
  let stopRecording = false;
  let raf = 0;
  let lastT = 0;
  let phi = 0;

  const currentPhi = () => {
    const v = Number((store.model.peek().phi ?? '').trim() || 0);
    return Number.isFinite(v) ? v : 0;
  };
  const mode = () => modeSel.value as SweepMode;
  const num = (el: HTMLInputElement, what: string, positive = false): number | null => {
    const v = Number(el.value);
    const ok = el.value.trim() !== '' && Number.isFinite(v) && (!positive || v > 0);
    el.setCustomValidity(ok ? '' : `${what}: "${el.value}" is not a ${positive ? 'positive ' : ''}number`);
    el.classList.toggle('bad', !ok);
    if (!ok) say(`${what}: "${el.value}" is not a ${positive ? 'positive ' : ''}number`);
    return ok ? v : null;
  };
  function say(text: string) {
    msg.textContent = text;
  }
  const range = () => {
    const r = parseRange(fromIn.value, toIn.value);
    if ('error' in r) { say(r.error); return null; }
    return r;
  };
  // Mode inputs from the model (a preset or a link may carry an oscillation).
  function syncFromModel() {
    const m = store.model.peek();
    const osc = Number(m.osc ?? '');
    if (m.osc && osc > 0) {
      modeSel.value = 'rotation';
      oscIn.value = m.osc;
      if (m.phisteps) stepsIn.value = m.phisteps;
    } else if (!recording && !playing) modeSel.value = 'stills';
    $('phi-osc-box').hidden = mode() !== 'rotation';
  }

  /** Apply the frame fields at φ (mode, osc, steps); `live` = a preview. */
  function applyFrame(p: number, live: boolean) {
    phi = p;
    // while playing, one decimal (three flickered on a projector); the exact value when stopped
    now.textContent = `φ ${live ? p.toFixed(1) : formatPhi(p)}°`;
    const m = store.model.peek();
    const osc = Number(oscIn.value) || 1, steps = Number(stepsIn.value) || 1;
    const next = frameModel(m, p, mode(), osc, steps);
    const onlyPhi = ['osc', 'phisteps', 'phistep'].every((k) => (m[k] ?? '') === (next[k] ?? ''));
    if (onlyPhi) store.setField('phi', next.phi, live ? 'preview' : 'full');
    else store.setModel(next);
  }

  function tick(t: number) {
    raf = 0;
    if (!playing) return;
    const dt = Math.min(0.25, (t - lastT) / 1000);
    lastT = t;
    const r = range();
    const speed = num(speedIn, 'speed');
    if (!r || speed === null) return pause();
    const a = advance(phi, dt, { ...r, speed, loop: true });
    applyFrame(a.phi, true);
    raf = requestAnimationFrame(tick);
  }

  function play() {
    if (playing || recording) return;
    const r = range();
    if (!r || num(speedIn, 'speed') === null) return;
    say('');
    playing = true;
    phi = currentPhi();
    if (phi < r.from || phi > r.to) phi = r.from;
    applyFrame(phi, true);
    playBtn.textContent = '❚❚ Pause';
    playBtn.setAttribute('aria-pressed', 'true');
    lastT = performance.now();
    raf = requestAnimationFrame(tick);
  }
  function pause() {
    if (!playing) return;
    playing = false;
    cancelAnimationFrame(raf);
    raf = 0;
    playBtn.textContent = '▶ Play φ';
    playBtn.setAttribute('aria-pressed', 'false');
    applyFrame(phi, false); // the full image of where it stopped
  }
  function step(sign: number) {
    const s = num(stepIn, 'step', true);
    const r = range();
    if (s === null || !r) return;
    if (playing) pause();
    say('');
    applyFrame(stepPhi(currentPhi(), sign * s, r), false);
  }

  /** Wait for the next full (not preview) image the page shows. */
  const nextFullFrame = (timeoutMs = 120_000) => new Promise<void>((done, fail) => {
    const timer = setTimeout(() => { window.removeEventListener('nanobragg-frame', on); fail(new Error('video export: a frame took too long')); }, timeoutMs);
    const on = (e: Event) => {
      if ((e as CustomEvent).detail?.preview) return;
      clearTimeout(timer);
      window.removeEventListener('nanobragg-frame', on);
      done();
    };
    window.addEventListener('nanobragg-frame', on);
  });

  const player: Player = {
    play, pause,
    get playing() { return playing; },
    lastVideo: null,
    async record() {
      if (recording) return null;
      pause();
      const r = range();
      const s = num(stepIn, 'step', true);
      const speed = num(speedIn, 'speed');
      if (!r || s === null || speed === null) return null;
      const frames = sweepFrames(r.from, r.to, s);
      // hold each frame for step/speed seconds (the video's pace), at least one render
      const holdMs = speed ? (1000 * s) / Math.abs(speed) : 100;
      recording = true;
      stopRecording = false;
      playBtn.disabled = true;
      recBtn.textContent = '■ Stop recording';
      let rec: CanvasRecorder;
      try {
        rec = recordCanvas(o.view.canvas);
      } catch (e) {
        say((e as Error).message);
        recording = false;
        playBtn.disabled = false;
        recBtn.textContent = '● Record video';
        return null;
      }
      try {
        let n = 0;
        for (let i = 0; i < frames.length && !stopRecording; i++, n++) {
          say(`recording frame ${i + 1} of ${frames.length}…`);
          const t0 = performance.now();
          const shown = nextFullFrame();
          applyFrame(frames[i], false);
          await shown;
          rec.frame();
          const left = holdMs - (performance.now() - t0);
          if (left > 0) await new Promise((ok) => setTimeout(ok, left));
          rec.frame();
        }
        const blob = await rec.stop();
        player.lastVideo = blob;
        // named after the φ range recorded, not the last frame's φ
        o.save(blob, o.name('webm', n ? `${formatPhi(frames[0])}-${formatPhi(frames[n - 1])}` : undefined));
        say(`video: ${n} frames, ${(blob.size / 1024).toFixed(0)} KiB (${rec.mimeType})`);
        return blob;
      } catch (e) {
        say((e as Error).message);
        await rec.stop().catch(() => null);
        return null;
      } finally {
        recording = false;
        playBtn.disabled = false;
        recBtn.textContent = '● Record video';
      }
    },
  };

  playBtn.addEventListener('click', () => (playing ? pause() : play()));
  $('phi-back').addEventListener('click', () => step(-1));
  $('phi-fwd').addEventListener('click', () => step(1));
  recBtn.addEventListener('click', () => {
    if (recording) stopRecording = true;
    else void player.record();
  });
  $('phi-png').addEventListener('click', () => { pause(); o.png(); });
  modeSel.addEventListener('change', () => {
    $('phi-osc-box').hidden = mode() !== 'rotation';
    applyFrame(currentPhi(), playing);
  });
  for (const el of [oscIn, stepsIn]) el.addEventListener('change', () => {
    if (num(el, el === oscIn ? 'osc' : 'steps', true) !== null) applyFrame(currentPhi(), playing);
  });
  window.addEventListener('keydown', (e) => {
    const t = e.target as HTMLElement;
    if (e.key !== ' ' || t.closest('input, select, textarea, button') || e.ctrlKey || e.metaKey || e.altKey) return;
    e.preventDefault();
    if (playing) pause();
    else play();
  });
  // φ shown follows the model; the mode follows a preset or a link
  let lastModel = store.model.peek();
  const follow = () => {
    const m = store.model.peek();
    if (!playing) now.textContent = `φ ${formatPhi(currentPhi())}°`;
    if (m.osc !== lastModel.osc || m.phisteps !== lastModel.phisteps) syncFromModel();
    lastModel = m;
  };
  store.model.subscribe(follow);
  syncFromModel();
  return player;
}
