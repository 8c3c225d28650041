// Argument building (pure): model state -> upstream command-line words (each word remembers the
// field it came from), the page's own control flags, reduced-resolution preview words, input
// validation, and which field an error belongs to (from the crate's structured error).
import { PARAMS, PARAM_BY_KEY, fieldFlags, type ModelState, type ParamDef } from './params';
import FLAG_TABLE from './flags.json';

export type Backend = 'auto' | 'gpu' | 'cpu';
export type Precision = 'f32' | 'f64';

// Rust's `char::is_whitespace` (Unicode White_Space), so that both splitters agree.
const WS = /[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]/;

/** Split a command line into words exactly as the crate's `api::split_args` does: whitespace
 * separates words; '…' and "…" group and may start inside a word (`a"b c"` is `ab c`); an
 * empty quoted string is a word. Spec shared with the Rust side: tests/unit/split-args.json. */
export function splitArgs(s: string): string[] {
  const out: string[] = [];
  let cur = '';
  let quote: string | null = null;
  let has = false;
  for (const ch of s) {
    if (quote !== null) {
      if (ch === quote) quote = null;
      else cur += ch;
    } else if (ch === "'" || ch === '"') {
      quote = ch;
      has = true;
    } else if (WS.test(ch)) {
      if (has || cur) out.push(cur);
      cur = '';
      has = false;
    } else cur += ch;
  }
  if (has || cur) out.push(cur);
  return out;
}

/** A row of the crate's flag table (`www/src/flags.json`, kept equal to `api::flag_table()` by
 * `crate/tests/flags_json.rs`): the front end reads flag facts from it instead of restating them. */
interface FlagRow { name: string; aliases: string[]; kind: string; pixel_units: boolean }
const FLAG_ROWS = FLAG_TABLE as FlagRow[];
const flagNames = (keep: (r: FlagRow) => boolean) => new Set(FLAG_ROWS.filter(keep).flatMap((r) => [r.name, ...r.aliases]));

/** Output flags that take a file name (the table's `output_file` kind); they make no sense in
 * the browser. */
export const OUTPUT_FLAGS = flagNames((r) => r.kind === 'output_file');

/** 'webgpu' (the name the API documents) and 'gpu' both select the GPU; anything else is auto. */
export function asBackend(v: string): Backend {
  return v === 'gpu' || v === 'webgpu' ? 'gpu' : v === 'cpu' ? 'cpu' : 'auto';
}

/** Split our own control flags (-backend, -precision, -threads) and the output-file flags off
 * the upstream ones. */
export function normaliseArgs(args: string | string[]): { args: string[]; backend?: Backend; precision?: Precision } {
  const words = typeof args === 'string' ? splitArgs(args) : [...args];
  const out: string[] = [];
  let backend: Backend | undefined;
  let precision: Precision | undefined;
  for (let i = 0; i < words.length; i++) {
    const w = words[i];
    if (w === '-backend' && i + 1 < words.length) backend = asBackend(words[++i]);
    else if (w === '-precision' && i + 1 < words.length) precision = words[++i] === 'f64' ? 'f64' : 'f32';
    else if (w === '-threads' && i + 1 < words.length) i++; // the pool size is fixed when the worker starts
    else if (OUTPUT_FLAGS.has(w) && i + 1 < words.length) i++;
    else out.push(w);
  }
  return { args: out, backend, precision };
}

const NUM = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;
export const isNum = (s: string) => NUM.test(s);

/** Per-field input errors (empty when the state is well-formed). `name` says how to call a
 * field in the message: its flag (the app) or its attribute (the element). */
export function validate(state: ModelState, name: (p: ParamDef) => string = (p) => p.flag): Record<string, string> {
  const errs: Record<string, string> = {};
  for (const p of PARAMS) {
    const v = (state[p.key] ?? '').trim();
    if (!v) continue;
    if (p.kind === 'num' && !isNum(v)) errs[p.key] = `${name(p)}: "${v}" is not a number`;
    if (p.kind === 'int' && !/^[+-]?\d+$/.test(v)) errs[p.key] = `${name(p)}: "${v}" is not a whole number`;
    if (p.kind === 'choice' && !p.choices!.some((c) => c.value === v)) {
      errs[p.key] = `${name(p)}: "${v}" is not one of ${p.choices!.map((c) => `"${c.value}"`).filter((c) => c !== '""').join(', ')}`;
    }
    if (p.kind === 'bool' && !/^(1|0|true|false|yes|no|on|off)$/i.test(v)) errs[p.key] = `${name(p)}: "${v}" is not on/off (1 or 0)`;
    if (p.kind === 'vec') {
      const words = v.split(/[\s,]+/).filter(Boolean);
      if (p.word && words.length === 1 && words[0] === p.word) continue;
      const [lo, hi] = p.n!;
      if (words.length < lo || words.length > hi || !words.every(isNum)) {
        errs[p.key] = `${name(p)}: needs ${lo === hi ? lo : `${lo} to ${hi}`} numbers${p.word ? ` or "${p.word}"` : ''}, found "${v}"`;
      }
    }
  }
  return errs;
}

export const isOn = (v: string | undefined) => !!v && !/^(0|false|no|off)$/i.test(v.trim());

/** Command-line words for a state, and for each word the field it came from. Bare switches come
 * first (upstream ignores -curved_det when it is the last word), and -misset_seed precedes
 * -misset (see golden/README.md). */
