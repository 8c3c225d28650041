// Types of the <nanobragg-view> element (the npm package nanobragg-view). The attribute names
// are written by the build from the element's own list (www/src/state.ts ELEMENT_ATTRIBUTES);
// the element (www/src/embed.ts) types its events and checks its `result` and `tangent` with
// these declarations, so `tsc -p www` fails where they no longer say what it does.

/** Every attribute the element reads (the app's URL parameter names, lower case). */
export type NanoBraggViewAttribute = /* __ATTRIBUTES__ */ string;

/** `render` event detail: one image (or derivative) shown. */
export interface NanoBraggRenderDetail {
  width: number;
  height: number;
  /** Where it was computed. */
  backend: 'gpu' | 'cpu';
  /** Why the requested backend was not used (empty when it was). */
  notice: string;
  preview: boolean;
  /** Render time in ms. */
  renderMs: number;
  /** With the `derivative` attribute: the parameter of ∂I/∂parameter. */
  derivative?: string;
  /** Stage timings in ms (image renders). */
  timings?: NanoBraggTimings;
}

/** Stage timings of an image render, in ms. */
export interface NanoBraggTimings {
  /** Parsing the words and resolving the set-up. */
  prepare: number;
  /** The kernel. */
  render: number;
  /** The whole round trip the page saw. */
  total: number;
}

/** `error` event detail. */
export interface NanoBraggErrorDetail {
  /** The crate's message, naming the attribute that caused it when one did. */
  message: string;
}

/** The last image the element rendered. */
export interface NanoBraggResult {
  width: number;
  height: number;
  /** Photons per pixel, row-major, `width * height` values. */
  data: Float32Array;
  backend: 'gpu' | 'cpu';
  /** CPU threads used. */
  threads: number;
  adapter: string;
  notice: string;
  /** The command-line words rendered. */
  args: string[];
  timings: NanoBraggTimings;
  warnings: string[];
}

/** The derivative shown with the `derivative` attribute. */
export interface NanoBraggTangent {
  param: string;
  unit: string;
  engine: 'gpu' | 'cpu';
  width: number;
  height: number;
  /** ∂I/∂param per pixel, row-major. */
  tangent: Float32Array;
}

export interface NanoBraggViewEventMap extends Omit<HTMLElementEventMap, 'error'> {
  render: CustomEvent<NanoBraggRenderDetail>;
  error: CustomEvent<NanoBraggErrorDetail>;
}

export declare class NanoBraggView extends HTMLElement {
  static readonly observedAttributes: NanoBraggViewAttribute[];
  /** The last image (null before the first, and while a derivative is shown). */
  result: NanoBraggResult | null;
  /** The derivative shown (with the `derivative` attribute), else null. */
  tangent: NanoBraggTangent | null;
  getAttribute(name: NanoBraggViewAttribute | (string & {})): string | null;
  setAttribute(name: NanoBraggViewAttribute | (string & {}), value: string): void;
  addEventListener<K extends keyof NanoBraggViewEventMap>(type: K, listener: (this: NanoBraggView, ev: NanoBraggViewEventMap[K]) => unknown, options?: boolean | AddEventListenerOptions): void;
  addEventListener(type: string, listener: EventListenerOrEventListenerObject, options?: boolean | AddEventListenerOptions): void;
  removeEventListener<K extends keyof NanoBraggViewEventMap>(type: K, listener: (this: NanoBraggView, ev: NanoBraggViewEventMap[K]) => unknown, options?: boolean | EventListenerOptions): void;
  removeEventListener(type: string, listener: EventListenerOrEventListenerObject, options?: boolean | EventListenerOptions): void;
}

declare global {
  interface HTMLElementTagNameMap {
    'nanobragg-view': NanoBraggView;
  }
  interface WindowEventMap {
    /** Every image any element shows (and the app's). */
    'nanobragg-frame': CustomEvent<NanoBraggRenderDetail & { element: NanoBraggView }>;
  }
}
