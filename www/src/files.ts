// Input and output files (pure): which field a dropped file belongs to (by its content, not its
// name), and download names made from the settings.
import type { ModelState } from './params';

export type FileField = 'hkl' | 'mat' | 'sourcefile' | 'mask' | 'img' | 'pdb';

export interface Routed {
  key: FileField | null;
  /** Why (or why not), for the page's message. */
  reason: string;
}

const NUM = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

/** SMV header fields (`KEY=value;`) of an image file, or null when it is not one. */
function smvHeader(bytes: Uint8Array): Record<string, string> | null {
  const head = new TextDecoder('latin1').decode(bytes.subarray(0, Math.min(bytes.length, 8192)));
  if (!/^\{\s*\n?\s*HEADER_BYTES\s*=/.test(head)) return null;
  const end = head.indexOf('}');
  const kv: Record<string, string> = {};
  for (const m of head.slice(0, end < 0 ? undefined : end).matchAll(/([A-Za-z_0-9]+)\s*=\s*([^;\n]*);/g)) kv[m[1]] = m[2].trim();
  return kv;
}

/** Whether an SMV image's pixels are all 0 or 1 (a mask), sampled. */
function looksLikeMask(bytes: Uint8Array, kv: Record<string, string>): boolean {
  const hb = Number(kv.HEADER_BYTES ?? 512);
  const type = (kv.TYPE ?? 'unsigned_short').toLowerCase();
  const size = type.includes('long') || type.includes('int') || type.includes('float') ? 4 : type.includes('char') ? 1 : 2;
  const le = !/big/i.test(kv.BYTE_ORDER ?? 'little_endian');
  const n = Math.floor((bytes.length - hb) / size);
  if (!(n > 0)) return false;
  const dv = new DataView(bytes.buffer, bytes.byteOffset + hb, n * size);
  const stride = Math.max(1, Math.floor(n / 20000));
  for (let i = 0; i < n; i += stride) {
    const v = size === 1 ? dv.getUint8(i) : size === 2 ? dv.getUint16(i * 2, le) : type.includes('float') ? dv.getFloat32(i * 4, le) : dv.getUint32(i * 4, le);
    if (v !== 0 && v !== 1) return false;
  }
  return true;
}

/** The number rows of a text file (comments and blank lines skipped), up to `limit` lines. */
function rows(bytes: Uint8Array, limit = 200, lineNos: number[] = []): string[][] | null {
  // UTF-16 (its byte-order mark first: PowerShell's `>`) is read for routing only: the field's
  // reader (the crate) then says what to do with such a file
  const utf16 = bytes[0] === 0xff && bytes[1] === 0xfe ? 'utf-16le' : bytes[0] === 0xfe && bytes[1] === 0xff ? 'utf-16be' : null;
  const text = new TextDecoder(utf16 ?? 'utf-8', { fatal: false }).decode(bytes.subarray(0, Math.min(bytes.length, 64 * 1024)));
  if (/[\u0000-\u0008\u000e-\u001f]/.test(text)) return null; // binary
  const out: string[][] = [];
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const t = lines[i].trim();
    if (!t || t.startsWith('#')) continue;
    out.push(t.split(/\s+/));
    lineNos.push(i + 1);
    if (out.length >= limit) break;
  }
  return out;
}

/**
 * Which file field a dropped file belongs to, by content: an SMV image whose pixels are 0/1 is
 * a mask, any other SMV image gives its header (`-img`); nine numbers (three lines of three, as
 * MOSFLM writes, optionally followed by more lines) are an orientation matrix; rows of integer
 * `h k l` and a number are structure factors; rows of five or more numbers are a source list;
 * PDB records or an mmCIF data block are an atomic model.
 */