export function buildArgs(state: ModelState): { args: string[]; origin: string[] } {
  const sw: [string, string][] = [];
  const words: [string, string][] = [];
  for (const p of PARAMS) {
    const v = (state[p.key] ?? '').trim();
    if (!v || p.layer) continue;
    switch (p.kind) {
      case 'bool':
        if (isOn(v)) sw.push([p.flag, p.key]);
        break;
      case 'choice': {
        const f = p.choices!.find((c) => c.value === v)?.flags ?? [];
        // a choice is a switch (-xds) or a flag with its value (-detector eiger2-4m)
        if (f.length === 2 && !f[1].startsWith('-')) words.push([f[0], p.key], [f[1], p.key]);
        else for (const w of f) sw.push([w, p.key]);
        break;
      }
      case 'vec':
        for (const w of [p.flag, ...v.split(/[\s,]+/).filter(Boolean)]) words.push([w, p.key]);
        break;
      case 'text':
        for (const w of splitArgs(v)) words.push([w, p.key]);
        break;
      default:
        words.push([p.flag, p.key], [v, p.key]);
    }
  }
  const all = [...sw, ...words];
  return { args: all.map((w) => w[0]), origin: all.map((w) => w[1]) };
}

export const argsFromState = (state: ModelState) => buildArgs(state).args;

/** Flags whose values are in detector pixels or name pixel-indexed files (the table's
 * `pixel_units`): a preview with other pixels would misplace them. */
export const PIXEL_UNIT_FLAGS = flagNames((r) => r.pixel_units);

/** Words for a fast reduced-resolution preview of the same detector: 1/factor the pixels,
 * factor× the pixel size, one sub-pixel. Null when the flags use pixel units. */
export function previewArgs(args: string[], width: number, height: number, pixelMm: number, factor: number): string[] | null {
  if (factor <= 1) return null;
  if (args.some((a) => PIXEL_UNIT_FLAGS.has(a))) return null;
  return [
    ...args,
    '-detpixels_f', String(Math.max(1, Math.round(width / factor))),
    '-detpixels_s', String(Math.max(1, Math.round(height / factor))),
    '-pixel', String(pixelMm * factor),
    '-oversample', '1',
  ];
}

/**
 * The reduction factor of a preview while dragging (1: full resolution): the smallest f whose
 * render, `fullRenderMs`/f² (the kernel's time scales with the pixels), fits in the frame budget
 * `targetMs` less the round trip's fixed cost `fixedMs` (prepare, transfer: what does not
 * shrink with the pixels; at least a quarter of the budget is left to the render), at most
 * `max`. A render that takes 3 ms is shown at full resolution while dragging.
 */
export function previewFactor(fullRenderMs: number, fixedMs: number, targetMs: number, max = 8): number {
  const left = Math.max(targetMs - Math.max(fixedMs, 0), targetMs / 4);
  if (!(fullRenderMs > left)) return 1;
  return Math.max(1, Math.min(max, Math.ceil(Math.sqrt(fullRenderMs / left))));
}

/**
 * The field an error belongs to, from the crate's structured error (`flag`, `file`: no message
 * parsing). In order: the file field holding the file the error names; the field that produced
 * the flag, preferring the field the user just changed (`-N abc` typed in Extra flags is the
 * Extra flags field's) and else its last occurrence (a later flag overrides an earlier one); the
 * changed field when the words do not contain the flag (an automatic value such as the
 * oversampling derived from N) or the error names none; else a field that would own the flag.
 */
export function fieldOfError(err: { flag?: string | null; file?: string | null }, state: ModelState, built: { args: string[]; origin: string[] }, changed: string | null): string | null {
  if (err.file) for (const p of PARAMS) if (p.kind === 'file' && (state[p.key] ?? '').trim() === err.file) return p.key;
  const flag = err.flag ?? null;
  const owners = flag ? built.origin.filter((_, i) => built.args[i] === flag) : [];
  if (changed && owners.includes(changed)) return changed;
  if (owners.length) return owners[owners.length - 1];
  if (changed && PARAM_BY_KEY.has(changed)) return changed;
  return (flag && PARAMS.find((p) => fieldFlags(p).includes(flag))?.key) ?? null;
}

/** A warning of the crate on a render's settings, placed on the page. */
export interface PlacedWarning {
  /** The crate's words without the CLI's "WARNING: " (they name the flag and value). */
  text: string;
  /** The form's field it is about (null: none names it). */
  key: string | null;
  /** Said in the page's notice too (else at its field only). */
  notice: boolean;
}

/**
 * The crate's warnings on a render's settings (worded as the CLI prints them: "WARNING: -distance
 * -5: a negative distance is used as 5 mm (as upstream does)"), each at the field of the flag it
 * starts with (`fieldOfError`'s rules). Upstream's advice "oversampling of 1 is less than the
 * recommended 8" is said at the sub-pixel field only: the teaching presets choose one sub-pixel
 * on purpose (speed), and the notice would say so on each of them.
 */
export function placeWarnings(warnings: readonly string[], state: ModelState, built: { args: string[]; origin: string[] }): PlacedWarning[] {
  return warnings.map((w) => {
    const text = w.replace(/^WARNING:\s*/, '').trim();
    if (/^oversampling of \d+ is less than the recommended \d+/.test(text)) {
      return { text, key: fieldOfError({ flag: '-oversample' }, state, built, null), notice: false };
    }
    // upstream's note that it completed the detector's axes (a .geom, .expt or the two axes
    // given): the CLI's log line, nothing for the page's user to act on
    if (/^auto-generating odet_vector/.test(text)) return { text, key: null, notice: false };
    const flag = /^(-[A-Za-z][\w-]*)/.exec(text)?.[1] ?? null;
    return { text, key: flag ? fieldOfError({ flag }, state, built, null) : null, notice: true };
  });
}
