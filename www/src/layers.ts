// The layers on top of the one simulation (pure): an atomic model for the structure factors,
// the amorphous background (water, air) and the detector's effects. When any of them is on, the
// page renders the state through the crate's realistic chain (crate/src/realistic.rs, worker side
// in realistic-worker.ts) instead of a plain render; everything else (the form's crystal, beam
// and detector, the URL, downloads, 3D view, readout) is the same one state (state.ts).
import { isOn } from './args';
import type { ModelState } from './params';
import type { DetectorEffects, RealisticLayers } from './protocol';

/** The bundled model: PDB entry 1PFE (public domain / CC0, wwPDB), served from samples/. A URL
 * that names it needs no dropped file. */
export const BUNDLED_MODEL = { name: '1pfe.cif', url: 'samples/1pfe.cif', label: '1PFE echinomycin–DNA', title: '1PFE echinomycin–DNA: bundled with the page, from the PDB (CC0)' };

const num = (s: string | undefined) => (s !== undefined && s.trim() !== '' ? Number(s) : NaN);

/** Whether the state asks for the realistic chain (a model or a layer). A detector effect at
 * its identity (read-out noise 0, PSF 0, gain 1) asks for nothing; a value that is not a number
 * does (the chain then names it). */
export function isLayered(m: ModelState): boolean {
  const effect = (k: string, identity: number) => !!(m[k] ?? '').trim() && !(num(m[k]) === identity);
  return !!(m.pdb ?? '').trim() || num(m.air) > 0 || isOn(m.detnoise) || effect('readout', 0) || effect('psf', 0) || effect('gain', 1);
}

/** The words of the spots: the state's words without `-pdb` (the chain reads the model itself)
 * and without `-water` (the water is the background layer, as in the CLI chain); with a model,
 * without the form's cell and structure factors too (the model gives both). */
export function spotsWords(args: string[]): string[] {
  const model = args.includes('-pdb');
  const skip: Record<string, number> = { '-pdb': 1, '-water': 1, ...(model ? { '-cell': 6, '-hkl': 1, '-default_F': 1 } : {}) };
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    if (skip[args[i]] !== undefined) i += skip[args[i]];
    else out.push(args[i]);
  }
  return out;
}

/** The words of the crystal shown for a render: the spots' words with the model's cell (as the
 * crate's `SfCache::crystal_words` gives it) in place of the model, unit structure factors. */
export function crystalWords(args: string[], cell: number[] | null): string[] {
  const w = spotsWords(args);
  return cell && args.includes('-pdb') ? [...w, '-cell', ...cell.map(String), '-default_F', '1'] : w;
}

/** The words the 3D view and the labels predict from: the crystal's words and the model's name
 * (`-pdb`), which the worker replaces by the model the chain read, with its structure factors
 * (`prepare_with_model`: the labels go on the spots the model makes strong). */
export function predictWords(args: string[], cell: number[] | null): string[] {
  const w = crystalWords(args, cell);
  const at = args.indexOf('-pdb');
  return cell && at >= 0 && at + 1 < args.length ? [...w, '-pdb', args[at + 1]] : w;
}

/** nonBragg words per material (water, air) with the state's beam, separated by '--'. */
export function materialWords(m: ModelState): string[] {
  const beam: string[] = [];
  for (const k of ['flux', 'exposure', 'beamsize', 'fluence']) if ((m[k] ?? '').trim()) beam.push(`-${k}`, m[k].trim());
  const out: string[] = [];
  const water = num(m.water);
  const air = num(m.air);
  if (water > 0) out.push('-stol', 'water.stol', '-thickness', String(water / 1000), ...beam);
  if (air > 0) out.push('--', '-stol', 'air.stol', '-thickness', String(air), '-MW', '29', '-density', '0.0012', ...beam);
  return out;
}

export function effectsOf(m: ModelState): DetectorEffects {
  const or = (k: string, d: number) => (Number.isFinite(num(m[k])) ? num(m[k]) : d);
  return { readout: or('readout', 0), psfUm: or('psf', 0), gain: or('gain', 1), adc: 0, calibration: 0.03, flicker: 0, seed: Math.round(or('seed', 1)) };
}

export function layersOf(m: ModelState): RealisticLayers {
  const show = (m.show ?? '').trim();
  return { spots: show !== 'background', background: show !== 'spots', noise: isOn(m.detnoise) };
}

/** The keys whose change only needs the kept layers composed again (no new render). */
export const COMPOSE_KEYS = new Set(['readout', 'psf', 'gain', 'seed', 'show', 'detnoise']);