export function routeFile(bytes: Uint8Array): Routed {
  const kv = smvHeader(bytes);
  // an atomic model: PDB records or an mmCIF data block (the crate reads it by content too)
  const head = new TextDecoder('latin1').decode(bytes.subarray(0, Math.min(bytes.length, 4096)));
  if (!kv && /^(HEADER |CRYST1|ATOM  |HETATM|REMARK |TITLE |COMPND )/m.test(head)) return { key: 'pdb', reason: 'PDB records (an atomic model)' };
  if (!kv && /^data_\S*/m.test(head) && /^_(atom_site|cell)[.\s]/m.test(new TextDecoder('latin1').decode(bytes.subarray(0, Math.min(bytes.length, 1 << 20))))) return { key: 'pdb', reason: 'an mmCIF data block (an atomic model)' };
  if (kv) return looksLikeMask(bytes, kv) ? { key: 'mask', reason: 'an SMV image of zeros and ones' } : { key: 'img', reason: 'an SMV image' };
  const lineNos: number[] = [];
  const r = rows(bytes, 200, lineNos);
  if (!r || !r.length) return { key: null, reason: 'neither an SMV image nor a text file of numbers' };
  const numeric = (row: string[], n: number) => row.length >= n && row.slice(0, n).every((w) => NUM.test(w));
  const firstNine = r.slice(0, 3);
  if (firstNine.length === 3 && firstNine.every((row) => row.length === 3 && numeric(row, 3))) return { key: 'mat', reason: 'nine numbers (an orientation matrix)' };
  const integer = (w: string) => /^[+-]?\d+$/.test(w);
  const hklRow = (row: string[]) => numeric(row, 4) && row.slice(0, 3).every(integer);
  const sourceRow = (row: string[]) => numeric(row, Math.min(row.length, 5)) && row.length >= 5;
  if (r.every(hklRow)) return { key: 'hkl', reason: '"h k l F" rows (structure factors)' };
  if (r.every(sourceRow)) return { key: 'sourcefile', reason: 'rows of five numbers (a source list)' };
  // the first row says what the file was meant to be: name the first line that breaks the pattern
  const kind = hklRow(r[0]) ? { ok: hklRow, what: 'an "h k l F" row (three integers and a number)' }
    : sourceRow(r[0]) ? { ok: sourceRow, what: 'a source row (five numbers)' } : null;
  const bad = kind ? r.findIndex((row) => !kind.ok(row)) : -1;
  if (kind && bad > 0) {
    const text = r[bad].join(' ');
    return { key: null, reason: `line ${lineNos[bad]} ("${text.length > 40 ? `${text.slice(0, 40)}…` : text}") is not ${kind.what}, though the lines before it are` };
  }
  return { key: null, reason: 'not an SMV image, a matrix, "h k l F" rows or a source list' };
}

/** A download's file name made from the settings, e.g.
 * `nanobragg_cell100-100-100-90-90-90_lambda6.2_N5_dist100_512x512.img`. */
export function downloadName(model: ModelState, size: { width: number; height: number }, kind: 'int' | 'noise' | 'float' | 'cbf' | 'png'): string {
  const clean = (v: string) => v.trim().replace(/[\s,]+/g, '-').replace(/[^\w.+-]/g, '');
  const parts = ['nanobragg'];
  const hkl = model.hkl?.trim();
  if (hkl) parts.push(clean(hkl.replace(/\.[^.]*$/, '')));
  else if (model.cell) parts.push(`cell${clean(model.cell)}`);
  for (const [key, tag] of [['lambda', 'lambda'], ['energy', 'eV'], ['N', 'N'], ['mosaic', 'mosaic'], ['distance', 'dist'], ['phi', 'phi'], ['misset', 'misset']] as const) {
    const v = model[key]?.trim();
    if (v) parts.push(`${tag}${clean(v)}`);
  }
  parts.push(`${size.width}x${size.height}`);
  const ext = kind === 'float' ? 'bin' : kind === 'png' ? 'png' : kind === 'cbf' ? 'cbf' : 'img';
  const suffix = kind === 'noise' ? '_noise' : kind === 'float' ? '_float' : '';
  return `${parts.join('_').slice(0, 180)}${suffix}.${ext}`;
}
