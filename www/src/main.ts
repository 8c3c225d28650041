// The app page: the store (state.ts: the settings, the image shown, the tasks Cancel stops), the
// worker client (client.ts, over the one typed channel of channel.ts), the image view, the
// page's frame (page.ts: URL, theme, presentation, notices, status line, `window.nanobragg`) and
// the list of panels, each mounted with the same context (panel.ts) and talking to the others
// only through the store. Overlays on the image (predicted spots, a measured image) go through
// `view.overlays`; the 3D panel's spots hook in before the readout.
import { NanoBraggClient } from './client';
import { createStore, decodeUrl } from './state';
import { ImageView } from './view';
import { createPage } from './page';
import { mountPanels, type PanelContext } from './panel';
import { formPanel, viewPanel } from './panels/controls';
import { cancelPanel, renderPanel } from './panels/render';
import { threeDPanel } from './panels/threed';
import { derivativePanel, downloadsPanel, dropPanel, fitPanel, helpPanel, measuredPanel, readoutPanel, teachPanel } from './panels/image';

const initial = decodeUrl(new URL(location.href).searchParams);
const store = createStore(initial.model, initial.view);
// the worker beside app.js (client.ts sits in a chunk shared with the element: name it here)
const client = new NanoBraggClient({ workerUrl: new URL('./worker.js', import.meta.url) });
const view = new ImageView(document.getElementById('canvas-host')!);
const page = createPage(store, client, view, initial);
// embedded in another page (an iframe), the wheel scrolls that page unless the image has the focus
if (page.embed) view.wheel = 'focus';
const ctx: PanelContext = { store, client, view, page };

mountPanels(ctx, [
  formPanel, // the parameter form and the preset menu
  viewPanel, // colour map, scale, levels, backend, precision
  threeDPanel, // the 3D view and the predicted spots
  renderPanel, // the image: plain renders with frame pacing, the realistic chain, the status line
  cancelPanel, // Cancel: the store's tasks
  readoutPanel, // d, 2θ, hkl and the value under the pointer
  downloadsPanel, // SMV, noise, float, PNG
  teachPanel, // orientation sliders, rotation by drag, φ player, preset notes
  measuredPanel, // a measured image beside and over the simulation (its bar holds the next ones)
  fitPanel, // fit to image
  derivativePanel, // ∂I/∂p beside the image
  helpPanel, // the documentation link
  dropPanel, // files dropped anywhere
]);

if (page.urlErrors.length) page.showNotice(`Ignored URL parameter${page.urlErrors.length > 1 ? 's' : ''}: ${page.urlErrors.join('; ')}`, 'warn');
